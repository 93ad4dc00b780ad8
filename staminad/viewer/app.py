"""The viewer's ASGI app (Starlette): read-only pages over one store, a change mark to poll, local assets.

Each request opens the store read-only and live (`state.readonly`: the daemon's WAL too, for a member of its
socket group as well; a store whose live rows this user cannot read is a page saying so, never old rows), so
pages work while a daemon writes and after it is gone, and the viewer can never change a result. Every response
carries a Content-Security-Policy that allows only this origin: no script, font or image from elsewhere can
load, and no inline script runs even if one slipped past the templates' escaping. With a token, every request
must present it.
"""

from __future__ import annotations

import hmac
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from protocol.usage import hint
from staminad.viewer import model
from staminad.viewer.ops import ops_context
from staminad.viewer.render import STATIC, LiveLinks, render
from state import browse
from state.queries import connect_readonly
from state.readonly import StoreUnreadable
from state.rows import DamagedRow

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
COOKIE = "staminad_view_token"
LINKS = LiveLinks()


def _page(db: Path, build: Callable[[sqlite3.Connection], tuple[str, dict[str, Any]]]) -> tuple[int, str]:
    """(status, HTML) of one page; a missing store, an unknown name or a too-new store is a plain page."""
    try:
        conn = connect_readonly(db)
    except (FileNotFoundError, sqlite3.Error):
        return 200, render(
            "message.html",
            LINKS,
            heading="No results yet",
            message=f"There is no state database at {db} yet: it appears when the first sweep "
            f"starts ({hint('run')} or {hint('submit')} with this --state-dir).",
        )
    except StoreUnreadable as exc:  # its live rows are out of this user's reach: said, never shown stale
        return 200, render("message.html", LINKS, heading="Store not readable live", message=str(exc))
    try:
        template, context = build(conn)
        return 200, render(template, LINKS, **context)
    except model.NotFound as exc:
        return 404, render("message.html", LINKS, heading="Not found", message=str(exc))
    except browse.StoreVersionError as exc:
        return 200, render("message.html", LINKS, heading="Store too new", message=str(exc))
    except DamagedRow as exc:
        return 200, render("message.html", LINKS, heading="Damaged store", message=str(exc))
    except sqlite3.DatabaseError as exc:
        return 200, render(
            "message.html",
            LINKS,
            heading="Unreadable store",
            message=f"{db} could not be read as a staminad store ({exc}).",
        )
    finally:
        conn.close()


def create_app(state_dir: Path, token: str | None = None, allowed_hosts: list[str] | None = None) -> Starlette:
    db = state_dir / "staminad.db"

    async def respond(build: Callable[[sqlite3.Connection], tuple[str, dict[str, Any]]]) -> Response:
        status, html = await anyio.to_thread.run_sync(_page, db, build)
        return HTMLResponse(html, status_code=status)

    async def sweeps(request: Request) -> Response:
        return await respond(lambda c: ("sweeps.html", model.sweeps_page(c)))

    async def sweep(request: Request) -> Response:
        sid = _param(request, "name")
        return await respond(lambda c: ("sweep.html", model.sweep_page(c, sid)))

    async def scenario(request: Request) -> Response:
        sid, name, seed = _param(request, "sweep"), _param(request, "configuration"), _param(request, "seed")
        if not seed.isdigit():
            raise BadRequest(f"seed must be a non-negative integer, not {seed!r}")
        return await respond(lambda c: ("scenario.html", model.scenario_page(c, sid, name, int(seed))))

    async def compare(request: Request) -> Response:
        sid, q = _param(request, "sweep"), request.query_params
        return await respond(lambda c: ("compare.html", model.compare_page(c, sid, q.get("a"), q.get("b"))))

    async def ops(request: Request) -> Response:
        return HTMLResponse(render("ops.html", LINKS, **await ops_context(state_dir)))

    async def mark(request: Request) -> Response:
        def read() -> str:
            try:
                conn = connect_readonly(db)
            except (FileNotFoundError, sqlite3.Error):
                return "no-store"
            except StoreUnreadable:
                return "unreadable"
            try:
                return browse.change_mark(conn)
            except sqlite3.Error:
                return "unreadable"
            finally:
                conn.close()

        return JSONResponse({"mark": await anyio.to_thread.run_sync(read)}, headers={"Cache-Control": "no-store"})

    # Names travel in the query string: configuration names hold spaces, colons and even slashes.
    routes = [
        Route("/", sweeps),
        Route("/api/mark", mark),
        Route("/sweep", sweep),
        Route("/compare", compare),
        Route("/scenario", scenario),
        Route("/ops", ops),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(BaseHTTPMiddleware, dispatch=_security(token))]
    if allowed_hosts:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    return Starlette(routes=routes, middleware=middleware, exception_handlers={BadRequest: _bad_request})


class BadRequest(Exception):
    """A page asked for without the query parameters it needs."""


def _param(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if value is None:
        raise BadRequest(f"this page needs the query parameter {name!r}")
    return value


async def _bad_request(request: Request, exc: Exception) -> Response:
    return HTMLResponse(render("message.html", LINKS, heading="Bad request", message=str(exc)), status_code=400)


def _security(token: str | None) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    async def dispatch(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if token is not None:
            given = request.query_params.get("token")
            if given is not None and hmac.compare_digest(given.encode(), token.encode()):
                # Trade the token in the URL for a cookie, so it leaves the address bar and history.
                redirect = RedirectResponse(request.url.remove_query_params("token"), status_code=303)
                redirect.set_cookie(COOKIE, token, httponly=True, samesite="strict")
                return _harden(redirect)
            held = request.cookies.get(COOKIE, "")
            bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
            if not any(hmac.compare_digest(x.encode(), token.encode()) for x in (held, bearer) if x):
                return _harden(
                    Response(
                        "this viewer needs its token: open the URL it printed at start\n",
                        status_code=401,
                        media_type="text/plain",
                    )
                )
        return _harden(await call_next(request))

    return dispatch


def _harden(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
