"""Harness adapters: how to call an agent inside a sandbox, turn after turn, in one session."""

from staminad.agents.base import Adapter, UnknownAgent, adapter_for, list_adapters

__all__ = ["Adapter", "UnknownAgent", "adapter_for", "list_adapters"]
