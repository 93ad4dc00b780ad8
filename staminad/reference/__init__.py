"""The oracle: a stdlib-only reference server and the reference agent that writes it into a workspace."""
