"""stamina-tui: the Textual monitor that attaches to staminad over its control socket (not built yet)."""
