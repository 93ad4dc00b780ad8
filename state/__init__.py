"""The aiosqlite store: sweeps, configurations, scenarios, attempts and infra events, with migrations."""

from state.store import AttemptRow, Store, StoredScenario

__all__ = ["AttemptRow", "Store", "StoredScenario"]
