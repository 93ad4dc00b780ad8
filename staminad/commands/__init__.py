"""Handlers of the `staminad` subcommands, one module per command group."""
