"""Named start rewards for comparisons, and `NAME:feature=w,...` specs.

A comparison (`experiments/compare.py`) starts SAILOR from a reward that a person or an
LLM might plausibly write but that trains a poor agent, and asks whether the judge's
preferences repair it. `STARTS` holds the named ones, each with the one-sentence reason why
someone might write it; `parse_start` also accepts any other start written out, so repair can
be tried from any theta without editing code.
"""

from __future__ import annotations

import dataclasses

from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import BASELINE_THETA, RewardSpec, theta_from

SEVERITIES = ("", "mild", "gross")
"""How far a start kept fixed falls below theta0 kept fixed (the screen: 8 paired seeds,
the comparison's `cpu` preset, ~1M env steps): mild 10-30% below, gross more; "" not screened."""
GROSS_SHORTFALL, MILD_SHORTFALL = 0.30, 0.10
"""The bands of `SEVERITIES`: a start kept fixed whose mean falls more than `GROSS_SHORTFALL`
below theta0's kept fixed (a share of theta0's mean) is gross; from `MILD_SHORTFALL` to that,
mild; less, good (no repair needed: the screen kept no such start)."""


def severity(shortfall: float) -> str:
    """`gross`, `mild` or `good` from a start's shortfall below theta0 (a share, `float`)."""
    if shortfall > GROSS_SHORTFALL:
        return "gross"
    return "mild" if shortfall >= MILD_SHORTFALL else "good"


@dataclasses.dataclass(frozen=True)
class Start:
    """A starting reward: its name, weights (`float[F]`, feature order) and why one writes it."""

    name: str
    theta: tuple[float, ...]
    why: str
    severity: str = ""
    """One of `SEVERITIES`: what the screen measured."""


def _start(name: str, weights: dict[str, float], why: str, severity: str = "") -> Start:
    try:
        theta = theta_from(weights)
    except ValueError as e:
        raise ValueError(f"start {name!r}: {e}") from None
    RewardSpec().validate(theta)
    if severity not in SEVERITIES:
        raise ValueError(f"start {name!r}: severity must be one of {SEVERITIES}, got {severity!r}")
    return Start(name, theta, why, severity)


STARTS: dict[str, Start] = {s.name: s for s in (
    _start("theta0", BASELINE_THETA,
           "The seed plan's baseline reward: score, a small corner bonus, a game-over penalty."),
    _start("ones", dict.fromkeys(FEATURE_NAMES, 1.0),
           "Every weight 1.0: Zeng et al. 2024's uninformed start, for a designer with no "
           "opinion on the weights."),
    _start("pays_for_dying", {"score_gain": 0.05, "empty_cells": -0.5, "game_over": 1.0},
           "Mistakes the terminal condition for the goal ('the game is played until the board "
           "is full'): pays for filled cells and for reaching the end, with score an "
           "afterthought."),
    _start("hoards_merges", {"score_gain": 0.1, "merges_available": 1.0, "smoothness": 1.0},
           "Rewards the strategy guides' heuristics for their own sake (keep merges available, "
           "keep neighbouring tiles alike) and leaves score to follow from them, as an LLM "
           "asked for a 'strategic' reward tends to write."),
    _start("score_only", {"score_gain": 1.0},
           "The game's own reward and nothing else: the score gained by each merge."),
    _start("chases_max_tile", {"max_tile_increase": 1.0},
           "Rewards only what the game is about, a new largest tile, and nothing on the way: "
           "the sparse 'reward the outcome' design that a person or an LLM writes when told "
           "not to shape."),
    # The screen (benchmarks/results/start_screen): kept fixed, 8 paired seeds at ~1M
    # env steps, theta0 11,877; kept only those at least 10% below it.
    _start("corner_obsessed", {"score_gain": 0.01, "max_tile_in_corner": 1.0, "game_over": -1.0},
           "A scale error: the score term shrunk 100 times ('scores run into the thousands') "
           "while the corner bonus stays at full weight, so keeping the largest tile in a "
           "corner outweighs merging (kept fixed: 9,841, 17% below theta0).", "mild"),
    _start("free_cells_only", {"empty_cells": 1.0, "game_over": -1.0},
           "Takes the strategy guides' 'keep as many cells free as you can' for the whole "
           "objective, with a death penalty and no score (kept fixed: 7,350, 38% below "
           "theta0).", "gross"),
    _start("timid", {"score_gain": 0.05, "game_over": -1.0},
           "Fears the end: a death penalty worth twenty moves of score, so staying alive "
           "outweighs merging toward large tiles (kept fixed: 8,340, 30% below theta0, at the "
           "edge of mild).", "mild"),
    _start("score_as_cost", {"score_gain": -1.0, "max_tile_in_corner": 0.1, "game_over": -1.0},
           "A sign error: theta0 written as a cost to minimise, the score term negated as in a "
           "loss, and handed to a maximiser, so every merge is punished (kept fixed: 224, 98% "
           "below theta0).", "gross"),
    _start("crowds_the_board", {"score_gain": 1.0, "empty_cells": -1.0, "game_over": -1.0},
           "A sign error on a per-move term: free cells penalised as 'wasted space', so every "
           "move costs up to 1 and filling the board, which ends the game, is the way out "
           "(kept fixed: 1,654, 86% below theta0).", "gross"),
    _start("disorder_bonus",
           {"score_gain": 1.0, "max_tile_in_corner": 0.1, "monotonicity": -1.0,
            "game_over": -1.0},
           "theta0 plus a monotonicity term of the wrong sign, written as if the feature "
           "measured disorder: a per-move cost near 1 on tidy boards, so ending the game pays "
           "(kept fixed: 208, 98% below theta0).", "gross"),
    _start("rough_board", {"score_gain": 1.0, "smoothness": -1.0, "game_over": -1.0},
           "'Penalise differences between neighbouring tiles' written on a feature that "
           "already counts smoothness (1 = smooth): a per-move cost of ~0.9 that only the "
           "game's end stops (kept fixed: 121, 99% below theta0).", "gross"),
    _start("merges_only", {"merges_available": 1.0},
           "Rewards a strategy guide's heuristic for its own sake, keeping merges available, "
           "with no score and no death term: the board is kept ripe but rarely cashed in "
           "(kept fixed: 5,233, 56% below theta0).", "gross"),
)}
"""The named starts, by name."""


def parse_start(spec: str) -> Start:
    """A start from its name in `STARTS`, or written out as `NAME:feature=w,feature=w,...`.

    Features not written out get weight 0. Names and weights are checked against the feature
    names and the reward bounds (`RewardSpec.validate`).

    Raises:
      ValueError: unknown name, malformed spec, unknown feature, non-numeric or out-of-bounds
        weight (the message says which and lists what is known).
    """
    if ":" not in spec:
        if spec not in STARTS:
            raise ValueError(f"unknown start {spec!r}; named starts: {', '.join(STARTS)}; "
                             "or write one out as NAME:feature=w,feature=w")
        return STARTS[spec]
    name, _, body = spec.partition(":")
    if not name or not body:
        raise ValueError(f"start {spec!r}: expected NAME:feature=w,feature=w")
    weights = {}
    for item in body.split(","):
        feature, eq, value = item.partition("=")
        try:
            weights[feature.strip()] = float(value)
        except ValueError:
            raise ValueError(f"start {spec!r}: {item!r} is not feature=number") from None
        if not eq:
            raise ValueError(f"start {spec!r}: {item!r} is not feature=number")
    return _start(name, weights, "written out on the command line")


def start_name(start: tuple[float, ...] | None) -> str:
    """What a run's start reward is called: the name of the named start with these weights
    (`STARTS`; None is theta0), else "a written-out start"."""
    theta = STARTS["theta0"].theta if start is None else tuple(float(w) for w in start)
    return next((s.name for s in STARTS.values() if s.theta == theta), "a written-out start")
