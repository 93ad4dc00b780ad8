"""Templates (Jinja2, autoescaped everywhere) and the links between pages, for the server and the static site.

The live server links to routes; the static site links to files next to each other. Pages call the same
`links` object, so one set of templates serves both.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2

from staminad.viewer.svg import sparkline_svg, survival_svg

HERE = Path(__file__).parent
STATIC = HERE / "static"


class LiveLinks:
    """Links to the server's routes."""

    live = True

    def home(self) -> str:
        return "/"

    def sweep(self, sweep: str) -> str:
        return "/sweep?" + urlencode({"name": sweep})

    def scenario(self, sweep: str, configuration: str, seed: int) -> str:
        return "/scenario?" + urlencode({"sweep": sweep, "configuration": configuration, "seed": int(seed)})

    def compare(self, sweep: str, a: str | None = None, b: str | None = None) -> str:
        pair = {"a": a, "b": b} if a is not None and b is not None else {}
        return "/compare?" + urlencode({"sweep": sweep, **pair})

    def asset(self, name: str) -> str:
        return f"/static/{name}"

    def ops(self) -> str:
        return "/ops"


def slug(*parts: str | int) -> str:
    """A file-name-safe, collision-free name for a page: readable letters plus a short hash of the parts."""
    text = "\x00".join(str(p) for p in parts)
    readable = re.sub(r"[^A-Za-z0-9]+", "-", "-".join(str(p) for p in parts)).strip("-")[:60]
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


class StaticLinks:
    """Links between the files of the static site (all in one directory)."""

    live = False

    def home(self) -> str:
        return "index.html"

    def sweep(self, sweep: str) -> str:
        return f"sweep-{slug(sweep)}.html"

    def scenario(self, sweep: str, configuration: str, seed: int) -> str:
        return f"scenario-{slug(sweep, configuration, seed)}.html"

    def compare(self, sweep: str, a: str | None = None, b: str | None = None) -> str:
        return f"compare-{slug(sweep, a or '', b or '')}.html"

    def asset(self, name: str) -> str:
        return f"assets/{name}"


def _fmt(value: Any, spec: str = ".1f") -> str:
    return "" if value is None else format(value, spec)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = _fmt
    env.globals["survival_svg"] = survival_svg
    env.globals["sparkline_svg"] = sparkline_svg
    return env


_ENV: jinja2.Environment | None = None


def render(template: str, links: LiveLinks | StaticLinks, **context: Any) -> str:
    global _ENV
    if _ENV is None:
        _ENV = environment()
    return _ENV.get_template(template).render(links=links, **context)
