"""Wire messages between staminad and its clients, and their framing. Imports neither daemon nor TUI.

The names below are loaded on first use (PEP 562 `__getattr__`): `import protocol.errors` or `protocol.usage`
alone, as `staminad --version` does, does not build every message type (msgspec's structs) or import anyio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from protocol import events
    from protocol.framing import MAX_FRAME, FrameError, FrameReader, read_frame, write_frame
    from protocol.messages import (
        PROTOCOL_VERSION,
        AttemptTexts,
        Cancel,
        CodeChange,
        EngineInfo,
        ErrorReply,
        Event,
        GetAttempt,
        GetCodeChange,
        GetOps,
        GetScenario,
        GetSweep,
        Hello,
        HelloReply,
        ListScenarios,
        ListSweeps,
        Message,
        Ok,
        OpsReport,
        Pause,
        Ping,
        Reply,
        Request,
        RequestId,
        Resume,
        RetryScenario,
        SandboxInfo,
        ScenarioInfo,
        ScenarioList,
        ScenarioRow,
        Stop,
        Submit,
        Subscribe,
        SweepInfo,
        SweepList,
        decoder,
        encoder,
    )

# name -> the module that defines it
_HOME = {
    "events": "protocol.events",
    "MAX_FRAME": "protocol.framing",
    "FrameError": "protocol.framing",
    "FrameReader": "protocol.framing",
    "read_frame": "protocol.framing",
    "write_frame": "protocol.framing",
    "PROTOCOL_VERSION": "protocol.messages",
    "AttemptTexts": "protocol.messages",
    "Cancel": "protocol.messages",
    "CodeChange": "protocol.messages",
    "EngineInfo": "protocol.messages",
    "ErrorReply": "protocol.messages",
    "Event": "protocol.messages",
    "GetAttempt": "protocol.messages",
    "GetCodeChange": "protocol.messages",
    "GetOps": "protocol.messages",
    "GetScenario": "protocol.messages",
    "GetSweep": "protocol.messages",
    "Hello": "protocol.messages",
    "HelloReply": "protocol.messages",
    "ListScenarios": "protocol.messages",
    "ListSweeps": "protocol.messages",
    "Message": "protocol.messages",
    "Ok": "protocol.messages",
    "OpsReport": "protocol.messages",
    "Pause": "protocol.messages",
    "Ping": "protocol.messages",
    "Reply": "protocol.messages",
    "Request": "protocol.messages",
    "RequestId": "protocol.messages",
    "Resume": "protocol.messages",
    "RetryScenario": "protocol.messages",
    "SandboxInfo": "protocol.messages",
    "ScenarioInfo": "protocol.messages",
    "ScenarioList": "protocol.messages",
    "ScenarioRow": "protocol.messages",
    "Stop": "protocol.messages",
    "Submit": "protocol.messages",
    "Subscribe": "protocol.messages",
    "SweepInfo": "protocol.messages",
    "SweepList": "protocol.messages",
    "decoder": "protocol.messages",
    "encoder": "protocol.messages",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'protocol' has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if name == "events" else getattr(module, name)
    globals()[name] = value
    return value


__all__ = [
    "MAX_FRAME",
    "PROTOCOL_VERSION",
    "AttemptTexts",
    "Cancel",
    "CodeChange",
    "EngineInfo",
    "ErrorReply",
    "Event",
    "FrameError",
    "FrameReader",
    "GetAttempt",
    "GetCodeChange",
    "GetOps",
    "GetScenario",
    "GetSweep",
    "Hello",
    "HelloReply",
    "ListScenarios",
    "ListSweeps",
    "Message",
    "Ok",
    "OpsReport",
    "Pause",
    "Ping",
    "Reply",
    "Request",
    "RequestId",
    "Resume",
    "RetryScenario",
    "SandboxInfo",
    "ScenarioInfo",
    "ScenarioList",
    "ScenarioRow",
    "Stop",
    "Submit",
    "Subscribe",
    "SweepInfo",
    "SweepList",
    "decoder",
    "encoder",
    "events",
    "read_frame",
    "write_frame",
]
