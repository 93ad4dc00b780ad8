"""The oracle gate: the reference agent must pass every turn; every mutant must be caught at its first turn.

Runs in process: the reference agent's `step` reads the same texts a sandboxed agent reads and the
reference server's logic answers through `AppTransport`, so thousands of turns take minutes. Each
scenario runs in a worker process; results are printed as a table (or JSON).
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import msgspec

from staminad.bench.pack import Pack
from staminad.bench.scenario import Scenario, ScenarioParams, generate
from staminad.bench.schema import State
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference.agent import step
from staminad.reference.mutant import Mutant
from staminad.reference.mutants import MUTANT_BY_BUG, MUTANTS
from staminad.reference.server import App
from staminad.suite.generate import generate_suite
from staminad.suite.history import History, turn_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite_blocking


class AgentOutcome(msgspec.Struct, frozen=True, kw_only=True):
    agent: str  # "reference" or a mutant's bug
    seed: int
    turns_passed: int
    caught_at: int | None = None  # first failing turn
    exercised_at: int | None = None  # first turn that could reveal the bug
    categories: tuple[str, ...] = ()  # failure categories at the failing turn
    rules: tuple[str, ...] = ()  # README rules cited by the failing tests
    first_failure: str = ""


def _validate_scenario(scenario: Scenario, language: str, agents: list[str]) -> list[AgentOutcome]:
    spec = render_spec(scenario.initial)
    memories: dict[str, dict[str, Any]] = {key: {} for key in agents}
    outcomes: dict[str, AgentOutcome] = {}
    exercised: dict[str, int] = {}
    history: History | None = None
    state = scenario.initial
    for turn in range(len(scenario.turns) + 1):
        before: State | None = None
        if turn == 0:
            prompt = initial_prompt(language)
            changes: tuple[Any, ...] = ()
        else:
            changes = scenario.turns[turn - 1]
            prompt, after = change_prompt(changes, state)
            history = turn_history(history, state, changes, after)
            before, state = state, after
        suite = generate_suite(state, scenario.seed, turn, history)
        for agent in agents:
            if agent in outcomes:
                continue
            mutant = MUTANT_BY_BUG.get(agent)
            if mutant is not None and agent not in exercised and _exercised(mutant, before, state, changes):
                exercised[agent] = turn
            memories[agent], config = step(memories[agent], prompt, spec, None if mutant is None else agent, False)
            result = run_suite_blocking(suite, AppTransport(App(config)))
            if not result.passed:
                fails = result.failures
                outcomes[agent] = AgentOutcome(
                    agent=agent,
                    seed=scenario.seed,
                    turns_passed=turn,
                    caught_at=turn,
                    exercised_at=exercised.get(agent),
                    categories=tuple(sorted({f.category for f in fails})),
                    rules=tuple(sorted({f.rule for f in fails})),
                    first_failure=f"{fails[0].name}: {fails[0].message}",
                )
        if all(a in outcomes for a in agents):
            break
    n = len(scenario.turns) + 1
    for agent in agents:
        outcomes.setdefault(
            agent, AgentOutcome(agent=agent, seed=scenario.seed, turns_passed=n, exercised_at=exercised.get(agent))
        )
    return [outcomes[a] for a in agents]


def _exercised(mutant: Mutant, before: State | None, after: State, changes: Any) -> bool:
    if mutant.exercised(after, changes):
        return True
    return mutant.removal is not None and before is not None and mutant.removal(before, after, changes)


def _worker(args: tuple[bytes, str, list[str]]) -> list[AgentOutcome]:
    data, language, agents = args
    scenario = msgspec.json.decode(data, type=Scenario)
    return _validate_scenario(scenario, language, agents)


def validate(scenarios: Iterable[Scenario], language: str, agents: list[str], jobs: int) -> list[AgentOutcome]:
    work = [(msgspec.json.encode(s), language, agents) for s in scenarios]
    if jobs <= 1:
        return [o for w in work for o in _worker(w)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return [o for batch in pool.map(_worker, work) for o in batch]


def scenarios_for(seeds: list[int], params: ScenarioParams, pack: Pack | None) -> list[Scenario]:
    if pack is not None:
        return [pack.scenario(s) for s in seeds]
    return [generate(s, params) for s in seeds]


ALL_AGENTS = ["reference", *(m.bug for m in MUTANTS)]


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    ok: bool
    summary: str
    scenarios: int
    caught: int
    exercised: int
    category_ok: int
    first_caught_turn: int | None


def verdicts(outcomes: list[AgentOutcome], turns: int) -> list[Verdict]:
    """One line per agent: the reference must pass everything; each exercised mutant must be caught."""
    out = []
    for agent in dict.fromkeys(o.agent for o in outcomes):
        mine = [o for o in outcomes if o.agent == agent]
        if agent == "reference":
            passed = sum(o.caught_at is None for o in mine)
            bad = [o for o in mine if o.caught_at is not None]
            summary = f"{passed}/{len(mine)} scenarios passed all {turns + 1} turns"
            if bad:
                summary += f"; seed {bad[0].seed} failed turn {bad[0].caught_at}: {bad[0].first_failure}"
            out.append(
                Verdict(
                    agent=agent,
                    ok=not bad,
                    summary=summary,
                    scenarios=len(mine),
                    caught=len(bad),
                    exercised=len(mine),
                    category_ok=len(mine) - len(bad),
                    first_caught_turn=None,
                )
            )
            continue
        expected = MUTANT_BY_BUG[agent].category
        caught = [o for o in mine if o.caught_at is not None]
        exercised = [o for o in mine if o.exercised_at is not None or o.caught_at is not None]
        missed = [o for o in exercised if o.caught_at is None]
        right = [o for o in caught if expected in o.categories]
        first = min((o.caught_at for o in caught if o.caught_at is not None), default=None)
        ok = not missed and len(right) == len(caught)
        if exercised:
            summary = (
                f"caught in {len(caught)}/{len(exercised)} scenarios that exercise it, first at turn {first}; "
                f"category {expected} in {len(right)}/{len(caught)}"
            )
        else:
            summary = "never exercised by these scenarios (not counted as missed)"
        if missed:
            summary += f"; MISSED in seed {missed[0].seed}"
        wrong = [o for o in caught if expected not in o.categories]
        if wrong:
            summary += f"; seed {wrong[0].seed} reported {', '.join(wrong[0].categories)}"
        out.append(
            Verdict(
                agent=agent,
                ok=ok,
                summary=summary,
                scenarios=len(mine),
                caught=len(caught),
                exercised=len(exercised),
                category_ok=len(right),
                first_caught_turn=first,
            )
        )
    return out


# --- the rule-coverage gate -----------------------------------------------------------------------

# Setup rules no server can break in a way HTTP shows; everything else needs a mutant in the catalogue.
UNTESTABLE: dict[str, str] = {
    "run-script": "the engine starts the server through it; a missing or broken script is `server_never_ready`, "
    "not a suite failure (validate runs the server in process)",
    "language": "the implementation language is not observable over HTTP",
    "pkill": "breaking it kills the agent's own harness (`self_kill`, an infrastructure outcome), not the server",
    "automation": "it tells the agent how it is tested; nothing a server does can break it",
}


class MutantRow(msgspec.Struct, frozen=True, kw_only=True):
    bug: str
    category: str
    seeds: int  # scenarios run
    exercised: int  # scenarios with an exercisable turn
    caught: int
    exercised_at: tuple[tuple[int, int], ...]  # (seed, first exercisable turn)
    caught_at: tuple[tuple[int, int], ...]  # (seed, turn caught)
    rules_cited: tuple[str, ...]  # rules of the tests that failed when it was caught


class RuleRow(msgspec.Struct, frozen=True, kw_only=True):
    rule: str
    ok: bool
    untestable: str = ""  # the reason, for a rule in UNTESTABLE
    first: tuple[int, int] | None = None  # first (seed, turn) any of its mutants is exercisable, by turn then seed
    mutants: tuple[MutantRow, ...] = ()


class Gate(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    rules: tuple[RuleRow, ...]
    failures: tuple[str, ...]  # one line each


def rule_gate(outcomes: list[AgentOutcome], complete: bool = True) -> Gate:  # noqa: C901 - one verdict per way a rule can fail the gate
    """Per README rule: its mutants, where each is first exercisable and where it was caught.

    Fails for a testable rule without a mutant (only when `complete`, i.e. the whole catalogue ran),
    a mutant surviving an exercisable turn, caught later than its first exercisable turn, caught
    before it (its `exercised` predicate is wrong), or caught under the wrong category; and for a
    reference that failed any turn.
    """
    from staminad.bench.readme import RULES

    failures: list[str] = []
    for o in outcomes:
        if o.agent == "reference" and o.caught_at is not None:
            failures.append(f"reference: seed {o.seed} failed turn {o.caught_at}: {o.first_failure}")
    by_agent: dict[str, list[AgentOutcome]] = {}
    for o in outcomes:
        if o.agent != "reference":
            by_agent.setdefault(o.agent, []).append(o)
    rows: list[RuleRow] = []
    for rule in RULES:
        bugs = [m for m in MUTANTS if m.rule == rule and m.bug in by_agent]
        if rule in UNTESTABLE:
            rows.append(RuleRow(rule=rule, ok=True, untestable=UNTESTABLE[rule]))
            continue
        if not bugs and complete:
            failures.append(f"[{rule}] no mutant in the catalogue breaks this rule")
        mrows, firsts, ok = [], [], not (not bugs and complete)
        for m in bugs:
            mine = sorted(by_agent[m.bug], key=lambda o: o.seed)
            for o in mine:
                where = f"{m.bug} seed {o.seed}"
                bad = ""
                if o.exercised_at is not None and o.caught_at is None:
                    bad = f"survives: exercisable from turn {o.exercised_at}, never caught"
                elif o.caught_at is not None and o.exercised_at is None:
                    bad = f"caught at turn {o.caught_at} but never marked exercisable (predicate too narrow)"
                elif o.caught_at is not None and o.exercised_at is not None and o.caught_at > o.exercised_at:
                    bad = f"caught late: at turn {o.caught_at}, exercisable from turn {o.exercised_at}"
                elif o.caught_at is not None and o.exercised_at is not None and o.caught_at < o.exercised_at:
                    bad = f"caught at turn {o.caught_at} before its first exercisable turn {o.exercised_at}"
                elif o.caught_at is not None and m.category not in o.categories:
                    bad = f"wrong category: {', '.join(o.categories)} instead of {m.category}"
                if bad:
                    failures.append(f"[{rule}] {where}: {bad}")
                    ok = False
            ex = tuple((o.seed, o.exercised_at) for o in mine if o.exercised_at is not None)
            firsts += [(t, s) for s, t in ex]
            mrows.append(
                MutantRow(
                    bug=m.bug,
                    category=m.category,
                    seeds=len(mine),
                    exercised=len(ex),
                    caught=sum(o.caught_at is not None for o in mine),
                    exercised_at=ex,
                    caught_at=tuple((o.seed, o.caught_at) for o in mine if o.caught_at is not None),
                    rules_cited=tuple(sorted({r for o in mine for r in o.rules})),
                )
            )
        first = min(firsts, default=None)
        rows.append(RuleRow(rule=rule, ok=ok, first=(first[1], first[0]) if first else None, mutants=tuple(mrows)))
    unknown = sorted({m.rule for m in MUTANTS if m.bug in by_agent} - set(RULES))
    failures += [f"[{r}] mutants name a rule the README does not have" for r in unknown]
    return Gate(ok=not failures, rules=tuple(rows), failures=tuple(failures))


def _turns(pairs: tuple[tuple[int, int], ...]) -> str:
    turns = sorted({t for _, t in pairs})
    return ",".join(map(str, turns[:6])) + ("..." if len(turns) > 6 else "") if turns else "-"


def render_gate(gate: Gate) -> str:
    """The per-rule table, then one line per failure."""
    lines = [f"{'rule':<15} {'first':<9} {'mutant':<26} {'exercised':>9} {'caught':>6}  turns exercised / caught"]
    for r in gate.rules:
        mark = "" if r.ok else "  FAIL"
        if r.untestable:
            lines.append(f"{r.rule:<15} untestable: {r.untestable}")
            continue
        first = f"s{r.first[0]} t{r.first[1]}" if r.first else "-"
        if not r.mutants:
            lines.append(f"{r.rule:<15} {first:<9} (no mutant){mark}")
        for i, m in enumerate(r.mutants):
            head = f"{r.rule:<15} {first:<9}" if i == 0 else " " * 25
            lines.append(
                f"{head} {m.bug:<26} {m.exercised:>4}/{m.seeds:<4} {m.caught:>6}  "
                f"{_turns(m.exercised_at)} / {_turns(m.caught_at)}{mark if i == 0 else ''}"
            )
    lines += [f"FAIL {f}" for f in gate.failures]
    lines.append("rule gate: ok" if gate.ok else f"rule gate: {len(gate.failures)} failure(s)")
    return "\n".join(lines)
