"""The monitor's screens, one per module: overview, sweep, scenario, event log, and the modal dialogs."""
