"""Completion markers, as the engine names them: the sandboxes own them now (`staminad.sandbox.markers`)."""

from staminad.sandbox.markers import Marker, MarkerWatcher, read_marker

__all__ = ["Marker", "MarkerWatcher", "read_marker"]
