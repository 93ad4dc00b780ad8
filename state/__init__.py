"""The aiosqlite store: sweeps, configurations, scenarios, attempts and infra events, with migrations."""

from state.scenarios import StoredScenario
from state.store import AttemptRow, Store

__all__ = ["AttemptRow", "Store", "StoredScenario"]
