"""Generated packs stay byte for byte what they were: the sha256 of each pack's manifest (which lists the sha256 of
every file) for seeds 0-19 at 100 turns and one 1,000-turn pack, checked in as a golden file so that a speed-up of
the generator can be shown to change nothing (regenerate with UPDATE_GOLDEN=1 only when the generator version moves).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from staminad.bench.pack import build_pack
from staminad.bench.scenario import ScenarioParams

GOLDEN = Path(__file__).parent.parent / "golden" / "pack-digests.json"

CASES = [
    *(f"100/{sampler}/themed/{seed}" for sampler in ("uniform", "weighted") for seed in range(20)),
    *(f"100/{sampler}/programmatic/{seed}" for sampler in ("uniform", "weighted") for seed in range(5)),
    # ~3.7 s of CPU since the naming rules of generator version 3 (2.5 s before): near the fast tier's budget
    pytest.param("1000/weighted/themed/0", marks=pytest.mark.slow),
]


def _digest(case: str) -> str:
    turns, sampler, naming, seed = case.split("/")
    params = ScenarioParams(turns=int(turns), sampler=sampler, naming=naming)  # type: ignore[arg-type]
    return hashlib.sha256(build_pack([int(seed)], params)["manifest.json"]).hexdigest()


@pytest.mark.parametrize("case", CASES)
def test_pack_matches_its_recorded_digest(case: str) -> None:
    """A pack built for (turns, sampler, naming, seed) has the manifest digest recorded for it."""
    digest = _digest(case)
    recorded = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("UPDATE_GOLDEN"):
        recorded[case] = digest
        GOLDEN.write_text(json.dumps(dict(sorted(recorded.items())), indent=2) + "\n")
    assert recorded.get(case) == digest
