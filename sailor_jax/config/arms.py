"""Named configurations of SAILOR: the arms a comparison runs, in one table.

`SailorConfig()` is the recommended SAILOR; every other arm is a name and the fields it changes,
from `SailorConfig()` or from another arm (`Arm.base`). A field is named by its dotted path
(`"alignment.method"`). `arm_config(name, cfg)` applies an arm to a run's config (its budget,
seeds, network and judge), so the comparison experiment (`experiments/compare.py`) runs every
arm at the same sizes.

`PAPER_CHANGES` are the fields in which `PAPER`, the paper's update (Zeng et al. 2024: BO on
whole games, every judged game the agent's), differs from `SailorConfig()`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from sailor_jax.config.run import PAPER, SailorConfig
from sailor_jax.game.features import FEATURE_NAMES

CONSTRAINED_TUNABLE: tuple[str, ...] = tuple(n for n in FEATURE_NAMES if n != "score_gain")
"""The weights `paper_constrained` may change: all but the score's (constrained editing)."""


@dataclasses.dataclass(frozen=True)
class Arm:
    """One named configuration: what it is, the fields it changes, and from which arm."""

    what: str
    """One line: what this arm runs."""
    changes: Mapping[str, object]
    """Dotted field path -> value, applied after `base`'s changes."""
    base: str | None = None
    """The arm whose changes come first; None = `SailorConfig()`'s fields."""
    control: str | None = None
    """Its random-judge control: the arm with the same update and a judge with no information
    (the comparison reports the paired difference to it)."""


def leaf_fields(cfg: object, prefix: str = "") -> dict[str, object]:
    """Every leaf field of a nested config dataclass, by dotted path."""
    out = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            out.update(leaf_fields(value, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = value
    return out


def _difference(a: object, b: object) -> dict[str, object]:
    """The leaf fields in which config `b` differs from config `a`, with `b`'s values."""
    fa, fb = leaf_fields(a), leaf_fields(b)
    return {k: v for k, v in fb.items() if fa[k] != v}


PAPER_CHANGES = MappingProxyType(_difference(SailorConfig(), PAPER))
"""The fields of `PAPER` that differ from `SailorConfig()` (window, group, warm-up, update)."""

_RANDOM = {"ranker.kind": "random"}

ARMS: Mapping[str, Arm] = MappingProxyType({
    "fixed": Arm("the start kept fixed: no judge, theta never changes",
                 {"self_align": False}, base="paper"),
    "sailor": Arm("the recommended SAILOR, `SailorConfig()`, judged by the run's judge",
                  {}, control="sailor_random_judge"),
    "sailor_random_judge": Arm("its control: the same update fitted to a uniformly random "
                               "order (a judge with no information)", _RANDOM),
    "sailor_evidence": Arm("the recommended SAILOR with the judge-evidence gate: an update is "
                           "accepted only while the judge's earlier held-out tests combine to "
                           "z >= 3", {"alignment.evidence_z": 3.0},
                           control="sailor_evidence_random_judge"),
    "sailor_evidence_random_judge": Arm("its control: the gated update fitted to a uniformly "
                                        "random order", _RANDOM, base="sailor_evidence"),
    "sailor_reliability": Arm("SAILOR with the reliability update: theta and the judge's "
                              "reliability sampled jointly (NUTS) on all of each group's "
                              "judged pairs, the posterior carried from update to update, "
                              "a step to theta's posterior mean",
                              {"alignment.method": "bt_reliability", "alignment.heldout": 0.0},
                              control="sailor_reliability_random_judge"),
    "sailor_reliability_random_judge": Arm("its control: the reliability update fitted to a "
                                           "uniformly random order", _RANDOM,
                                           base="sailor_reliability"),
    "sailor_value": Arm("the recommended SAILOR judged by the expert's value verdict (score "
                        "gained + change of the expert's value of the position)",
                        {"ranker.kind": "expert", "ranker.expert_verdict": "value"},
                        control="sailor_random_judge"),
    "sailor_outcome": Arm("the recommended SAILOR judged by the score gained in a window",
                          {"ranker.kind": "outcome"}, control="sailor_random_judge"),
    "sailor_llm": Arm("the recommended SAILOR judged by the LLM the run's config names",
                      {"ranker.kind": "llm"}, control="sailor_random_judge"),
    "paper": Arm("the paper's update (`PAPER`): BO on 8 whole games of the agent, accepted "
                 "when it lowers the fitted pairs' error", PAPER_CHANGES,
                 control="paper_random_judge"),
    "paper_random_judge": Arm("its control: BO fitted to a random order", _RANDOM,
                              base="paper"),
    "paper_trust": Arm("the paper's update, BO confined to +-0.25 around the current theta",
                       {"alignment.trust_region": 0.25}, base="paper",
                       control="paper_random_judge"),
    "paper_bt_mcmc": Arm("the paper's Bradley-Terry MCMC update (posterior mean) on whole games",
                         {"alignment.method": "bt_mcmc"}, base="paper",
                         control="paper_random_judge"),
    "paper_constrained": Arm("the paper's update with the score weight fixed (constrained "
                             "editing)", {"tunable": CONSTRAINED_TUNABLE}, base="paper",
                             control="paper_random_judge"),
    "paper_weighted_confidence": Arm("the paper's update, pairs weighted by the judge's "
                                     "confidence |2p - 1|",
                                     {"preferences.weighting": "confidence"}, base="paper",
                                     control="paper_random_judge"),
    "paper_weighted_discrepancy": Arm("the paper's update, pairs weighted by the judge's rank "
                                      "distance", {"preferences.weighting": "discrepancy"},
                                      base="paper", control="paper_random_judge"),
    "paper_refine": Arm("the paper's update plus LLM-guided refinement when the score stalls",
                        {"refine.enabled": True}, base="paper", control="paper_random_judge"),
})
"""Every named configuration. The default arms of a comparison are `DEFAULT_ARMS`."""

DEFAULT_ARMS: tuple[str, ...] = ("fixed", "sailor", "sailor_random_judge", "paper")
"""The start kept fixed, the recommended SAILOR, its random-judge control, the paper's update."""


def replace_fields(cfg, changes: Mapping[str, object]):
    """`cfg` (a nested frozen dataclass) with the dotted-path `changes` applied, all fields of
    one dataclass at once (so that no half-changed config is validated).

    Raises:
      ValueError: a path that names no field, or a value the config's validation refuses.
    """
    grouped: dict[str, dict[str, object]] = {}
    direct: dict[str, object] = {}
    names = {f.name for f in dataclasses.fields(cfg)}
    for path, value in changes.items():
        head, _, rest = path.partition(".")
        if head not in names:
            raise ValueError(f"{type(cfg).__name__} has no field {head!r} (from {path!r})")
        if rest:
            grouped.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    nested = {}
    for head, sub in grouped.items():
        try:
            nested[head] = replace_fields(getattr(cfg, head), sub)
        except ValueError as e:  # the message names the field by its full path
            said = str(e)
            first = {path.partition(".")[0] for path in sub}
            named = next((f for f in first if said.startswith((f"{f} ", f"{f}."))), None)
            raise ValueError(f"{head}.{said}" if named else said) from None
    return dataclasses.replace(cfg, **direct, **nested)


def arm_changes(name: str, arms: Mapping[str, Arm] = ARMS) -> dict[str, object]:
    """The fields arm `name` of `arms` changes from `SailorConfig()`'s, its bases' first.

    Raises:
      KeyError: an unknown arm (the message lists the known ones).
    """
    if name not in arms:
        raise KeyError(f"unknown arm {name!r}; known: {', '.join(arms)}")
    arm = arms[name]
    return {**(arm_changes(arm.base, arms) if arm.base else {}), **arm.changes}


def arm_config(name: str, cfg: SailorConfig, arms: Mapping[str, Arm] = ARMS) -> SailorConfig:
    """Arm `name` applied to `cfg` (a run's sizes, budget, seeds and judge over the recommended
    settings): `cfg` with the arm's changed fields set, without the baseline rows (a comparison
    runs the start kept fixed as its own arm).

    Raises:
      KeyError: an unknown arm.
    """
    return replace_fields(dataclasses.replace(cfg, baseline=False), arm_changes(name, arms))
