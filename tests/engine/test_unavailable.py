"""A server that died for want of something the sandbox lacks is told so in plain words, from its own output."""

from __future__ import annotations

from staminad.bench.environment import EXPRESS_ROUTES
from staminad.engine.blame import server_feedback
from staminad.engine.unavailable import LIMIT, hints

TRACEBACK = """Traceback (most recent call last):
  File "/workspace/app.py", line 1, in <module>
    import tornado.web
ModuleNotFoundError: No module named 'tornado'
"""


def test_a_missing_python_module_is_named_with_what_python_has() -> None:
    """`No module named 'tornado'`: not available, no network, and the list of what is installed."""
    (hint,) = hints(TRACEBACK)
    assert hint.startswith("The module `tornado` is not available in the sandbox")
    assert "no network" in hint and "Flask 3.1.3" in hint and "FastAPI" in hint


def test_an_installed_module_missing_from_a_venv_says_how_to_get_it() -> None:
    """`flask` is installed for python3: a venv that lacks it is told to pip install it (offline) instead."""
    (hint,) = hints("ModuleNotFoundError: No module named 'flask'\n")
    assert "is installed for the sandbox's `python3`" in hint and "`pip install flask`" in hint


def test_pip_node_and_shell_failures_are_each_said() -> None:
    """A version pip cannot find, a Node module, a missing command and npm without a registry: one line each."""
    log = (
        "ERROR: Could not find a version that satisfies the requirement flask==2.0.0 (from versions: 3.1.3)\n"
        "ERROR: No matching distribution found for flask==2.0.0\n"
        "Error: Cannot find module 'koa'\n"
        "run_server.sh: line 3: cargo: command not found\n"
        "sh: 1: go: not found\n"
        "npm error code EAI_AGAIN\n"
    )
    found = hints(log)
    assert [h.split(" ")[1] for h in found] == ["Node.js", "cannot", "command", "command", "cannot"]
    assert "`koa`" in found[0] and "Express 4.18" in found[0] and "`flask==2.0.0`" in found[1]
    assert "`cargo`" in found[2] and "`go`" in found[3] and found[4].startswith("npm cannot reach a registry")


def test_the_agents_own_modules_and_an_ordinary_crash_add_nothing() -> None:
    """A relative Node module, a Python error of another kind and an empty log give no hint."""
    assert hints("Error: Cannot find module './db'\nError: Cannot find module '/workspace/x.js'\n") == []
    assert hints("SyntaxError: invalid syntax\n") == [] and hints("") == []


def test_many_missing_names_are_cut_and_repeats_said_once() -> None:
    """A log naming the same module twice says it once; more than LIMIT distinct names, LIMIT of them."""
    log = "".join(f"ModuleNotFoundError: No module named 'm{i}'\n" * 2 for i in range(LIMIT + 2))
    assert [h.split("`")[1] for h in hints(log)] == [f"m{i}" for i in range(LIMIT)]


def test_the_retry_prompt_carries_the_hint_above_the_log() -> None:
    """The server-start feedback says what is missing at the medium and detailed levels, not at minimal."""
    detailed = server_feedback("server_exited", "the server exited with status 1", TRACEBACK, "detailed")
    assert detailed.index("The module `tornado` is not available") < detailed.index("The end of the server's output")
    assert "`tornado`" in server_feedback("server_exited", "exited", TRACEBACK, "medium")
    assert "`tornado`" not in server_feedback("server_exited", "exited", TRACEBACK, "minimal")


def test_a_bare_star_route_under_debians_express_is_explained() -> None:
    """path-to-regexp 6's refusal of `*` gets the README's sentence on Express's routes."""
    log = "TypeError: Unexpected MODIFIER at 0, expected END\n    at mustConsume (/usr/share/nodejs/path-to-regexp"
    assert hints(log) == [EXPRESS_ROUTES]
