"""Wire messages between staminad and its clients, and their framing. Imports neither daemon nor TUI."""

from protocol.framing import MAX_FRAME, FrameError, read_frame, write_frame
from protocol.messages import (
    PROTOCOL_VERSION,
    Cancel,
    ErrorReply,
    Event,
    GetSweep,
    Hello,
    HelloReply,
    ListSweeps,
    Message,
    Ok,
    Pause,
    Request,
    Resume,
    Stop,
    Submit,
    Subscribe,
    SweepInfo,
    SweepList,
    decoder,
    encoder,
)

__all__ = [
    "MAX_FRAME", "PROTOCOL_VERSION", "Cancel", "ErrorReply", "Event", "FrameError", "GetSweep", "Hello", "HelloReply",
    "ListSweeps", "Message", "Ok", "Pause", "Request", "Resume", "Stop", "Submit", "Subscribe", "SweepInfo",
    "SweepList", "decoder", "encoder", "read_frame", "write_frame",
]
