"""Tests for `sailor_jax.agents.policy`: the shared move step and the episode metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.agents.policy import GAME_2048, episode_metrics, logits_policy, policy_step
from sailor_jax.game import env


def test_episode_metrics_against_numpy():
    done = np.asarray([[False, True], [True, True], [False, False]])
    score = np.asarray([[4.0, 8.0], [12.0, 20.0], [1.0, 1.0]], np.float32)
    length = np.asarray([[1, 2], [3, 4], [5, 6]], np.int32)
    max_tile = np.asarray([[2, 3], [4, 5], [1, 6]], np.int32)
    m = jax.device_get(episode_metrics(done, score, length, max_tile, jnp.ones((3, 2))))
    assert m["episodes"] == 3 and m["episodes"].dtype == np.int32
    np.testing.assert_allclose(m["episode_score"], (8 + 12 + 20) / 3, rtol=1e-6)
    np.testing.assert_allclose(m["episode_length"], (2 + 3 + 4) / 3, rtol=1e-6)
    np.testing.assert_allclose(m["episode_max_tile"], (8 + 16 + 32) / 3, rtol=1e-6)
    assert m["max_tile"] == 64 and m["reward_mean"] == 1.0
    none = jax.device_get(episode_metrics(np.zeros((2, 2), bool), score[:2], length[:2],
                                          max_tile[:2], jnp.zeros((2, 2))))
    assert none["episodes"] == 0 and np.isnan(none["episode_score"])


def test_policy_step_plays_legal_moves_and_only_auto_resets_when_asked():
    n = 6
    state = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))

    def first_legal(key, board, mask):
        return jnp.argmax(mask, -1), board.sum(-1)

    step = jax.jit(policy_step, static_argnums=(0, 1), static_argnames="auto_reset")
    key, move, extra = step(GAME_2048, first_legal, state, jax.random.PRNGKey(1))
    assert move.board.shape == (n, 16) and move.legal_action_mask.shape == (n, 4)
    assert np.all(np.asarray(move.legal_action_mask)[np.arange(n), np.asarray(move.action)])
    np.testing.assert_array_equal(extra, np.asarray(move.board).sum(-1))
    assert key.shape == jax.random.PRNGKey(0).shape
    ended = state.replace(terminated=jnp.ones(n, bool))
    _, still, _ = step(GAME_2048, first_legal, ended, key, auto_reset=False)
    assert np.all(still.env_state.terminated)  # play: a finished game stays finished


def test_logits_policy_greedy_and_sampled():
    logits = jnp.asarray([[0.0, 5.0, -1e9, 1.0]] * 4)
    action, _ = logits_policy(lambda p, b, m: logits, None, True, jax.random.PRNGKey(0),
                              None, None)
    np.testing.assert_array_equal(action, [1, 1, 1, 1])
    sampled, _ = logits_policy(lambda p, b, m: logits, None, False, jax.random.PRNGKey(0),
                               None, None)
    assert np.all(np.asarray(sampled) != 2)  # the masked action is never drawn
