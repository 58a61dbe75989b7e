"""The expert player: moves, heuristic and expectimax against a NumPy reference."""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import numpy_expert
from reference.numpy_2048 import legal_mask, move

from sailor_jax.agents.evaluation import play_out
from sailor_jax.game import expert
from sailor_jax.game.env import GAME_2048


def _random_boards(n: int, seed: int, high: int = 12, fill: float = 0.7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.integers(1, high, (n, 16)) * (rng.random((n, 16)) < fill)).astype(np.int32)


def test_afterstates_and_legality_match_the_numpy_rules():
    boards = _random_boards(64, 0, high=17)  # two 2**17 tiles cannot coexist
    after, legal = jax.jit(expert.afterstates)(jnp.asarray(boards))
    for b, board in enumerate(boards):
        np.testing.assert_array_equal(np.asarray(legal[b]), legal_mask(board))
        for a in range(4):
            np.testing.assert_array_equal(np.asarray(after[b, a]), move(board, a)[0])


def test_heuristic_matches_the_reference_line_scores():
    boards = _random_boards(32, 1)
    got = np.asarray(jax.jit(expert.heuristic)(jnp.asarray(boards)))
    want = [numpy_expert.board_score(b) for b in boards]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1.0)  # float32 sums of ~1e6


@pytest.mark.parametrize("depth", [1, 2])
def test_action_values_match_the_reference_expectimax(depth):
    boards = _random_boards(6 if depth == 2 else 24, 2, fill=0.75)
    got = np.asarray(expert.expert_action_values(jnp.asarray(boards), depth))
    for b, board in enumerate(boards):
        want = numpy_expert.action_values(board, depth)
        assert np.array_equal(np.isinf(got[b]), np.isinf(want))
        np.testing.assert_allclose(got[b][np.isfinite(want)], want[np.isfinite(want)], rtol=1e-5)


def test_hand_made_boards():
    """An obvious winning merge, an illegal move, a board with one legal move."""
    # Two 1024s side by side in the top row, the rest a staircase: left/right merge to 2048.
    win = np.array([10, 10, 3, 2, 1, 4, 2, 1, 2, 1, 3, 2, 1, 3, 1, 2], np.int32)
    # Tiles packed left and no merges in any line: only right is legal.
    packed = np.array([5, 4, 0, 0, 3, 2, 0, 0, 1, 5, 0, 0, 2, 1, 0, 0], np.int32)
    # A full board with one vertical pair in column 0: up and down both merge it; rows
    # alternate so no horizontal move is legal.
    one_pair = np.array([1, 2, 1, 2, 1, 3, 4, 3, 2, 1, 2, 1, 3, 2, 3, 2], np.int32)
    boards = jnp.asarray(np.stack([win, packed, one_pair]))
    for depth in (1, 2):
        values = np.asarray(expert.expert_action_values(boards, depth))
        best = np.asarray(expert.expert_policy(boards, depth))
        assert 11 in move(win, int(best[0]))[0]  # the chosen move makes the 2048 tile
        assert np.isinf(values[1]).tolist() == [True, True, False, True]  # only right is legal
        assert np.isinf(values[2]).tolist() == [True, False, True, False]
        for b, board in enumerate(np.asarray(boards)):
            np.testing.assert_allclose(values[b], numpy_expert.action_values(board, depth),
                                       rtol=1e-5)


def test_batch_shape_jit_and_vmap_agree():
    boards = jnp.asarray(_random_boards(12, 3).reshape(3, 4, 16))
    flat = np.asarray(expert.expert_action_values(boards.reshape(12, 16), 2))
    nested = np.asarray(jax.jit(lambda b: expert.expert_action_values(b, 2))(boards))
    mapped = np.asarray(jax.vmap(lambda b: expert.expert_action_values(b, 2))(boards))
    assert nested.shape == (3, 4, 4) and nested.dtype == np.float32
    np.testing.assert_allclose(nested.reshape(12, 4), flat, rtol=1e-6)  # XLA may reorder sums
    np.testing.assert_allclose(mapped.reshape(12, 4), flat, rtol=1e-6)


def test_bad_arguments_are_clear_errors():
    board = jnp.zeros((16,), jnp.int32)
    for depth in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="depth must be an int >= 1"):
            expert.expert_action_values(board, depth)
    with pytest.raises(ValueError, match=r"board must have shape \[..., 16\]"):
        expert.expert_action_values(jnp.zeros((4, 4), jnp.int32), 1)
    with pytest.raises(ValueError, match=r"epsilon must be in \[0, 1\]"):
        expert.expert_act(2, 1.5)


def test_expert_beats_random_and_epsilon_one_is_random_legal_play():
    games = {eps: jax.device_get(jax.jit(functools.partial(
        play_out, GAME_2048, expert.expert_act(1, eps), 8, 3000))(jax.random.key(0)))
        for eps in (0.0, 1.0)}
    assert not games[0.0].truncated.any()
    assert games[0.0].score.mean() > 2 * games[1.0].score.mean()
    assert games[1.0].length.min() > 0


def test_expert_play_cli_prints_one_json_line(capsys):
    from support import load_script

    expert_play = load_script("experiments/expert_play.py")
    expert_play.main(expert_play.Args(games=3, depth=1, max_moves=2000, json=True))
    captured = capsys.readouterr()
    (line,) = map(json.loads, captured.out.splitlines())  # stdout: the JSON line only
    assert "expert depth 1" in captured.err  # the summary line, for people
    assert line["depth"] == 1 and line["games"] == 3 and 0.0 <= line["win_rate"] <= 1.0
    assert set(line["max_tile_rates"]) == {"256", "512", "1024", "2048", "4096", "8192"}
    assert line["score_mean"] > 0 and line["moves_per_s"] > 0 and line["boards_per_s"] > 0
    with pytest.raises(ValueError, match="games and max_moves must be positive"):
        expert_play.Args(games=0)


def test_expert_play_json_pipes_into_json_tool(tmp_path):
    """`expert_play.py --json | python -m json.tool` works (the real script)."""
    import os
    import subprocess
    import sys

    from support import ROOT

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    play = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "expert_play.py"),
                           "--games", "2", "--depth", "1", "--max-moves", "300", "--json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert play.returncode == 0, play.stderr
    tool = subprocess.run([sys.executable, "-m", "json.tool"], input=play.stdout,
                          capture_output=True, text=True, timeout=60)
    assert tool.returncode == 0, (play.stdout, tool.stderr)
    assert "expert depth 1" in play.stderr
