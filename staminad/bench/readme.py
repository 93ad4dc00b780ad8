"""The agent's README.md: every rule an implementation must follow, each with a stable id.

The suite cites these ids (`RULES`) on every test, so a failure always points at the sentence
that should have prevented it. Rule of completeness: a test may only check what some rule here,
the specification or a change prompt states.
"""

from __future__ import annotations

from staminad.bench.environment import environment

LANGUAGE_NAMES = {
    "python": "Python",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "rust": "Rust",
    "go": "Go",
    "java": "Java",
}


def language_name(language: str) -> str:
    return LANGUAGE_NAMES.get(language, language)


# (id, text) in the order they appear; `{lang}` is replaced by the implementation language.
_SETUP: tuple[tuple[str, str], ...] = (
    (
        "run-script",
        "Create `run_server.sh` in this directory. `bash run_server.sh <port>` must start the server on "
        "that port, listening on 0.0.0.0, and keep it running in the foreground until the process is "
        "stopped. The script must install or load anything the server needs, from what the sandbox offers "
        "(see the next rule).",
    ),
    # The sandbox's offer (`bench.environment`) follows this rule's text in the README.
    (
        "language",
        "Write the server in {lang}. Any web framework or library for {lang} that the sandbox offers is fine.",
    ),
    (
        "spec-file",
        "Do not modify `initial_specification.md`. The design you must implement is that file plus every "
        "change request you receive afterwards, applied in order.",
    ),
    (
        "pkill",
        "When you stop a process, kill it by its exact PID. Never use a broad pattern such as "
        "`pkill -f python` or `killall`: it can kill your own coding agent.",
    ),
    (
        "automation",
        "Your server is tested by an automated suite; nobody can answer questions. If tests fail you may "
        "get a short report and a limited number of further attempts. After the tests pass you will be "
        "asked for more changes: keep following this file for every one of them.",
    ),
)

_API: tuple[tuple[str, str], ...] = (
    (
        "json",
        "Request and response bodies are JSON. An entity is returned as a JSON object holding `id` and every "
        "current field of that entity.",
    ),
    (
        "crud",
        "Every entity has these endpoints, where `{entity}` is the entity name in lowercase without "
        "separators (`CoffeeBatch` -> `/coffeebatch`): `POST /{entity}` creates, `GET /{entity}` lists, "
        "`GET /{entity}/{id}` reads, `PATCH /{entity}/{id}` updates some fields, `DELETE /{entity}/{id}` "
        "deletes.",
    ),
    (
        "create",
        "A successful `POST /{entity}` returns 200 or 201 and the created entity as stored, with defaults applied.",
    ),
    (
        "client-id",
        "`id` is a string chosen by the client and sent in the POST body; it is the primary key. Do not "
        "generate ids. An id is one or more of the characters `A-Z a-z 0-9 - _ . ~`, so it never needs "
        "percent-encoding in a path. A POST without `id`, with an `id` that is not a string (`12345`), or "
        'with an empty id or one holding any other character (`"a b"`, `"a/b"`) is rejected with '
        "400 or 422 and stores nothing; an `id` already used by another entity of the same type is "
        "rejected with 400, 409 or 422. Other fields whose names end in `_id` are ordinary fields, not "
        "identifiers.",
    ),
    ("list", "`GET /{entity}` returns 200 and a JSON array of all entities of that type, in any order."),
    ("read", "`GET /{entity}/{id}` returns 200 and the entity, or 404 if there is no entity with that id."),
    (
        "update",
        "`PATCH /{entity}/{id}` changes only the fields present in the body, validating each by the same "
        "rules as POST, and returns 200 and the updated entity; 404 if the id is unknown. A rejected PATCH "
        "(400 or 422) changes nothing. A PATCH body holding no current field (`{}`, or only unknown keys) is "
        "no error: it changes nothing and returns 200 and the entity.",
    ),
    (
        "patch-id",
        "A PATCH body may contain `id`. If it equals the entity's current id, accept the request as usual; "
        "if it differs, reject it with 400 or 422.",
    ),
    (
        "delete",
        "`DELETE /{entity}/{id}` returns 200 or 204; afterwards the entity is gone (`GET` answers 404 and "
        "the list no longer holds it). Deleting an unknown id returns 404.",
    ),
    (
        "reset",
        '`POST /reset` deletes every entity of every type and returns 200 with `{"status": "reset"}`, or '
        "204. The test suite calls it between tests.",
    ),
    (
        "unknown-path",
        "Paths that do not belong to the current design, including endpoints of deleted or renamed "
        "entities, removed analytics and removed actions, answer 404 (405 is also accepted for a "
        "removed action).",
    ),
    (
        "unknown-keys",
        "A body key that is not a current field of the entity (a made-up name, or the old name of a "
        "renamed or deleted field) is ignored: the request is handled as if the key were absent, and "
        "the key is neither stored nor returned.",
    ),
    (
        "required",
        "A required field without a default must be present in a POST body; if it is missing, reject the "
        "request with 400 or 422.",
    ),
    ("default", "When a POST body omits a field that has a default (required or optional), store the default."),
    (
        "omitted",
        "When a POST body omits an optional field without a default, store null (or `[]` for a list of "
        "references) and return it that way.",
    ),
    (
        "null",
        "A field may be null only if it is nullable. An explicit null for a non-nullable field is rejected "
        "with 400 or 422, even when the field has a default: defaults apply only to omitted fields.",
    ),
    (
        "types",
        "Types: a string is a JSON string; an integer is a JSON number without a fractional part (3, never "
        '3.5, "3" or true); a float is any JSON number, integers included (a float field accepts 5 as '
        "well as 5.5); a boolean is true or false, never 0 or 1. A value of the wrong type is rejected with "
        "400 or 422. Bad input must never produce a 500. A number written with a zero fraction, such as "
        "`5.0`, is not an integer either and should be rejected, but many JSON parsers cannot tell it from "
        "`5`, so this is not tested: the tests never send `5.0` to an integer field. `NaN`, `Infinity` and "
        "`-Infinity` are not JSON at all (many parsers accept them anyway): a body holding them is rejected "
        "with 400 or 422.",
    ),
    (
        "enum",
        "Enum values are case-sensitive and must be one of the listed values; anything else is rejected "
        "with 400 or 422.",
    ),
    ("range", "Numeric bounds are inclusive; values outside are rejected with 400 or 422."),
    (
        "length",
        "String length bounds are inclusive and count characters (Unicode code points, so `é` is one "
        "character, not two bytes); violations are rejected with 400 or 422.",
    ),
    (
        "datetime",
        "A datetime is a string in `YYYY-MM-DD hh:mm:ss` format (24-hour clock) naming a real calendar "
        "date and time: `2023-02-30 10:00:00`, `2023-02-29 10:00:00` (not a leap year) and "
        "`2024-04-10 24:00:00` (hours run 00-23) are invalid, and so is any other form (`T` between date "
        "and time, missing seconds, a time zone, fractional seconds, surrounding spaces, a part without its "
        "leading zero such as `2024-4-10 9:05:00`). Bounds are inclusive and compare as strings, "
        "which orders this fixed-width format correctly. Violations are rejected with 400 or 422.",
    ),
    (
        "reference",
        "A reference field holds the `id` (a string) of an existing entity of the referenced type, or "
        "null. An id that does not exist is rejected with 400 or 422. Reading returns the id string, "
        "never an embedded object.",
    ),
    (
        "reference-list",
        "A list-of-references field holds a JSON array of ids of existing entities of the "
        "referenced type. It defaults to `[]` when omitted and is never null (null is rejected with "
        "400 or 422). An unknown id in the list is rejected with 400 or 422. The same id may appear more than "
        "once: the list is stored and returned exactly as sent, repeats and order included, and everything "
        "computed from it counts each occurrence (`count(this.items)` and `sum(this.items.price)` include "
        "repeats, and `for each` applies its effect once per occurrence).",
    ),
    (
        "cascade",
        "Deleting an entity updates every entity that referred to it: single references to it become "
        "null and lists of references drop its id (every occurrence of it).",
    ),
    (
        "analytics",
        '`GET /analytics/...` endpoints return 200 and `{"result": value}` computed over all stored '
        "entities of the type. `count` is the number of entities. `sum`, `avg`, `min` and `max` ignore "
        "null values; with no values, `sum` is 0 and `avg`, `min` and `max` are null. `sum`, `min` and "
        "`max` of an integer field are integers; `avg` is a float; no rounding anywhere.",
    ),
    (
        "actions",
        "An action is `POST /{entity}/{id}/{action}` (no body needed). Check in this order: 404 if the "
        "entity does not exist; 400 if its enum field is not one of the action's allowed values (wrong "
        "state); 409 if the state is allowed but a guard condition does not hold; otherwise apply every "
        "effect in the listed order, then set the enum field to the target value, and return 200 with the "
        "updated entity.",
    ),
    (
        "guards",
        'Guard notation: `this.x` is a field of the acted-on entity; `"text"`, numbers, `true` and '
        "`false` are literals; `==`, `!=`, `<`, `<=`, `>` and `>=` compare; `count(this.items)` is the number "
        "of ids in a list field; `sum(this.items.price)` adds `price` over the referenced entities, ignoring "
        "nulls (0 for an empty list); `this.a + this.b`, `this.a - this.b` and `this.a * this.b` are "
        "arithmetic, in guards and effects alike; `this.x is null` / `is not null` test a nullable field for "
        "null. A comparison involving a null value does not hold. `any of this.items has f > 1` holds when "
        "at least one referenced entity satisfies it (never for an empty list); `all of this.items have f > 1` "
        "holds when every referenced entity does (always for an empty list). All guards of an action must "
        "hold.",
    ),
    (
        "effects",
        "Effects: `set this.x to V`; `increase this.x by N` / `decrease this.x by N`; `set this.x to "
        "this.a * this.b`. `on the referenced T (this.r): ...` applies the effect to the entity whose id is "
        "in reference field `r` (nothing happens when it is null); `for each T in this.items: ...` applies "
        "it to every entity in the list. An effect whose input value is null changes nothing. Results of "
        "effects are stored even if they leave the field's bounds: bounds only apply to client input.",
    ),
    (
        "rename-entity",
        "Renaming an entity moves all its endpoints, analytics and action paths to the new name; the "
        "old paths answer 404. Fields of other entities that reference it keep their names. Its "
        "fields, enum types and values, bounds and defaults stay exactly as they were.",
    ),
    (
        "rename-field",
        "Renaming a field changes its JSON key everywhere: requests, responses, analytics paths, guards "
        "and effects. The old name is no longer returned.",
    ),
    (
        "delete-entity",
        "Deleting an entity removes its endpoints, analytics and actions, and removes every field of "
        "other entities that referenced it.",
    ),
    (
        "delete-field",
        "Deleting a field removes it from requests and responses, and removes the analytics, guards "
        "and effects that used it (an action whose own enum field is deleted disappears). Change "
        "requests name each such consequence.",
    ),
)

RULES: dict[str, str] = dict(_SETUP + _API)


def render_readme(language: str = "python") -> str:
    """README.md as the agent sees it in its workspace."""
    lang = language_name(language)
    lines = [
        "# Instructions",
        "",
        "You are building, and then repeatedly changing, a REST API server. The design is described in "
        "`initial_specification.md`; later messages request changes to it. Follow every rule below, always. "
        "Each rule has an id in brackets; test reports cite these ids.",
        "",
        "## Setup",
        "",
    ]
    lines += [
        f"- [{rid}] {text.format(lang=lang)}" + (f" {environment(language)}" if rid == "language" else "")
        for rid, text in _SETUP
    ]
    lines += [
        "",
        "Example `run_server.sh`:",
        "",
        "```bash",
        "#!/usr/bin/env bash",
        'PORT="$1"',
        "# start your server here on 0.0.0.0:$PORT, in the foreground",
        "```",
        "",
        "## API rules",
        "",
    ]
    lines += [f"- [{rid}] {text}" for rid, text in _API]
    lines += ["", "When you finish, check that `bash run_server.sh <port>` starts the server and that it answers.", ""]
    return "\n".join(lines)
