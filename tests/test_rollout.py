"""Tests for `agents.rollout`: trajectories for the judge, their feature sums, bad input."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.numpy_features import phi_reference

from sailor_jax.agents import rollout
from sailor_jax.agents.networks import make_network
from sailor_jax.agents.policy import actor_logits, logits_policy, policy_step
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import GAME_2048, EnvFns, StepResult
from sailor_jax.game.expert import expert_act
from sailor_jax.game.features import NUM_FEATURES, phi
from sailor_jax.types import TrajectoryBatch

NET = NetworkConfig(hidden_sizes=(8,))
PARAMS = make_network(NET)[0](jax.random.PRNGKey(0))
LADDER_LEN = 3
"""Moves of a ladder game: move t (from 0) gains t + 1 points; the game ends after 3 moves."""


class Rung(NamedTuple):
    t: jax.Array  # [] int32 moves played
    terminated: jax.Array  # [] bool


def _ladder_play(state: Rung, action, key) -> tuple[Rung, StepResult]:
    """Only action 3 is legal; a finished game stays finished with zero gain."""
    del action, key
    running = ~state.terminated
    t = state.t + running.astype(jnp.int32)
    result = StepResult(board=jnp.zeros(16, jnp.int32).at[0].set(state.t),
                        next_board=jnp.zeros(16, jnp.int32).at[0].set(t),
                        score_gain=jnp.where(running, t, 0).astype(jnp.float32),
                        terminated=running & (t == LADDER_LEN))
    return Rung(t, state.terminated | result.terminated), result


def _ladder_phi(board, next_board, score_gain, terminated) -> jax.Array:
    """Feature 0 = score gain, feature F - 1 = game over, zeros elsewhere."""
    del board, next_board
    return jnp.zeros(score_gain.shape + (NUM_FEATURES,)).at[..., 0].set(score_gain).at[
        ..., -1].set(terminated.astype(jnp.float32))


LADDER = EnvFns(reset=lambda key: Rung(jnp.int32(0), jnp.bool_(False)), step=_ladder_play,
                play=_ladder_play, board=lambda s: jnp.zeros(16, jnp.int32).at[0].set(s.t),
                legal_action_mask=lambda s: jnp.arange(4) == 3, phi=_ladder_phi)


def test_collect_phi_matches_recomputed_features():
    net = NetworkConfig(hidden_sizes=(8,))
    params = make_network(net)[0](jax.random.PRNGKey(0))
    batch = jax.device_get(rollout.make_collect(net, 6, 400)(params, jax.random.PRNGKey(1)))
    assert batch.boards.shape == (6, 401, 16) and batch.Phi.shape == (6, 8)
    # phi of every (board, next board) pair of the padded batch in one compiled call; a
    # game's sum keeps its first `length` moves.
    moves = np.arange(batch.actions.shape[1])
    terminated = (moves == batch.lengths[:, None] - 1) & ~batch.truncated[:, None]
    feats = np.asarray(jax.jit(phi)(batch.boards[:, :-1], batch.boards[:, 1:],
                                    batch.score_gains, terminated))
    assert feats.shape == (6, 400, 8)
    for i in range(6):
        n = int(batch.lengths[i])
        expected = feats[i, :n].sum(0)
        np.testing.assert_allclose(batch.Phi[i], expected, rtol=1e-5, atol=1e-4)
        assert batch.score[i] == pytest.approx(batch.score_gains[i].sum())
        assert (batch.actions[i, n:] == -1).all() and (batch.actions[i, :n] >= 0).all()
        assert batch.max_tile[i] == 2 ** int(batch.boards[i, n].max())


def test_collect_is_deterministic_per_key_and_vmaps_over_seeds():
    collect = rollout.make_collect(NET, 3, 50)
    a = jax.device_get(collect(PARAMS, jax.random.PRNGKey(2)))
    b = jax.device_get(collect(PARAMS, jax.random.PRNGKey(2)))
    np.testing.assert_array_equal(a.boards, b.boards)
    params2 = jax.tree.map(lambda x: np.stack([x, x]), PARAMS)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    both = jax.device_get(jax.vmap(collect)(params2, keys))
    assert both.boards.shape == (2, 3, 51, 16) and both.Phi.shape == (2, 3, 8)
    one = jax.device_get(collect(PARAMS, keys[1]))
    np.testing.assert_array_equal(both.actions[1], one.actions)
    assert both.boards.dtype == np.int8 and both.lengths.dtype == np.int32
    # A 50-move cap: short games end, the rest are flagged truncated at exactly 50 moves.
    assert np.all((both.lengths == 50) | ~both.truncated)
    assert np.all(both.lengths <= 50)


@pytest.mark.parametrize("num, max_len", [(0, 10), (2, 0), (-1, 5)])
def test_bad_sizes_raise(num, max_len):
    with pytest.raises(ValueError, match="positive"):
        rollout.make_collect(NET, num, max_len)


@pytest.mark.parametrize("max_len", [5, 2])
def test_collect_on_a_probe_env_gives_the_known_trajectories(max_len):
    batch = jax.device_get(rollout.make_collect(NET, 2, max_len, env_fns=LADDER)(
        PARAMS, jax.random.PRNGKey(0)))
    n = min(max_len, LADDER_LEN)
    done = max_len >= LADDER_LEN
    np.testing.assert_array_equal(batch.lengths, [n, n])
    np.testing.assert_array_equal(batch.truncated, [not done] * 2)
    np.testing.assert_array_equal(batch.actions[0], [3] * n + [-1] * (max_len - n))
    np.testing.assert_array_equal(batch.boards[0, :, 0], [min(t, n) for t in range(max_len + 1)])
    np.testing.assert_array_equal(batch.score_gains[1], [1, 2, 3, 0, 0][:max_len])
    expected_score = n * (n + 1) / 2
    np.testing.assert_array_equal(batch.score, [expected_score] * 2)
    np.testing.assert_array_equal(batch.Phi[:, 0], [expected_score] * 2)
    np.testing.assert_array_equal(batch.Phi[:, -1], [float(done)] * 2)
    np.testing.assert_array_equal(batch.max_tile, [2**n] * 2)
    assert batch.Phi.dtype == np.float32 and batch.actions.dtype == np.int8


def test_collect_jit_of_the_compiled_function_changes_nothing():
    collect = rollout.make_collect(NET, 2, 20)
    a = jax.device_get(collect(PARAMS, jax.random.PRNGKey(4)))
    b = jax.device_get(jax.jit(collect)(PARAMS, jax.random.PRNGKey(4)))
    assert all(jax.tree.leaves(jax.tree.map(np.array_equal, a, b)))


def test_windows_are_contiguous_slices_with_reference_feature_sums():
    """`cut_windows` cuts W consecutive moves; Phi = the NumPy phi summed over them."""
    full = jax.device_get(rollout.make_act_collect(expert_act(1, 0.5), 6, 80)(jax.random.key(0)))
    cut = jax.jit(rollout.cut_windows, static_argnums=2)  # compiled, as the loop runs it
    whole = jax.device_get(cut(full, jax.random.key(1), 80))
    np.testing.assert_array_equal(whole.boards, full.boards)
    np.testing.assert_allclose(whole.Phi, full.Phi, rtol=1e-5, atol=1e-4)
    window = jax.device_get(cut(full, jax.random.key(2), 12))
    assert window.boards.shape == (6, 13, 16) and window.actions.shape == (6, 12)
    for m in range(6):
        n = int(window.lengths[m])
        starts = [s for s in range(int(full.lengths[m]) + 1)
                  if np.array_equal(full.boards[m, s:s + n + 1], window.boards[m, :n + 1])]
        assert starts, "the window is not a slice of its game"
        s = starts[0]
        np.testing.assert_array_equal(window.actions[m, :n], full.actions[m, s:s + n])
        assert np.all(window.actions[m, n:] == -1)
        ends = [s + t == full.lengths[m] - 1 and not full.truncated[m] for t in range(n)]
        want = sum(phi_reference(full.boards[m, s + t], full.boards[m, s + t + 1],
                                 full.score_gains[m, s + t], ends[t]) for t in range(n))
        np.testing.assert_allclose(window.Phi[m], want, rtol=1e-4, atol=1e-3)
    with pytest.raises(ValueError, match="window must be positive"):
        rollout.cut_windows(full, jax.random.key(0), 0)


def _scan_collect_act(fns, act, num, max_len, key):
    """The reference: every one of `max_len` moves played by a fixed-length scan, finished
    games left idle (an independent copy of the collection the stopping loop must equal)."""

    def step(carry, _):
        state, key = carry
        running = ~state.terminated
        key, move, _ = policy_step(fns, act, state, key, auto_reset=False)
        res = move.result
        feats = fns.phi(res.board, res.next_board, res.score_gain, res.terminated)
        out = (move.board.astype(jnp.int8),
               jnp.where(running, move.action, -1).astype(jnp.int8),
               jnp.where(running, res.score_gain, 0.0),
               jnp.where(running[:, None], feats, 0.0), running)
        return (move.env_state, key), out

    key_reset, key_play = jax.random.split(key)
    state = jax.vmap(fns.reset)(jax.random.split(key_reset, num))
    (state, _), (boards, actions, gains, feats, running) = jax.lax.scan(
        step, (state, key_play), length=max_len)
    final = jax.vmap(fns.board)(state).astype(jnp.int8)
    boards = jnp.concatenate([jnp.swapaxes(boards, 0, 1), final[:, None]], axis=1)
    return TrajectoryBatch(
        boards=boards, actions=jnp.swapaxes(actions, 0, 1),
        score_gains=jnp.swapaxes(gains, 0, 1),
        lengths=jnp.sum(running, axis=0).astype(jnp.int32), truncated=~state.terminated,
        score=jnp.sum(gains, axis=0),
        max_tile=(2 ** jnp.max(final.astype(jnp.int32), axis=-1)).astype(jnp.int32),
        Phi=jnp.sum(feats, axis=0))


AGENT_ACT = functools.partial(logits_policy, functools.partial(
    actor_logits, make_network(NET)[1]), PARAMS, False)


@pytest.mark.parametrize("act, num, max_len, fns", [
    (AGENT_ACT, 5, 400, GAME_2048),  # the untrained agent's games all end long before 400
    (AGENT_ACT, 5, 30, GAME_2048),  # every game truncated
    (expert_act(1, 0.1), 3, 150, GAME_2048),  # the expert: some games truncated, seeds differ
    (AGENT_ACT, 2, 10, LADDER),  # every game ends after 3 moves
])
def test_collect_stops_when_all_games_ended_with_the_batch_of_the_full_scan(act, num, max_len,
                                                                             fns):
    keys = jax.random.split(jax.random.PRNGKey(7), 4)
    new = functools.partial(rollout._collect_act, fns, act, num, max_len)
    old = functools.partial(_scan_collect_act, fns, act, num, max_len)
    for got, want in [(jax.jit(jax.vmap(new))(keys), jax.jit(jax.vmap(old))(keys)),
                      (rollout.make_act_collect(act, num, max_len, fns)(keys[1]),
                       jax.jit(old)(keys[1]))]:
        got, want = jax.device_get((got, want))
        for field in TrajectoryBatch.__dataclass_fields__:
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype and a.shape == b.shape, field
            np.testing.assert_array_equal(a, b, err_msg=field)
