"""Scenario packs: the files that fix a set of scenarios so runs are reproducible and shareable.

Pure functions over `{relative path: bytes}`; the caller does the disk I/O (`staminad.packio`).
A pack holds a manifest (generator version, parameters, sha256 of every file), per scenario
`scenario.json` (s_0 and every a_t) and the rendered texts of every turn. Building twice with the
same arguments gives byte-identical files; loading refuses a pack whose files do not match the
manifest, naming the first file that differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from typing import Annotated

import msgspec

from protocol.errors import UsageError
from staminad.bench.readme import render_readme
from staminad.bench.scenario import GENERATOR_VERSION, Scenario, ScenarioParams, generate
from staminad.bench.seeds import MAX_SEED, MAX_SEEDS
from staminad.bench.texts import initial_prompt, render_change_prompt, render_spec

PACK_FORMAT = "staminabench-pack/1"


class PackError(UsageError, ValueError):
    """A pack that is malformed, tampered with, or from another generator version."""


class Sampling(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How an LLM-sampled pack was made (the pack itself replays without the model)."""

    model: str
    endpoint: str
    proposals: int  # change batches and initial designs the model proposed
    rejected: int  # proposals refused as invalid against the action space
    fallbacks: int  # turns (or initial designs) drawn procedurally after repeated rejections


# A manifest's seeds keep the bounds a seed list has (a hand-edited one must not reach the store unchecked).
Seed = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEED)]


class Manifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    format: str
    generator_version: str
    params: ScenarioParams
    seeds: Annotated[tuple[Seed, ...], msgspec.Meta(max_length=MAX_SEEDS)]
    files: dict[str, str]  # relative path -> sha256 hex
    sampling: Sampling | None = None


_ENC = msgspec.json.Encoder(order="sorted")
_MANIFEST_DEC = msgspec.json.Decoder(Manifest)
_SCENARIO_DEC = msgspec.json.Decoder(Scenario)


def scenario_dir(seed: int) -> str:
    return f"scenarios/seed-{seed:05d}"


def prompt_path(seed: int, turn: int) -> str:
    return f"{scenario_dir(seed)}/texts/prompt-{turn:04d}.md"


def spec_path(seed: int) -> str:
    return f"{scenario_dir(seed)}/texts/initial_specification.md"


README_PATH = "texts/README.md"


def scenario_texts(scenario: Scenario, language: str) -> dict[str, bytes]:
    """The agent-facing texts of one scenario: its spec and the prompt of every turn."""
    seed = scenario.seed
    files = {
        spec_path(seed): render_spec(scenario.initial).encode(),
        prompt_path(seed, 0): initial_prompt(language).encode(),
    }
    for t, (batch, states) in enumerate(zip(scenario.turns, scenario.steps, strict=True), 1):
        files[prompt_path(seed, t)] = render_change_prompt(batch, states).encode()
    return files


def build_pack(
    seeds: Iterable[int],
    params: ScenarioParams,
    scenarios: Mapping[int, Scenario] | None = None,
    sampling: Sampling | None = None,
) -> dict[str, bytes]:
    """Every file of a pack, manifest included; `scenarios` given (LLM-sampled) are stored as they are."""
    files: dict[str, bytes] = {README_PATH: render_readme(params.language).encode()}
    seed_list = tuple(seeds)
    for seed in seed_list:
        scenario = scenarios[seed] if scenarios is not None else generate(seed, params, keep_steps=True)
        files[f"{scenario_dir(seed)}/scenario.json"] = _ENC.encode(scenario) + b"\n"
        files.update(scenario_texts(scenario, params.language))
    digests = {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())}
    manifest = Manifest(
        format=PACK_FORMAT,
        generator_version=GENERATOR_VERSION,
        params=params,
        seeds=seed_list,
        files=digests,
        sampling=sampling,
    )
    files["manifest.json"] = msgspec.json.format(_ENC.encode(manifest), indent=2) + b"\n"
    return files


class Pack(msgspec.Struct, frozen=True, kw_only=True):
    """A verified pack in memory."""

    manifest: Manifest
    files: Mapping[str, bytes]

    @property
    def params(self) -> ScenarioParams:
        return self.manifest.params

    def scenario(self, seed: int) -> Scenario:
        if seed not in self.manifest.seeds:
            raise PackError(f"seed {seed} is not in this pack (it holds {_seed_ranges(self.manifest.seeds)})")
        try:
            return _SCENARIO_DEC.decode(self.files[f"{scenario_dir(seed)}/scenario.json"])
        except msgspec.ValidationError as exc:
            raise PackError(f"{scenario_dir(seed)}/scenario.json: {exc}") from None

    def text(self, path: str) -> str:
        return self.files[path].decode()

    def readme(self) -> str:
        return self.text(README_PATH)

    def prompt(self, seed: int, turn: int) -> str:
        if not 0 <= turn <= self.params.turns:
            raise PackError(f"turn {turn} is outside 0..{self.params.turns}")
        return self.text(prompt_path(seed, turn))


def _seed_ranges(seeds: Iterable[int]) -> str:
    s = sorted(seeds)
    if not s:
        return "no seeds"
    return f"seeds {s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) else "seeds " + ",".join(map(str, s))


def load_manifest(data: bytes) -> Manifest:
    try:
        manifest = _MANIFEST_DEC.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise PackError(f"manifest.json is not a valid pack manifest: {exc}") from None
    if manifest.format != PACK_FORMAT:
        raise PackError(f"manifest.json has format {manifest.format!r}, expected {PACK_FORMAT!r}")
    if manifest.generator_version != GENERATOR_VERSION:
        raise PackError(
            f"pack was made by generator version {manifest.generator_version}, "
            f"this is version {GENERATOR_VERSION}; regenerate it"
        )
    return manifest


def verify_pack(files: Mapping[str, bytes], irregular: Collection[str] = ()) -> Pack:
    """Check every file against the manifest's sha256; raise PackError naming the first mismatch.

    `irregular`: paths the pack holds that were not read, not being regular files (a FIFO, a device, a link to
    one), so that one of them is named for what it is rather than as missing."""
    if "manifest.json" not in files:
        if "manifest.json" in irregular:
            raise PackError("manifest.json is not a regular file: not a scenario pack")
        raise PackError("manifest.json is missing: not a scenario pack")
    manifest = load_manifest(files["manifest.json"])
    for path, digest in manifest.files.items():
        data = files.get(path)
        if data is None:
            if path in irregular:
                raise PackError(f"{path} is listed in the manifest but is not a regular file")
            raise PackError(f"{path} is listed in the manifest but missing")
        if hashlib.sha256(data).hexdigest() != digest:
            raise PackError(f"{path} does not match its sha256 in the manifest (the pack was modified)")
    extra = sorted(set(files) - set(manifest.files) - {"manifest.json"})
    if extra:
        raise PackError(f"{extra[0]} is not listed in the manifest")
    return Pack(manifest=manifest, files=files)
