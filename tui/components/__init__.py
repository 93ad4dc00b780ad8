"""Widgets shared by the monitor's screens, one per module."""
