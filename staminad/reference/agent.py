"""The reference agent: rebuilds the design from the texts an agent sees and writes a server for it.

Standard library only, so it runs in any sandbox. It reads only `initial_specification.md` and
the prompts (never the pack, the seed or the tests), keeps its understanding of the design in
`.reference-agent/model.json` inside the workspace (as a harness keeps its session), and writes
`run_server.sh`, `config.json` and the server package `refserver/` (a copy of `server/`, beside it). It
passing every test of every turn is the proof that the texts are complete. With `--bug`, it is a mutant:
one injected mistake.

Run: python3 agent.py --workspace DIR --prompt-file FILE [--bug NAME] [--fix-on-feedback]
(next to parse.py and the server/ package, as the sandbox's layer has them)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

if __package__:
    from .parse import parse_bounds, parse_changes, parse_condition, parse_effect, parse_spec
else:  # run as a script from a sandbox, next to parse.py (also under `python -I`)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from parse import (  # type: ignore[import-not-found,no-redef]
        parse_bounds,
        parse_changes,
        parse_condition,
        parse_effect,
        parse_spec,
    )

AGENT_BUGS = frozenset({"rename-leak", "ignore-add_field"}) | frozenset(
    {  # removals the mutant gets wrong
        "ignore-delete_entity",
        "ignore-delete_analytics",
        "ignore-remove_action",
        "ignore-remove_guard",
        "ignore-remove_effect",
        "keep-implied-removals",
        "stale-renamed-key",
        "deleted-field-kept",
        "keep-refs-to-deleted",
        "stale-renamed-analytics",
    }
)
MEMORY = ".reference-agent/model.json"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Model:
    """The agent's picture of the design, in the schema JSON the reference server reads."""

    def __init__(self, schema: dict[str, Any], aliases: dict[str, str] | None = None) -> None:
        self.schema = schema
        self.aliases = aliases or {}

    def entity(self, name: str) -> dict[str, Any]:
        return next(e for e in self.schema["entities"] if e["name"] == name)

    def action(self, entity: str, name: str) -> dict[str, Any]:
        return next(a for a in self.schema["actions"] if a["entity"] == entity and a["name"] == name)

    def _field(self, entity: str, name: str) -> dict[str, Any] | None:
        return next((f for f in self.entity(entity)["fields"] if f["name"] == name), None)

    def _points_at(self, owner: str, link: str, target: str) -> bool:
        f = self._field(owner, link)
        return f is not None and f.get("target") == target

    def prune_enums(self) -> None:
        used = {f.get("enum") for e in self.schema["entities"] for f in e["fields"]}
        self.schema["enums"] = [x for x in self.schema["enums"] if x["name"] in used]

    # --- the transition, as the agent understands each request -------------------------------

    def apply(self, change: dict[str, Any], bugs: set[str]) -> None:  # noqa: C901 - one branch per change kind the reference agent applies
        kind = change["kind"]
        s = self.schema
        if f"ignore-{kind}" in bugs and kind != "add_field":  # the mutant skips one kind of request
            return
        if kind == "add_entity":
            s["enums"] += change["enums"]
            s["entities"].append({"name": change["name"], "fields": change["fields"]})
        elif kind == "delete_entity":
            name = change["name"]
            s["entities"] = [e for e in s["entities"] if e["name"] != name]
            s["analytics"] = [a for a in s["analytics"] if a["entity"] != name]
            s["actions"] = [a for a in s["actions"] if a["entity"] != name]
            for owner, field in change["fields"] if "keep-refs-to-deleted" not in bugs else ():
                e = self.entity(owner)
                e["fields"] = [f for f in e["fields"] if f["name"] != field]
            self._drop(change["also"], bugs)
        elif kind == "rename_entity":
            self._rename_entity(change["old"], change["new"], bugs)
        elif kind == "add_field":
            if "ignore-add_field" in bugs:
                return
            s["enums"] += change["enums"]
            self.entity(change["entity"])["fields"].append(change["field"])
        elif kind == "delete_field":
            e = self.entity(change["entity"])
            if "removed-field-validated" in bugs:  # out of the replies, not out of the request model
                e["removed"] = [*e.get("removed", []), *(f for f in e["fields"] if f["name"] == change["field"])]
            e["fields"] = [
                f if f["name"] != change["field"] else _leftover(f)
                for f in e["fields"]
                if f["name"] != change["field"] or "deleted-field-kept" in bugs
            ]
            self._drop(change["also"], bugs)
        elif kind == "rename_field":
            kept = (
                [dict(a) for a in s["analytics"] if a["entity"] == change["entity"] and a.get("field") == change["old"]]
                if "stale-renamed-analytics" in bugs
                else []
            )
            old = self._field(change["entity"], change["old"])
            self._rename_field(change["entity"], change["old"], change["new"])
            s["analytics"] += kept  # the old paths keep answering
            if "stale-renamed-key" in bugs and old is not None:  # a new column beside the old one
                self.entity(change["entity"])["fields"].append(_leftover({**old, "name": change["old"]}))
        elif kind == "change_bounds":
            f = self._field(change["entity"], change["field"])
            assert f is not None
            keys = ("minimum", "maximum", "min_length", "max_length", "after", "before")
            if "patch-stale-bounds" in bugs:  # the PATCH model keeps the bounds it was written with
                f.setdefault("patch_bounds", {k: f[k] for k in keys if k in f})
            for key in keys:
                f.pop(key, None)
            f.update(parse_bounds(f["kind"], change["text"]))
        elif kind == "add_analytics":
            s["analytics"].append(change["analytics"])
        elif kind == "delete_analytics":
            s["analytics"] = [a for a in s["analytics"] if _path(a) != change["path"]]
        elif kind == "add_action":
            s["actions"].append(change["action"])
        elif kind == "remove_action":
            s["actions"] = [
                a for a in s["actions"] if not (a["entity"] == change["entity"] and a["name"] == change["name"])
            ]
        elif kind in ("add_guard", "remove_guard", "add_effect", "remove_effect"):
            a = self.action(change["entity"], change["action"])
            key = "conditions" if "guard" in kind else "effects"
            if kind.startswith("add"):
                a[key] = [*a.get(key, []), change["item"]]
            else:
                a[key] = [x for x in a.get(key, []) if x != change["item"]]
        elif kind == "add_enum_value":
            next(x for x in s["enums"] if x["name"] == change["enum"])["values"].append(change["value"])
        self.prune_enums()

    def _drop(self, also: list[dict[str, Any]], bugs: set[str]) -> None:
        """Remove what a deletion took with it, as the change request lists it."""
        s = self.schema
        for item in also:
            if "keep-implied-removals" in bugs and item["what"] in ("analytics", "action"):
                continue
            if item["what"] == "analytics":
                s["analytics"] = [a for a in s["analytics"] if _path(a) != item["path"]]
            elif item["what"] == "action":
                s["actions"] = [
                    a for a in s["actions"] if not (a["entity"] == item["entity"] and a["name"] == item["name"])
                ]
            else:
                a = self.action(item["entity"], item["name"])
                key = "conditions" if item["what"] == "guard" else "effects"
                a[key] = [x for x in a.get(key, []) if x != item["item"]]

    def _rename_entity(self, old: str, new: str, bugs: set[str]) -> None:
        s = self.schema
        self.aliases[old.lower()] = new
        for e in s["entities"]:
            if e["name"] == old:
                e["name"] = new
            for f in e["fields"]:
                if f.get("target") == old:
                    f["target"] = new
        for item in s["analytics"] + s["actions"]:
            if item["entity"] == old:
                item["entity"] = new
        if "rename-leak" in bugs:  # the mutant also renames fields named after the entity
            for e in s["entities"]:
                for f in list(e["fields"]):
                    if f.get("target") == new and _snake(old) in f["name"]:
                        self._rename_field(e["name"], f["name"], f["name"].replace(_snake(old), _snake(new)))

    def _rename_field(self, entity: str, old: str, new: str) -> None:
        s = self.schema

        def n(name: str) -> str:
            return new if name == old else name

        for a in s["analytics"]:
            if a["entity"] == entity and a.get("field") == old:
                a["field"] = new
        for a in s["actions"]:
            here = a["entity"] == entity
            if here:
                a["field"] = n(a["field"])
            for c in a.get("conditions", []):
                self._rename_in_condition(a["entity"], c, entity, here, n)
            for x in a.get("effects", []):
                self._rename_in_effect(a["entity"], x, entity, here, n)
        f = self._field(entity, old)
        assert f is not None
        f["name"] = new

    def _rename_in_condition(self, owner: str, c: dict[str, Any], entity: str, here: bool, n: Any) -> None:
        if c["type"] == "null":
            if here:
                c["field"] = n(c["field"])
            return
        if c["type"] == "quantified":
            if self._points_at(owner, c["list_field"], entity):
                c["field"] = n(c["field"])
            if here:
                c["list_field"] = n(c["list_field"])
            return
        left = c["left"]
        if left["type"] == "sum" and self._points_at(owner, left["list_field"], entity):
            left["field"] = n(left["field"])
        if here:
            for key in ("field", "left", "right", "list_field"):
                if key in left and not (left["type"] == "sum" and key == "field"):
                    left[key] = n(left[key])

    def _rename_in_effect(self, owner: str, x: dict[str, Any], entity: str, here: bool, n: Any) -> None:
        if x["type"] in ("on_ref", "for_each"):
            link = "ref_field" if x["type"] == "on_ref" else "list_field"
            if self._points_at(owner, x[link], entity):
                x["effect"]["field"] = n(x["effect"]["field"])
            if here:
                x[link] = n(x[link])
        elif here:
            for key in ("field", "left", "right"):
                if key in x:
                    x[key] = n(x[key])


def _leftover(f: dict[str, Any]) -> dict[str, Any]:
    """A field a mutant forgot to drop: still stored and returned, but optional and null."""
    out = {k: v for k, v in f.items() if k not in ("required", "has_default", "default")}
    return {**out, "required": False, "nullable": True}


def _path(a: dict[str, Any]) -> str:
    if a["op"] == "count":
        return f"/analytics/{a['entity'].lower()}/count"
    return f"/analytics/{a['entity'].lower()}/{a['field']}/{a['op']}"


# The server package (`server/` beside this file) as the workspace names it.
SERVER_PACKAGE = "refserver"
# `-B`: importing the package writes no __pycache__ into the workspace.
RUN_SERVER = f"""#!/usr/bin/env bash
# Written by the StaminaBench reference agent.
cd "$(dirname "$0")"
exec python3 -B -m {SERVER_PACKAGE} --config config.json --port "$1"
"""


def _not_source(_dir: str, names: list[str]) -> set[str]:
    """What `copytree` leaves out of the server package: everything but its modules (no __pycache__)."""
    return {n for n in names if not n.endswith(".py")}


def step(
    memory: dict[str, Any], prompt: str, spec: str, bug: str | None, fix_on_feedback: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One agent call without I/O: (memory, prompt) -> (new memory, server config)."""
    memory = dict(memory) if memory else {"bug": bug}
    bugs = {memory["bug"]} if memory.get("bug") else set()
    if prompt.startswith("Implement the REST API server"):
        model = Model(parse_spec(spec))
    else:
        if prompt.startswith("The tests passed."):
            # An infra retry resends the same change request: start again from the design as it was before
            # this request's first call, so applying it twice changes nothing (no doubled enum values, no
            # rename of a name that is already gone).
            key = hashlib.sha256(prompt.encode()).hexdigest()
            before = memory.get("before_last_change")
            if memory.get("last_change") == key and isinstance(before, dict):
                memory.update(json.loads(json.dumps(before)))
            else:
                memory["last_change"] = key
                memory["before_last_change"] = json.loads(
                    json.dumps({k: memory.get(k) for k in ("schema", "aliases", "skipped")})
                )
        model = Model(json.loads(json.dumps(memory["schema"])), dict(memory.get("aliases") or {}))
        if prompt.startswith("The tests passed."):
            for change in parse_changes(prompt):
                try:
                    model.apply(change, bugs)
                except (StopIteration, KeyError, AssertionError, ValueError) as exc:
                    # Only reachable once a mutant's model has drifted from the texts: like a confused
                    # agent it leaves the request undone, and notes it, instead of crashing.
                    memory["skipped"] = [*(memory.get("skipped") or []), f"{change['kind']}: {type(exc).__name__}"]
        elif fix_on_feedback and memory.get("bug"):
            memory["bug"] = None  # the mutant "reads the feedback" and repairs its one mistake
            bugs = set()
    memory.update(schema=model.schema, aliases=model.aliases)
    server_bugs = sorted(b for b in bugs if b not in AGENT_BUGS)
    return memory, {"schema": model.schema, "bugs": server_bugs, "aliases": model.aliases}


def run(workspace: Path, prompt: str, bug: str | None, fix_on_feedback: bool) -> None:
    """One agent call in a workspace: read the texts and memory, write the server files."""
    path = workspace / MEMORY
    memory: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    spec_path = workspace / "initial_specification.md"
    spec = spec_path.read_text() if spec_path.exists() else ""
    memory, config = step(memory, prompt, spec, bug, fix_on_feedback)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(memory, indent=1))
    (workspace / "config.json").write_text(json.dumps(config, indent=1))
    shutil.copytree(
        Path(__file__).with_name("server"), workspace / SERVER_PACKAGE, ignore=_not_source, dirs_exist_ok=True
    )
    (workspace / "run_server.sh").write_text(RUN_SERVER)
    os.chmod(workspace / "run_server.sh", 0o755)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="StaminaBench reference agent")
    ap.add_argument("--workspace", type=Path, default=Path.cwd())
    ap.add_argument("--prompt-file", type=Path, required=True)
    ap.add_argument("--bug", default=None)
    ap.add_argument("--fix-on-feedback", action="store_true")
    args = ap.parse_args(argv)
    run(args.workspace, args.prompt_file.read_text(), args.bug, args.fix_on_feedback)
    return 0


__all__ = ["AGENT_BUGS", "Model", "parse_condition", "parse_effect", "run", "step"]

if __name__ == "__main__":
    sys.exit(main())
