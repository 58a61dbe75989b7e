"""Which theta entries a group's feature sums can identify."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from sailor_jax.agents.rollout import cut_windows, make_act_collect
from sailor_jax.game.expert import expert_act
from sailor_jax.game.features import FEATURE_NAMES
from sailor_lab.identifiability import feature_spread, unidentifiable

M = 8


@pytest.fixture(scope="module")
def games():
    """16 finished games of the uniform random player (2 groups of 8)."""
    collect = make_act_collect(expert_act(1, 1.0), 2 * M, 400)
    batch = jax.device_get(collect(jax.random.key(0)))
    assert not np.any(batch.truncated)  # every game ended: Phi[game_over] = 1
    return batch


def _groups(batch):
    return ([np.asarray(batch.Phi)[g * M:(g + 1) * M] for g in range(2)],
            [np.asarray(batch.lengths)[g * M:(g + 1) * M] for g in range(2)])


def test_game_over_is_flagged_on_finished_whole_games(games):
    phis, lengths = _groups(games)
    rows = feature_spread(phis, FEATURE_NAMES, lengths=lengths)
    by_name = {r["feature"]: r for r in rows}
    assert by_name["game_over"]["constant_fraction"] == 1.0
    assert by_name["game_over"]["rel_spread"] == 0.0
    assert unidentifiable(rows) == ["game_over"]
    assert by_name["score_gain"]["corr_length"] > 0.5  # whole-game sums grow with length


def test_game_over_varies_on_windows_that_cut_some_games(games):
    window = int(np.median(games.lengths))  # shorter games stay whole, longer ones are cut
    windows = jax.device_get(jax.jit(cut_windows, static_argnums=2)(games, jax.random.key(1),
                                                                   window))
    assert np.any(windows.truncated) and not np.all(windows.truncated)
    phis, _ = _groups(windows)
    rows = {r["feature"]: r for r in feature_spread(phis, FEATURE_NAMES)}
    assert rows["game_over"]["constant_fraction"] == 0.0
    assert rows["game_over"]["identifiable"]


def test_hand_computed_spread_and_bad_shapes():
    phi = np.array([[1.0, 2.0], [1.0, 4.0]])
    (a, b) = feature_spread([phi], ["a", "b"])
    assert a == {"feature": "a", "rel_spread": 0.0, "constant_fraction": 1.0,
                 "identifiable": False}
    assert b["rel_spread"] == pytest.approx(1.0 / 3.0) and b["identifiable"]
    with pytest.raises(ValueError, match="M >= 2"):
        feature_spread([phi[:1]], ["a", "b"])
    with pytest.raises(ValueError, match="at least one group"):
        feature_spread([], ["a", "b"])
