"""What runs inside a sandbox, beside the agent (standard library only): copied into a container's layer and
run there by path, or run by the `local` runtime on the host (the harness wrapper)."""
