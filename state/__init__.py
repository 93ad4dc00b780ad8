"""The aiosqlite store: sweeps, configurations, scenarios, attempts and infra events, with migrations."""

from state.store import AttemptRow, ScenarioRow, Store

__all__ = ["AttemptRow", "ScenarioRow", "Store"]
