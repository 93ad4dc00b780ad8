"""The `docker` runtime: sealed containers on one or more Docker engines, their image, and the host's side of
the in-container launcher (bind-mounted files or named volumes)."""
