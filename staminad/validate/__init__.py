"""`staminad validate`: the oracle gate (`mutantgate`: the reference passes every turn, every mutant is caught at
its first exercisable turn) and the input-class gate (`classgate`).

Runs in process: the reference agent's `step` reads the same texts a sandboxed agent reads and the
reference server's logic answers through `AppTransport`, so thousands of turns take minutes. Each
scenario runs in a worker process; results are printed as a table (or JSON).
"""

from staminad.validate.classgate import (
    ClassGate,
    ClassRow,
    ScenarioClasses,
    class_coverage,
    class_gate,
    render_class_gate,
    scenario_classes,
)
from staminad.validate.mutantgate import (
    ALL_AGENTS,
    UNTESTABLE,
    AgentOutcome,
    Gate,
    MutantRow,
    RuleRow,
    Verdict,
    render_gate,
    rule_gate,
    scenarios_for,
    validate,
    verdicts,
)

__all__ = [
    "ALL_AGENTS",
    "UNTESTABLE",
    "AgentOutcome",
    "ClassGate",
    "ClassRow",
    "Gate",
    "MutantRow",
    "RuleRow",
    "ScenarioClasses",
    "Verdict",
    "class_coverage",
    "class_gate",
    "render_class_gate",
    "render_gate",
    "rule_gate",
    "scenario_classes",
    "scenarios_for",
    "validate",
    "verdicts",
]
