"""benchmarks/results/decide_theta0/level_shape/level_shape.py: the per-move level of a reward,
its scale-free form, and the starts that cross the level of one reward with the shape of
another."""

from __future__ import annotations

import numpy as np
import pytest
from support import load_script

from sailor_jax.errors import UserError
from sailor_jax.game.features import FEATURE_NAMES
from sailor_lab.starts import STARTS, parse_start

RNG = np.random.default_rng(0)
FEATS = RNG.uniform(0, 1, (5000, len(FEATURE_NAMES)))
FEATS[:, -1] = RNG.uniform(0, 1, 5000) < 0.001  # game_over fires on the last move only
MEAN, COV, GAMMA = FEATS.mean(0), np.cov(FEATS, rowvar=False), 0.997


@pytest.fixture(scope="module")
def ls():
    return load_script("benchmarks/results/decide_theta0/level_shape/level_shape.py")


def test_levels_leave_the_terminal_weight_out_of_the_per_move_level(ls):
    theta = np.array(STARTS["theta0"].theta)
    got = ls.levels(theta, MEAN, COV, GAMMA)
    per_move = np.where(np.array(FEATURE_NAMES) == "game_over", 0.0, theta)
    r = FEATS @ per_move  # the per-move reward of every move, by hand
    assert got["level"] == pytest.approx(r.mean())
    assert got["reward_sd"] == pytest.approx(r.std(ddof=1))
    assert got["effective_level"] == pytest.approx(r.mean() + (1 - GAMMA) / GAMMA)  # w = -1
    assert got["scale_free_level"] == pytest.approx(got["effective_level"] / got["reward_sd"])
    scaled = ls.levels(3 * theta, MEAN, COV, GAMMA)  # the scale-free level has no scale
    assert scaled["scale_free_level"] == pytest.approx(got["scale_free_level"])


@pytest.mark.parametrize(("shape", "level_of"), [("theta0", "ones"), ("ones", "theta0")])
def test_a_crossed_start_has_one_rewards_shape_and_the_others_level(ls, shape, level_of):
    target = ls.levels(STARTS[level_of].theta, MEAN, COV, GAMMA)["scale_free_level"]
    theta = np.array(ls.crossed(STARTS[shape].theta, target, MEAN, COV, GAMMA))
    assert np.abs(theta).max() == pytest.approx(1.0)  # within the weights' bounds
    assert ls.levels(theta, MEAN, COV, GAMMA)["scale_free_level"] == pytest.approx(target)
    per_move = np.array(STARTS[shape].theta)[:-1]
    assert theta[:-1] / theta[:-1].max() == pytest.approx(per_move / per_move.max())
    start = parse_start(ls.spec("crossed", theta))
    assert start.name == "crossed" and np.allclose(start.theta, theta, rtol=1e-5)


def test_a_run_without_theta0_kept_fixed_is_one_error(ls, tmp_path):
    with pytest.raises(UserError, match="no finished theta0.fixed"):
        ls.blocks(str(tmp_path))
