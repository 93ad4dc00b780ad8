"""Whose side a stopped container is on, from its state and the engine's lifecycle events (no Docker needed)."""

from __future__ import annotations

import pytest

from staminad.engine.outcome import is_platform
from staminad.sandbox.docker.bindsandbox import judge

STOPPED = {"Running": False, "ExitCode": 0}


@pytest.mark.parametrize(
    ("state", "actions", "kind"),
    [
        (STOPPED, {"start", "die"}, "sandbox_exited"),  # the init ended on its own: the harness's side
        (STOPPED, {"die", "kill"}, "sandbox_lost"),  # docker kill
        (STOPPED, {"die", "stop"}, "sandbox_lost"),
        ({"Running": True}, {"die", "start"}, "sandbox_lost"),  # restarted under the attempt
        (STOPPED, set(), "sandbox_lost"),  # no `die` on record: an engine restart empties its event log
        (STOPPED, None, "sandbox_lost"),  # events unreadable
    ],
)
def test_only_a_die_on_record_with_no_outside_action_is_the_harness_side(
    state: dict[str, object], actions: set[str] | None, kind: str
) -> None:
    """A stop is the harness's (`sandbox_exited`) only when the engine recorded a `die` and nothing from outside."""
    loss = judge("box", state, actions)
    assert loss.kind == kind and is_platform(loss.kind) == (kind == "sandbox_lost")
    if actions == set():
        assert "restarted?" in loss.detail
