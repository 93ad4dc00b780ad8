"""The static site's comparison pages (`staminad.viewer.site.comparisons`): the best configuration against the others,
and each harness across the sweep's models."""

from __future__ import annotations

from staminad.viewer.rows import ConfigSummary
from staminad.viewer.site import comparisons


def _config(agent: str, model: str, mean: float | None, retries: int = 0) -> ConfigSummary:
    name = f"{agent} {model} R={retries} detailed" if model else f"{agent} R={retries} detailed"
    return ConfigSummary(
        name=name,
        agent=agent,
        model=model,
        retries=retries,
        feedback="detailed",
        scenarios=1,
        finished=1,
        mean=mean,
        se=0.0,
        pass_rate=0.0,
        scored=1,
        unscored=0,
        unfinished=0,
        never_run=0,
        counts="n=1",
        not_final="",
        statuses={"failed": 1},
        cost=None,
        tokens=None,
        n_turns=3,
    )


def test_each_harness_is_compared_across_the_models_beside_the_best_against_the_rest() -> None:
    """Each harness is compared across models beside the best-against-the-rest comparisons."""
    configs = [
        _config(h, m, mean)
        for h, means in (("mini-swe-agent", (2.0, 1.0)), ("claude-code", (1.0, 0.0)), ("codex", (0.0, 2.0)))
        for m, mean in zip(("model-a", "model-b"), means, strict=True)
    ]
    pairs = comparisons(configs)
    best = "mini-swe-agent model-a R=0 detailed"
    assert pairs[:5] == [(best, c.name) for c in configs[1:]]
    assert pairs[5:] == [
        ("claude-code model-a R=0 detailed", "claude-code model-b R=0 detailed"),
        ("codex model-a R=0 detailed", "codex model-b R=0 detailed"),
    ]


def test_one_model_or_different_retries_add_no_cross_model_pair() -> None:
    """Configurations that differ in R (not in model), or a store naming no model, add nothing past best vs rest."""
    configs = [_config("mini-swe-agent", "m", 1.0, 0), _config("mini-swe-agent", "m", 2.0, 1), _config("x", "", 0.5)]
    assert comparisons(configs) == [
        ("mini-swe-agent m R=1 detailed", "mini-swe-agent m R=0 detailed"),
        ("mini-swe-agent m R=1 detailed", "x R=0 detailed"),
    ]
    assert comparisons([]) == []
