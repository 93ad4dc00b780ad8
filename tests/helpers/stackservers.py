"""Servers in each web stack the sandbox offers, written the way agents write them: a workspace per stack.

Each is what an agent leaves behind: its app in the stack's own idiom (routes, request and response objects, a
Pydantic model where FastAPI invites one), a requirements file where Python agents write one, and a
`run_server.sh` that installs and starts it as agents do (`pip install -r requirements.txt`, a virtual
environment, the `uvicorn` command, `manage.py runserver`, `node server.js`). What the API does is not the
stack's business, so every server hands each request's method, target and body to the reference logic
(`refserver.App`, copied beside it as the reference agent copies it) and sends its answer through the stack:
the test is of the sandbox's promise (the stack is there, installs offline, starts and serves every request of
a suite), not of an agent's logic.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import staminad

REFSERVER = Path(staminad.__file__).parent / "reference" / "server"
METHODS = '["GET", "POST", "PATCH", "DELETE", "PUT"]'
LOAD = 'import json\nfrom refserver import App\n\nwith open("config.json") as fh:\n    logic = App(json.load(fh))\n'

FLASK = f"""import sys
from flask import Flask, Response, request
{LOAD}
app = Flask(__name__)


@app.route("/", defaults={{"path": ""}}, methods={METHODS})
@app.route("/<path:path>", methods={METHODS})
def handle(path):
    target = request.full_path.rstrip("?") if request.query_string else request.path
    status, payload = logic.handle(request.method, target, request.get_data())
    return Response(json.dumps(payload), status=status, mimetype="application/json")


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=int(sys.argv[1]))
"""

FASTAPI = f"""from fastapi import FastAPI, Request, Response
from pydantic import BaseModel
{LOAD}
app = FastAPI()


class ResetReply(BaseModel):
    status: str


@app.post("/reset")
def reset() -> ResetReply:
    logic.handle("POST", "/reset", b"")
    return ResetReply(status="reset")


@app.api_route("/{{path:path}}", methods={METHODS})
async def handle(path: str, request: Request) -> Response:
    target = request.url.path + (f"?{{request.url.query}}" if request.url.query else "")
    status, payload = logic.handle(request.method, target, await request.body())
    return Response(json.dumps(payload), status_code=status, media_type="application/json")
"""

STARLETTE = f"""from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
{LOAD}

async def handle(request: Request) -> Response:
    target = request.url.path + (f"?{{request.url.query}}" if request.url.query else "")
    status, payload = logic.handle(request.method, target, await request.body())
    return Response(json.dumps(payload), status_code=status, media_type="application/json")


app = Starlette(routes=[Route("/{{path:path}}", handle, methods={METHODS})])
"""

AIOHTTP = f"""import sys
from aiohttp import web
{LOAD}

async def handle(request):
    status, payload = logic.handle(request.method, request.path_qs, await request.read())
    return web.json_response(payload, status=status)


app = web.Application(client_max_size=16 * 1024 * 1024)
app.router.add_route("*", "/{{tail:.*}}", handle)
web.run_app(app, host="0.0.0.0", port=int(sys.argv[1]))
"""

DJANGO_SETTINGS = """SECRET_KEY = "not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "api.urls"
INSTALLED_APPS = ["api"]
MIDDLEWARE = []
DATABASES = {}
USE_TZ = True
"""
DJANGO_URLS = """from django.urls import re_path

from api import views

urlpatterns = [re_path(r"^.*$", views.handle)]
"""
DJANGO_VIEWS = f"""from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
{LOAD}

@csrf_exempt
def handle(request):
    status, payload = logic.handle(request.method, request.get_full_path(), request.body)
    return HttpResponse(json.dumps(payload), status=status, content_type="application/json")
"""
DJANGO_MANAGE = """import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "api.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
"""

# Express in front; the reference logic (Python) behind it on a private port, waited for before Express listens.
EXPRESS = """const express = require('express');
const http = require('http');
const net = require('net');

const BACKEND = 18181;
const app = express();
app.use(express.raw({ type: () => true, limit: '16mb' }));

app.use((req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const headers = { 'content-type': 'application/json', 'content-length': body.length };
  const forward = http.request({ port: BACKEND, method: req.method, path: req.originalUrl, headers }, (answer) => {
    const chunks = [];
    answer.on('data', (c) => chunks.push(c));
    answer.on('end', () => res.status(answer.statusCode).type('application/json').send(Buffer.concat(chunks)));
  });
  forward.on('error', (e) => res.status(502).json({ error: String(e) }));
  forward.end(body);
});

function start() {
  const probe = net.connect(BACKEND, '127.0.0.1', () => {
    probe.end();
    app.listen(Number(process.argv[2]), '0.0.0.0');
  });
  probe.on('error', () => setTimeout(start, 50));
}
start();
"""

HEAD = '#!/usr/bin/env bash\nset -e\ncd "$(dirname "$0")"\n'
STACKS: dict[str, dict[str, str]] = {
    "flask": {
        "app.py": FLASK,
        "requirements.txt": "flask\nflask-cors\n",
        "run_server.sh": HEAD + 'pip install -r requirements.txt\nexec python app.py "$1"\n',
    },
    "fastapi": {
        "main.py": FASTAPI,
        "requirements.txt": "fastapi==0.165.0\nuvicorn[standard]\npydantic>=2\n",
        "run_server.sh": HEAD + "python3 -m venv .venv\n.venv/bin/pip install -q -r requirements.txt\n"
        'exec .venv/bin/uvicorn main:app --host 0.0.0.0 --port "$1"\n',
    },
    "starlette": {
        "app.py": STARLETTE,
        "run_server.sh": HEAD + 'exec uvicorn app:app --host 0.0.0.0 --port "$1" --log-level warning\n',
    },
    "aiohttp": {"server.py": AIOHTTP, "run_server.sh": HEAD + 'exec python3 server.py "$1"\n'},
    "django": {
        "manage.py": DJANGO_MANAGE,
        "api/__init__.py": "",
        "api/settings.py": DJANGO_SETTINGS,
        "api/urls.py": DJANGO_URLS,
        "api/views.py": DJANGO_VIEWS,
        "requirements.txt": "Django\n",
        "run_server.sh": HEAD + "pip install -r requirements.txt\n"
        'exec python3 manage.py runserver "0.0.0.0:$1" --noreload\n',
    },
    "express": {
        "server.js": EXPRESS,
        "run_server.sh": HEAD + 'python3 -m refserver --config config.json --port 18181 &\nexec node server.js "$1"\n',
    },
}


def write_workspace(workspace: Path, stack: str, schema: Any, owner: tuple[int, int] | None) -> None:
    """The stack's files, the reference logic as `refserver/` and its `config.json`, owned by the agent."""
    files = dict(STACKS[stack])
    files["config.json"] = json.dumps({"schema": schema})
    for module in REFSERVER.glob("*.py"):
        files[f"refserver/{module.name}"] = module.read_text()
    for name, text in files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if owner is not None:
        for path in [workspace, *workspace.rglob("*")]:
            os.chown(path, *owner, follow_symlinks=False)
