"""sailor_lab/starts.py: named starting rewards and NAME:feature=w specs, with bad input."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import THETA0, RewardSpec
from sailor_lab.starts import STARTS, parse_start


def test_named_starts_are_valid_thetas_with_a_reason():
    assert {"theta0", "ones", "pays_for_dying", "hoards_merges"} <= set(STARTS)
    assert STARTS["theta0"].theta == THETA0
    assert STARTS["ones"].theta == (1.0,) * len(FEATURE_NAMES)
    dying = dict(zip(FEATURE_NAMES, STARTS["pays_for_dying"].theta, strict=True))
    assert dying["game_over"] > 0 and dying["empty_cells"] < 0 and dying["score_gain"] < 0.1
    for name, start in STARTS.items():
        assert start.name == name and len(start.theta) == len(FEATURE_NAMES)
        assert len(start.why) > 20 and start.why.endswith(".")
        RewardSpec().validate(start.theta)
        assert parse_start(name) is start
        assert start.severity in ("", "mild", "gross")


def test_screened_starts_carry_the_severity_their_screen_measured():
    """Each start with a severity is the one the committed screen kept fixed (same
    weights) and its severity is what the screen's scores say: mild 10-30% below theta0's
    mean, gross more; the screen's other starts (less than 10% below) are not in STARTS."""
    path = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "results",
                        "start_screen", "repair.json.gz")
    with gzip.open(path, "rt") as f:
        screen = json.load(f)
    mean = {r["start"]: float(np.mean(r["per_seed"]["score"])) for r in screen["rows"]}
    below = {name: 1 - mean[name] / mean["theta0"] for name in mean if name != "theta0"}
    measured = {name: "mild" if b <= 0.3 else "gross" for name, b in below.items() if b >= 0.1}
    assert {n: s.severity for n, s in STARTS.items() if s.severity} == measured
    for name in measured:
        assert STARTS[name].theta == tuple(screen["starts"][name]["theta"])
    assert len(measured) >= 8 and {"mild", "gross"} == set(measured.values())


def test_a_start_with_an_unknown_severity_is_refused():
    from sailor_lab.starts import _start

    with pytest.raises(ValueError, match="severity must be one of"):
        _start("x", {"score_gain": 1.0}, "A reason long enough to pass.", "terrible")


def test_written_out_start():
    s = parse_start("mine:score_gain=0.25, game_over=-1")
    assert s.name == "mine" and s.theta == (0.25,) + (0.0,) * 6 + (-1.0,)


@pytest.mark.parametrize("spec, match", [
    ("nope", "unknown start 'nope'.*pays_for_dying"),
    ("mine:", "expected NAME:feature=w"),
    (":score_gain=1", "expected NAME:feature=w"),
    ("mine:score_gain", "not feature=number"),
    ("mine:score_gain=high", "not feature=number"),
    ("mine:score=1", "unknown feature name"),
    ("mine:score_gain=2", "bound"),
    ("mine:score_gain=nan", "finite|bound"),
])
def test_bad_start_specs_say_what_is_wrong(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_start(spec)
