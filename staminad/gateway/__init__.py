"""The LLM gateway: a metering proxy between sandboxes and model endpoints (see `proxy`)."""
