"""The recommended setting is the default: a config field that every preset sets alike has that
value as its default, or is a named exception that the presets' `--help` explains."""

from __future__ import annotations

import dataclasses

from support import load_script

from sailor_jax.config import LLMRankerConfig, SailorConfig

PRESET_CHOICES = {"ppo.network.hidden_sizes": ("64x64 trunk", "the (256, 256) default trains")}
"""Fields every preset sets alike to a value other than the default: the words each of
`experiments/sailor.py`'s preset lines (`--help`) shows the choice with, and the words of the
`cpu` preset's line that say why (the (256, 256) default trains at 0.2-0.3 of the (64, 64)
trunk's env steps/s on 2 CPU cores; the repair table measured the (64, 64) one)."""


def flat(config, prefix: str = "") -> dict[str, object]:
    """`{dotted field path: value}` of a config dataclass, nested configs flattened."""
    out = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value):
            out |= flat(value, f"{prefix}{field.name}.")
        else:
            out[prefix + field.name] = value
    return out


def preset_configs() -> dict[str, SailorConfig]:
    """Every preset of the main job and of the comparison, by name."""
    sailor, compare = load_script("experiments/sailor.py"), load_script("experiments/compare.py")
    return {**{f"sailor.{k}": v for k, v in sailor.PRESETS.items()},
            **{f"compare.{k}": v[1] for k, v in compare.PRESETS.items()}}


def test_every_default_is_the_presets_choice_or_a_named_exception():
    default, presets = flat(SailorConfig()), {k: flat(v) for k, v in preset_configs().items()}
    assert len(presets) >= 5 and all(p.keys() == default.keys() for p in presets.values())
    agreed = {path: values.pop() for path in default
              if len(values := {repr(p[path]) for p in presets.values()}) == 1}
    assert "ranker.llm.mode" in agreed and "seed" in agreed
    differs = {path for path, value in agreed.items() if value != repr(default[path])}
    assert differs == set(PRESET_CHOICES), differs
    sailor = load_script("experiments/sailor.py")
    for shown, why in PRESET_CHOICES.values():
        assert all(shown in line for line in sailor.PRESET_HELP.values()), shown
        assert why in sailor.PRESET_HELP["cpu"], why


def test_the_judge_benchmarks_measure_the_presets_judge():
    """`judge_quality.py --judge llm` with no mode flag measures the presets' pointwise judge."""
    modes = {c.ranker.llm.mode for c in preset_configs().values()}
    assert modes == {"pointwise"} == {LLMRankerConfig().mode}
    assert load_script("benchmarks/judge_quality.py").Args().llm.mode == "pointwise"
