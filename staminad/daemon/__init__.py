"""The long-running service: lock, control socket, event bus, resume on start, systemd notification."""
