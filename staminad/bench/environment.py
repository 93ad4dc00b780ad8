"""What the agent's sandbox offers a server: the packages installed in it, pinned, with nothing to download.

Sandboxes have no network, so "any web framework is fine" holds only for what the image already carries. One
list says what that is: the agent's README states it (`bench.readme`), the image installs exactly these
versions with their dependencies (`sandbox/docker/locks/stacks.json`, which a test keeps in step with this list)
and the feedback for a server that imports something else names what is there (`engine.unavailable`).

Python packages are installed for the image's `python3` and kept as a read-only wheelhouse that `pip` installs
from offline (`/etc/pip.conf`: no index, that wheelhouse), so `pip install flask` and a virtual environment work.
Node.js packages are Debian's, installed globally in the `node` layer, where `require('express')` works without
`npm install` (npm has no registry to reach).
"""

from __future__ import annotations

WHEELHOUSE = "/opt/wheelhouse"  # in the image, read-only: what `pip install` finds (see the module)

# (distribution as pip names it, version, how the README names it) of each package an agent may ask for; their
# dependencies come with them (the lock names them all).
PYTHON_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("flask", "3.1.3", "Flask"),
    ("flask-cors", "6.0.5", "Flask-Cors"),
    ("fastapi", "0.165.0", "FastAPI"),
    ("pydantic", "2.14.4", "Pydantic"),
    ("starlette", "1.10.0", "Starlette"),
    ("uvicorn[standard]", "0.55.0", "uvicorn[standard]"),
    ("gunicorn", "27.0.1", "gunicorn"),
    ("aiohttp", "3.14.5", "aiohttp"),
    ("django", "5.2.20", "Django"),
    ("djangorestframework", "3.18.3", "Django REST framework"),
    ("sqlalchemy", "2.1.9", "SQLAlchemy"),
    ("requests", "2.34.2", "requests"),
    ("httpx", "0.29.0", "httpx"),
    ("pytest", "9.2.0", "pytest"),
)
# (Debian package, the version bookworm ships, how the README names it, `{v}` its version): the `node` layer's.
NODE_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("node-express", "4.18", "Express {v}"),
    ("node-typescript", "4.8", "TypeScript {v} (`tsc`)"),
)
NODE_VERSION = "18"
# Debian's Express 4.18 routes with Debian's path-to-regexp 6, not the 0.1 npm's Express 4 bundles.
EXPRESS_ROUTES = (
    "Express here matches route paths with path-to-regexp 6: a path holding a bare `*` (`app.get('*', ...)`) "
    "is refused when the server starts; for a catch-all use `app.use(...)` or the path `(.*)`."
)


def python_pins() -> tuple[str, ...]:
    """The requirement lines the image installs (`name==version`, extras kept)."""
    return tuple(f"{name}=={version}" for name, version, _ in PYTHON_PACKAGES)


def module_names() -> frozenset[str]:
    """The top-level modules an import of an installed Python package names (`flask_cors`, `rest_framework`)."""
    renamed = {"djangorestframework": "rest_framework", "uvicorn[standard]": "uvicorn", "flask-cors": "flask_cors"}
    return frozenset(renamed.get(name, name) for name, _, _ in PYTHON_PACKAGES)


def python_offer() -> str:
    """The Python packages as one sentence's list: `Flask 3.1.3, ..., pytest 9.2.0`."""
    return ", ".join(f"{label} {version}" for _, version, label in PYTHON_PACKAGES)


def node_offer() -> str:
    """Node.js and its packages as one sentence's list."""
    *rest, last = [f"Node.js {NODE_VERSION}", *(label.format(v=v) for _, v, label in NODE_PACKAGES)]
    return ", ".join(rest) + f" and {last}"


def environment(language: str) -> str:
    """The README's paragraph on what the server can use, for the implementation language."""
    offline = (
        "The server runs in a sandbox without network access: nothing can be downloaded, from any registry, "
        "at any time."
    )
    if language == "python":
        return (
            f"{offline} Python 3.11 or newer is there (`python3`, also `python`), with the standard library "
            "(`sqlite3` included) and these libraries, already installed for `python3` with their dependencies: "
            f"{python_offer()}. `pip install` (also in a virtual environment made with `python3 -m venv`) "
            "installs these versions from a local copy and nothing else: a requirements file may name them "
            "without versions or with these versions. Any other library or version is not available; use these "
            "or the standard library."
        )
    if language in ("javascript", "typescript"):
        return (
            f"{offline} {node_offer()} are installed globally: `require('express')` works without "
            "`npm install`, and `npm install` cannot fetch anything. Use these or Node's built-in modules. "
            f"{EXPRESS_ROUTES}"
        )
    return f"{offline} Use the standard library and what the sandbox has installed."
