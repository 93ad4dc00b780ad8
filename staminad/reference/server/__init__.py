"""The reference REST server: implements every README rule for a design given as schema JSON.

Standard library only, and its modules import each other only relatively, because the reference agent
copies this package into sandboxes (as `refserver/`) where nothing else is installed. It is written
independently of `staminad.bench` (it reads the schema as plain JSON) so that it and the suite are two
separate readings of the same rules: the oracle agreeing with the suite is evidence both are right.
Mutants are this server with one named bug switched on (`--bug`, `bugs.SERVER_BUGS`).

Modules: `validation` (bodies, ids, field values), `app` (routing and the store's CRUD), `actions`
(guards, effects, analytics), `handler` (HTTP and `main`), `bugs` (the bug names).

Run: python3 -m refserver --config config.json --port 8000 (from the workspace the agent wrote)
"""

from __future__ import annotations

from .app import App
from .bugs import SERVER_BUGS
from .handler import MAX_BODY, main, make_server, serve
from .validation import Reject

__all__ = ["MAX_BODY", "SERVER_BUGS", "App", "Reject", "main", "make_server", "serve"]
