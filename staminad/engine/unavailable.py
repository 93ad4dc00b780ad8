"""Plain words for a server that did not start because it needs something the sandbox does not have.

A sandbox has no network and only the packages `bench.environment` lists. An agent that imports another module,
pins another version or runs `npm install` sees its server die with the tool's own message, which rarely says
why; this reads those messages in the tail of the server's output and says it: what is missing, that nothing
can be downloaded, and what is there instead. The log is the agent's: it only ever adds these lines to the
feedback (for at most `LIMIT` names), never decides anything.
"""

from __future__ import annotations

import re

from staminad.bench.environment import EXPRESS_ROUTES, module_names, node_offer, python_offer

LIMIT = 3  # names said per kind; a log naming more is the same advice again
_PY_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([A-Za-z0-9_]+)")
_NODE_MODULE = re.compile(r"Error: Cannot find module '([^'./][^']*)'")
_PIP = re.compile(r"No matching distribution found for ([^\s;]+)")
_COMMAND = re.compile(r"^(?:.*: )?([A-Za-z0-9_.+-]+): (?:command )?not found$", re.MULTILINE)
_NPM = re.compile(r"npm (?:ERR!|error) (?:code )?(?:ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ENETUNREACH)")
_ROUTE = re.compile(r"TypeError: Unexpected MODIFIER at \d+, expected END")  # path-to-regexp 6 on a bare `*`
_OFFLINE = "the sandbox has no network, so it cannot be downloaded"


def _found(pattern: re.Pattern[str], log: str) -> list[str]:
    """The distinct first groups of `pattern` in `log`, in order, at most LIMIT."""
    names: list[str] = []
    for match in pattern.finditer(log):
        if match.group(1) not in names:
            names.append(match.group(1))
    return names[:LIMIT]


def _python_module(name: str) -> str:
    if name in module_names():
        return (
            f"The module `{name}` is installed for the sandbox's `python3`, but the Python that ran your server "
            f"does not have it: a virtual environment needs `pip install {name}` (it installs offline from the "
            "sandbox's copy) or `--system-site-packages`."
        )
    return f"The module `{name}` is not available in the sandbox, and {_OFFLINE}. Python has: {python_offer()}."


def hints(log: str) -> list[str]:
    """One plain sentence per missing thing the server's output names ([] when it names none)."""
    out = [_python_module(name) for name in _found(_PY_MODULE, log)]
    out += [
        f"The Node.js module `{name}` is not available in the sandbox, and {_OFFLINE}. There is: {node_offer()}."
        for name in _found(_NODE_MODULE, log)
    ]
    out += [
        f"pip cannot install `{req}`: {_OFFLINE.replace('it cannot', 'nothing can')}, and pip installs only "
        f"these versions, from the sandbox's copy: {python_offer()}."
        for req in _found(_PIP, log)
    ]
    out += [f"The command `{name}` is not installed in the sandbox, and {_OFFLINE}." for name in _found(_COMMAND, log)]
    if _NPM.search(log):
        out.append(f"npm cannot reach a registry: the sandbox has no network. There is: {node_offer()}.")
    if _ROUTE.search(log):
        out.append(EXPRESS_ROUTES)
    return out
