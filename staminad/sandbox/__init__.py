"""Sandboxes: where one scenario's agent and server live (local process trees or Docker containers)."""
