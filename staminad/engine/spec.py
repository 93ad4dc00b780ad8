"""What one scenario run is given besides the runtime parts: its spec, the engine's settings, where events go."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from protocol.events import EventData
from staminad.engine.turns import HeldScenario
from staminad.suite.feedback import FeedbackLevel

EventSink = Callable[[EventData], None]


class EngineSettings(msgspec.Struct, frozen=True, kw_only=True):
    turn_timeout: float = 600.0
    server_start_timeout: float = 60.0
    request_timeout: float = 5.0
    infra_retries: int = 10
    outage_budget: float = 1800.0  # seconds of engine outages a scenario waits out (`staminad.sandbox.outage`)


class ScenarioSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What one scenario run needs besides the runtime parts."""

    config_id: int
    config_name: str
    retries: int
    feedback: FeedbackLevel
    scenario: HeldScenario  # s_0 and its change batches as bytes: a running job holds one turn as objects
    language: str
    readme: str


__all__ = ["EngineSettings", "EventSink", "ScenarioSpec"]
