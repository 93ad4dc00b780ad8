"""The harness registry: a module per harness, one record each (recipe, layer, transcript reader); one file adds one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import staminad
from staminad.agents.harnesses import HARNESSES, Harness, Layer, TranscriptReader
from staminad.agents.layers import layer_spec
from staminad.sandbox.docker.image import SUITES

PACKAGE = Path(staminad.__file__).parent / "agents" / "harnesses"
ROOT = PACKAGE.parents[2]


def test_the_registry_is_the_modules_of_the_package() -> None:
    """Every public module of `agents/harnesses/` is one harness named after it, and nothing else is one."""
    modules = {p.stem for p in PACKAGE.glob("*.py") if not p.name.startswith("_")}
    assert {name.replace("-", "_") for name in HARNESSES} == modules
    assert len(HARNESSES) == len(modules)


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_each_record_holds_its_recipe_layer_and_transcript_reader(name: str) -> None:
    """A record holds its recipe, its layer (reaching the image build as a LayerSpec) and its transcript reader."""
    h = HARNESSES[name]
    assert isinstance(h, Harness) and h.version
    assert all(callable(f) for f in (h.first, h.resume, h.env, h.files, h.parse, h.history))
    assert isinstance(h.layer, Layer) and h.layer.base in SUITES
    assert h.layer.install.partition(":")[0] in ("pypi", "npm")
    assert h.transcript is None or (
        isinstance(h.transcript, TranscriptReader) and h.transcript.patterns and callable(h.transcript.parse)
    )
    spec = layer_spec(name)
    assert (spec.name, spec.install, spec.base, spec.deps, spec.bins, spec.sdists, spec.carry, spec.ceiling) == (
        name,
        h.layer.install,
        h.layer.base,
        h.layer.deps,
        h.layer.bins,
        h.layer.sdists,
        h.layer.carry,
        h.layer.ceiling,
    )


TOY = '''
"""A toy harness: the whole of what a new harness adds."""

from ._kit import Harness, Layer, Report, TranscriptReader, Turn, json_lines

HARNESS = Harness(
    name="toy-agent",
    version="0.1.0",
    layer=Layer(install="pypi:toy-agent==0.1.0", base="trixie", deps=("pyyaml",), bins=(("toy", "toy/bin/toy"),)),
    first=lambda prompt, model: ["toy", "--yes", "-m", model, prompt],
    resume=lambda prompt, model, session: ["toy", "--yes", "-m", model, "--resume", session, prompt],
    env=lambda base, model: {"TOY_BASE_URL": base},
    parse=lambda out, err, code: Report(session="s", ok=code == 0),
    transcript=TranscriptReader(
        patterns=(".toy/*.jsonl",),
        parse=lambda text, cut: (Turn(str(r.get("role")), str(r.get("text")), ()) for r in json_lines(text)),
    ),
)
'''

CHECK = """
import json, sys
from pathlib import Path
from staminad.agents.base import adapter_for
from staminad.agents.layers import layer_spec
from staminad.agents.transcripts import read_transcript
home = Path(sys.argv[1]) / ".home"
(home / ".toy").mkdir(parents=True)
(home / ".toy" / "s.jsonl").write_text(json.dumps({"role": "assistant", "text": "hello"}) + "\\n")
a, spec, t = adapter_for("toy-agent"), layer_spec("toy-agent"), read_transcript(home, "toy-agent")
print(json.dumps({
    "image": a.image, "carried": "agents/harnesses/toy_agent.py" in a.layer(),
    "layer": [spec.base, list(spec.deps), [list(b) for b in spec.bins]],
    "transcript": [[i.role, i.text] for i in t.items] if t else None,
}))
"""


def test_adding_a_harness_is_one_file(tmp_path: Path) -> None:
    """One module added to `agents/harnesses/` is a whole new harness: agent, layer image, launcher, transcript."""
    tree = tmp_path / "tree"
    shutil.copytree(PACKAGE.parents[1], tree / "staminad", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "staminad" / "agents" / "harnesses" / "toy_agent.py").write_text(textwrap.dedent(TOY))
    done = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path)],
        env={"PYTHONPATH": f"{tree}:{ROOT}", "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,  # not the repository: its own staminad/ would come first
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["image"].startswith("staminabench/sandbox:toy-agent-") and found["carried"]
    assert found["layer"] == ["trixie", ["pyyaml"], [["toy", "toy/bin/toy"]]]
    assert found["transcript"] == [["assistant", "hello"]]


def test_a_module_without_its_record_fails_the_import(tmp_path: Path) -> None:
    """A module in the package that defines no HARNESS named after it stops the import, naming the file."""
    copy = tmp_path / "harnesses"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "half_done.py").write_text('"""Not a harness yet."""\n')
    done = subprocess.run(
        [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import harnesses", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "harnesses/half_done.py must define HARNESS" in done.stderr
