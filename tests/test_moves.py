"""Judged moves (issue 49): the moves of one board, their features, the judges' values, the
pairs and preferences built from them, and a SAILOR run that judges moves."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from reference.numpy_2048 import is_terminal, legal_mask, move
from reference.numpy_expert import action_values
from reference.numpy_features import phi_reference
from test_experiments import _load
from test_loop import TINY

from sailor_jax.alignment import heldout, move_pairs
from sailor_jax.config import PreferenceConfig, SailorConfig
from sailor_jax.config.run import RECOMMENDED_ALIGNMENT
from sailor_jax.config.starts import parse_start
from sailor_jax.judges import ExpertRanker, RandomRanker
from sailor_jax.judges.moves import move_groups, sample_boards
from sailor_jax.run import loop
from sailor_jax.types import TrajectoryBatch

INF = np.inf


def _boards(n: int, seed: int) -> np.ndarray:
    """`n` random mid-game boards (exponents 0-6, about a third empty)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(1, 7, (n, 16)) * (rng.random((n, 16)) > 0.35)).astype(np.int32)


def test_move_groups_match_the_numpy_game_and_features():
    boards = _boards(24, 0)
    groups = move_groups(boards, seed=3, chunk=16)  # two chunks, the last padded
    assert groups.phi.shape == (24, 4, 8) and groups.next_boards.shape == (24, 4, 16)
    assert groups.phi.dtype == np.float32 and len(groups) == 24
    for b, board in enumerate(boards):
        np.testing.assert_array_equal(groups.legal[b], legal_mask(board))
        for a in np.flatnonzero(groups.legal[b]):
            after, gain = move(board, a)
            nxt = groups.next_boards[b, a]
            spawned = np.flatnonzero(nxt != after)  # one new 2 or 4 on an empty cell
            assert len(spawned) == 1 and after[spawned[0]] == 0 and nxt[spawned[0]] in (1, 2)
            np.testing.assert_allclose(
                groups.phi[b, a], phi_reference(board, nxt, gain, is_terminal(nxt)), atol=1e-6)


def test_move_groups_are_a_function_of_the_seed_and_share_a_board_spawn_key():
    boards = _boards(8, 1)
    a, b = move_groups(boards, seed=5), move_groups(boards, seed=5)
    np.testing.assert_array_equal(a.next_boards, b.next_boards)
    assert not np.array_equal(a.next_boards, move_groups(boards, seed=6).next_boards)
    # A lost board has no legal move.
    full = np.array([1, 2, 1, 2, 2, 1, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1], np.int32)
    assert not move_groups(full[None], seed=0).legal.any()
    empty = move_groups(np.zeros((0, 16), np.int32), seed=0)  # no board: nothing compiled
    assert empty.phi.shape == (0, 4, 8) and empty.legal.shape == (0, 4) and len(empty) == 0


def test_sample_boards_draws_played_boards_without_replacement():
    boards = np.arange(2 * 4 * 16).reshape(2, 4, 16) % 7
    actions = np.array([[0, 1, -1], [2, -1, -1]])  # 3 moves played
    batch = TrajectoryBatch(boards=boards, actions=actions, score_gains=np.zeros((2, 3)),
                            lengths=np.array([2, 1]), truncated=np.zeros(2, bool),
                            score=np.zeros(2), max_tile=np.zeros(2), Phi=np.zeros((2, 8)))
    got = sample_boards(batch, 10, np.random.default_rng(0))
    played = {tuple(boards[0, 0]), tuple(boards[0, 1]), tuple(boards[1, 0])}
    assert got.shape == (3, 16) and {tuple(r) for r in got} == played
    assert sample_boards(batch, 2, np.random.default_rng(0)).shape == (2, 16)
    with pytest.raises(ValueError, match="positive"):
        sample_boards(batch, 0, np.random.default_rng(0))


def test_judged_pairs_by_hand():
    values = np.array([[3.0, 1.0, -INF, 2.0], [5.0, 5.0, 1.0, 0.0]])
    legal = np.array([[True, True, False, True], [True, True, True, False]])
    win, lose = move_pairs.judged_pairs(values, legal)
    # board 0: 0 > 1, 0 > 3, 3 > 1; board 1: 0 = 1 (tied, left out), 0 > 2, 1 > 2; the
    # illegal move 3 of board 1 is not compared whatever its value.
    np.testing.assert_array_equal(win, [0, 0, 3, 4, 5])
    np.testing.assert_array_equal(lose, [1, 3, 1, 6, 6])
    win, lose = move_pairs.judged_pairs(values, legal, boards=[1])
    np.testing.assert_array_equal(win, [4, 5])
    np.testing.assert_array_equal(lose, [6, 6])
    with pytest.raises(ValueError, match=r"\[B, 4\]"):
        move_pairs.judged_pairs(values[:, :3], legal[:, :3])


def test_move_preferences_keep_discordant_and_sample_as_many_concordant():
    values = np.array([[3.0, 1.0, -INF, 2.0], [5.0, 5.0, 1.0, 0.0]])
    legal = np.array([[True, True, False, True], [True, True, True, False]])
    win, lose = move_pairs.judged_pairs(values, legal)
    r = np.array([0.0, 1.0, 9.0, 0.5, 2.0, 0.0, 1.0, 9.0])  # R_theta per row 4 b + a
    # pairs (0,1) (0,3) (3,1) (4,6) (5,6): R_theta agrees only on (4,6)
    prefs = move_pairs.move_preferences(r, win, lose, 0, PreferenceConfig())
    assert prefs.num_discordant == 4 and prefs.num_concordant == 1
    np.testing.assert_array_equal(prefs.i, [0, 0, 3, 5, 4])
    np.testing.assert_array_equal(prefs.j, [1, 3, 1, 6, 6])
    assert move_pairs.pair_tau(r, win, lose) == pytest.approx((1 - 4) / 5)
    with pytest.raises(ValueError, match="weighting"):
        move_pairs.move_preferences(r, win, lose, 0, PreferenceConfig(weighting="confidence"))


def test_pairs_test_on_moves_counts_gained_and_lost_pairs():
    phi = np.eye(8)[[0, 1, 2, 3]]  # rows: move a has feature a
    win, lose = np.array([0, 0, 2]), np.array([1, 2, 3])
    theta = np.zeros(8)
    theta[[1, 2]] = 1.0  # orders 1 and 2 above 0: gets (2, 3) right only
    better = np.zeros(8)
    better[[0, 2]] = [2.0, 1.0]  # all three right
    test = heldout.pairs_test(theta, better, phi, win, lose, z=0.0)
    assert test.accepted and (test.gained, test.lost) == (2.0, 0.0)
    assert test.agreement_before == pytest.approx(1 / 3) and test.agreement_after == 1.0
    assert not heldout.pairs_test(better, theta, phi, win, lose, z=0.0).accepted


def test_judges_value_moves():
    boards = _boards(6, 2)
    groups = move_groups(boards, seed=0)
    expert = ExpertRanker(depth=1).move_values(groups)
    for b, board in enumerate(boards):
        want = np.where(groups.legal[b], action_values(board, 1), -INF)
        np.testing.assert_allclose(expert[b], want, rtol=1e-5)
    random = RandomRanker(seed=1).move_values(groups)
    assert np.all(np.isinf(random[~groups.legal])) and np.all(np.isfinite(random[groups.legal]))
    np.testing.assert_array_equal(random, RandomRanker(seed=1).move_values(groups))
    with pytest.raises(ValueError, match="noise"):
        ExpertRanker(noise=0.5).move_values(groups)


@pytest.mark.parametrize("change, names", [
    ({"judged": "pairs"}, "judged must be one of"),
    ({"move_boards": 3}, "move_boards must be >= 4"),
    ({"warmup_tau_z": 1.0}, "warmup_tau_z"),
])
def test_bad_judged_settings_are_refused(change, names):
    base = dict(judged="moves", ranker=dataclasses.replace(SailorConfig().ranker, kind="expert"))
    with pytest.raises(ValueError, match=names):
        SailorConfig(**{**base, **change})
    with pytest.raises(ValueError, match="ranker.kind"):
        SailorConfig(judged="moves")  # the LLM judge ranks windows


def test_a_sailor_run_judges_moves_and_repeats_itself(tmp_path):
    cfg = dataclasses.replace(
        TINY, iterations=1, judged="moves", move_boards=16, warmup_updates=1, window=20,
        reference_games=2, ranker=dataclasses.replace(TINY.ranker, kind="expert", expert_depth=1),
        alignment=RECOMMENDED_ALIGNMENT)
    a = loop.run(cfg, str(tmp_path / "a"))
    b = loop.run(cfg, str(tmp_path / "b"))
    np.testing.assert_array_equal(a.theta_history, b.theta_history)
    records = a.warmup + a.iterations
    assert len(records) == 2 and np.asarray(a.theta_history).shape == (3, TINY.num_seeds, 8)
    for record in records:
        for update in record.seeds:  # move pairs fitted and tested on held-out boards
            assert update.num_discordant > 0 and np.isfinite(update.kendall_tau_before)
            assert "held-out" in update.message or "rejected" in update.message


def test_move_ceiling_prints_a_start_that_parses(capsys):
    ceiling = _load("benchmarks/move_ceiling.py")
    theta = ceiling.main(["--games", "2", "--moves", "30", "--depth", "1", "--name", "probe"])
    assert max(abs(w) for w in theta.values()) == pytest.approx(1.0)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    start = parse_start(last)
    assert start.name == "probe"
    np.testing.assert_allclose(start.theta, list(theta.values()), atol=5e-4)
