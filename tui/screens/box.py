"""The box screen: the machine and the daemon at a glance, as `staminad view`'s /ops page shows them.

Sweeps with progress and time left, engines and slots, model endpoints with latency, errors and spend, load,
memory, disks and GPUs, and sparklines of the daemon's history ring (`GetOps`), refetched every `EVERY`
seconds while the screen is open.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Header, Label, Sparkline, Static

from protocol import GetOps, OpsReport
from protocol.units import human_bytes, span
from tui.components.banner import Banner
from tui.markup import literal
from tui.screens.base import MonitorScreen

EVERY = 2.0  # seconds between refetches of the report
HISTORY = 120  # history points drawn (the sparklines' width)


def report_text(r: OpsReport) -> str:
    """Everything but the sparklines, as Rich markup (names escaped)."""
    lines = []
    if r.stall:
        lines.append(f"[b red]paused:[/b red] {literal(r.stall)}")
    lines.append(f"[b]sweeps[/b]  ({r.in_use} of {r.limit} daemon-wide slots in use)")
    for s in r.sweeps:
        expanding = (
            f", expanding: {s.expanding} of {s.expand_total}" if s.expand_total and s.expanding < s.expand_total else ""
        )
        why = f"  [dim]{literal(s.reason)}[/dim]" if s.reason else ""
        lines.append(
            f"  {literal(s.sweep)}: {s.status}, {s.finished} of {s.scenarios} finished{expanding}, "
            f"{s.active}/{s.parallel} slots, {s.queued} queued, left {span(s.eta)}{why}"
        )
    if not r.sweeps:
        lines.append("  [dim]none[/dim]")
    if r.engines:
        lines.append("[b]engines[/b]")
        for e in r.engines:
            health = "healthy" if e.healthy else f"[b red]not answering[/b red] {literal(e.detail)}"
            slots = f", {e.used}/{e.slots} slots" if e.slots else ""
            down = (
                f", [b red]down for {span(r.at - e.down_since)}[/b red], {e.waiting} scenarios paused until it answers"
                if e.down_since
                else ""
            )
            lines.append(f"  {literal(e.url)}: {health}{slots}{down}")
    if r.orphans:
        lines.append(
            f"[b red]orphaned sandboxes[/b red]  ({len(r.orphans)}; `staminad sandboxes --prune` removes them)"
        )
        for o in r.orphans:
            running = " (running)" if o.running else ""
            lines.append(f"  {o.kind} {literal(o.name)}{running} on {literal(o.engine)}: {literal(o.orphan)}")
    lines.append("[b]model endpoints[/b]")
    for p in r.endpoints:
        cap = f" of ${p.cap:.2f}" if p.cap else ""
        lines.append(
            f"  {literal(p.sweep)} · {literal(p.model)}: {p.calls} calls, {p.errors} errors, "
            f"{p.latency:.2f} s mean, ${p.spend:.2f}{cap}"
        )
    if not r.endpoints:
        lines.append("  [dim]no model calls recorded[/dim]")
    b = r.box
    lines.append("[b]box[/b]")
    lines.append(f"  load {b.load[0]:.2f} {b.load[1]:.2f} {b.load[2]:.2f} on {b.cpus} CPUs")
    lines.append(f"  memory {human_bytes(b.memory_total - b.memory_available)} used of {human_bytes(b.memory_total)}")
    for d in b.disks:
        ro = " (read-only)" if d.readonly else ""
        lines.append(f"  {d.role} disk {literal(d.path)}: {human_bytes(d.free)} free of {human_bytes(d.total)}{ro}")
    for g in b.gpus:
        held = ", ".join(g.processes) or "-"
        lines.append(
            f"  GPU {g.index} {literal(g.name)}: {g.util:.0f}%, "
            f"{human_bytes(g.memory_used)} of {human_bytes(g.memory_total)}, held by {literal(held)}"
        )
    if not b.gpus:
        lines.append(f"  GPUs: {literal(b.gpu_note or 'none')}")
    return "\n".join(lines)


SERIES = (
    ("load", lambda p: p.load),
    ("memory used", lambda p: p.memory_used),
    ("in slots", lambda p: float(p.active)),
    ("state free", lambda p: float(p.state_free)),
    ("GPU util", lambda p: max(p.gpu_util, 0.0)),
)


class BoxScreen(MonitorScreen):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("e", "events", "Event log"),
        Binding("question_mark", "help", "Help"),
    ]
    HELP_TITLE = "Box"
    KEY_HELP = [("escape", "back to the sweeps"), ("e", "the event log")]
    DEFAULT_CSS = """
    #box-text { height: auto; padding: 0 1; }
    .spark-row { height: 1; }
    .spark-row Label { width: 14; padding: 0 1; }
    .spark-row Sparkline { width: 1fr; height: 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.report: OpsReport | None = None
        self.frozen = False  # the snapshot tests show one fixed report: no refetch replaces it

    def compose(self) -> ComposeResult:
        yield Header()
        yield Banner(id="banner")
        with VerticalScroll():
            yield Static("asking the daemon...", id="box-text")
            for name, _ in SERIES:
                with Horizontal(classes="spark-row"):
                    yield Label(name)
                    yield Sparkline([], id=f"spark-{name.replace(' ', '-')}")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = "box"
        self.set_interval(EVERY, self._fetch)
        self.call_later(self._fetch)

    async def _fetch(self) -> None:
        if self.frozen or not self.stamina.connected:
            return
        got = await self.stamina.ask(GetOps(history=HISTORY), quiet=True)
        if isinstance(got, OpsReport) and not self.frozen:
            self.show(got)

    def show(self, report: OpsReport) -> None:
        self.report = report
        self.query_one("#box-text", Static).update(report_text(report))
        for name, get in SERIES:
            self.query_one(f"#spark-{name.replace(' ', '-')}", Sparkline).data = [get(p) for p in report.history]

    def resync(self) -> None:
        self.call_later(self._fetch)
