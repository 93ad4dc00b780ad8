"""The test function T: suites generated from a state, an async HTTP runner, and feedback texts."""
