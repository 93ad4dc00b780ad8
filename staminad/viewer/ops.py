"""The viewer's /ops page: the box at a glance, asked of the daemon over its control socket (`GetOps`).

The other pages read the store; this one needs what only a running daemon knows (slots, engines, its history
ring, why writes wait). With no daemon answering, the page still shows this machine's load, memory, disks and
GPUs (`host.sample`) and says why the rest is missing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from protocol import ErrorReply, GetOps, OpsReport
from protocol.client import Client, ClientError
from protocol.messages import OpsPoint
from protocol.paths import socket_path
from protocol.units import human_bytes, span
from staminad.host.sample import sample_box

TIMEOUT = 5.0
HISTORY = 2160  # points asked for: the daemon's whole ring at its default period (6 hours)


async def ask_daemon(state_dir: Path) -> OpsReport | str:
    """The daemon's `OpsReport`, or why there is none, in one line."""
    try:
        async with Client(socket_path(state_dir), name="staminad-view", timeout=TIMEOUT) as client:
            reply = await client.request(GetOps(history=HISTORY))
    except (ClientError, OSError) as exc:
        return str(exc)
    if isinstance(reply, ErrorReply):
        return reply.message
    if not isinstance(reply, OpsReport):
        return f"the daemon answered {type(reply).__name__}, not an ops report"
    return reply


def series(points: tuple[OpsPoint, ...]) -> list[dict[str, Any]]:
    """The sparklines: name, values, and the latest value as read."""
    if not points:
        return []
    rows: list[tuple[str, list[float], str]] = [
        ("load (1 min)", [p.load for p in points], f"{points[-1].load:.2f}"),
        ("memory used", [p.memory_used * 100 for p in points], f"{points[-1].memory_used:.0%}"),
        ("scenarios in slots", [float(p.active) for p in points], str(points[-1].active)),
        ("state disk free", [float(p.state_free) for p in points], human_bytes(points[-1].state_free)),
    ]
    if any(p.gpu_util >= 0 for p in points):
        rows.append(("GPU utilisation", [max(p.gpu_util, 0.0) for p in points], f"{max(points[-1].gpu_util, 0):.0f}%"))
    return [{"name": n, "values": v, "now": now} for n, v, now in rows]


async def ops_context(state_dir: Path) -> dict[str, Any]:
    """What ops.html renders: the daemon's report (or why none) and the box now."""
    got = await ask_daemon(state_dir)
    report = got if isinstance(got, OpsReport) else None
    box = report.box if report is not None else sample_box({"state": state_dir})
    span_h = (report.history[-1].at - report.history[0].at) / 3600 if report and len(report.history) > 1 else 0.0
    return {
        "report": report,
        "problem": "" if report is not None else got,
        "box": box,
        "series": series(report.history) if report else [],
        "history_hours": span_h,
        "bytes": human_bytes,
        "span": span,
        "now": time.time(),
    }


__all__ = ["ask_daemon", "ops_context", "series"]
