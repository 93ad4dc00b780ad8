"""The scenario engine: Algorithm 1 per scenario, the sweep scheduler, ports, markers and outcomes."""
