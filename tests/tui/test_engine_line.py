"""The sweep screen's line per engine of a sweep spread over several."""

from protocol import EngineInfo
from tui.screens.sweep import _engine


def test_an_engine_line_says_its_scenarios_and_slots_or_that_it_is_down() -> None:
    """A healthy engine shows its share of the sweep and its slots; one that stopped answering says so."""
    up = EngineInfo(url="tcp://10.0.0.5:2376", slots=4, used=3, healthy=True, scenarios=2)
    down = EngineInfo(url="ssh://b@gpu3", slots=16, used=0, healthy=False, detail="/_ping: TimeoutError")
    assert _engine(up) == "\n[b]engine[/b] tcp://10.0.0.5:2376: 2 here, 3/4 slots"
    assert _engine(down) == "\n[b]engine[/b] ssh://b@gpu3: [b red]not answering[/b red]"
