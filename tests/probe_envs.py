"""Tiny known-answer environments for PPO learning sanity (after Andy Jones' probe envs).

Each probe is a `sailor_jax.agents.policy.EnvFns`: pure single-game functions with auto-reset, so
`ppo.make_train(cfg, env_fns=PROBE)` trains on it unchanged. The state is a dict of scalar
`int32` arrays; the "board" the network sees is 16 exponents whose cell 0 encodes the state
(cell value in 1..2, every other cell 0). The probe's reward travels as `score_gain` and
`phi` puts it in feature `REWARD_FEATURE` (zeros elsewhere), so `theta = REWARD_THETA`
(the unit vector on that feature) makes the PPO reward equal the probe's reward.
Every probe's state has the same structure, `{"t": int32, "bit": int32}` (unused fields 0), so
`ALL_PROBES` can dispatch on an extra `kind` field with `lax.switch`: one compiled PPO program
trains all four probes side by side, one per vmapped seed (each compile costs seconds on CPU).

Known answers (discount `gamma`):

- `ONE_STEP`: every step ends the episode with reward 1 -> V = 1 everywhere.
- `TWO_STEP`: state 0 -> state 1 (reward 0) -> end (reward 1) -> V(0) = gamma, V(1) = 1.
- `OBS_ACTION`: a random bit b (cell 0 = 1 + b) says which of actions {0, 1} pays 1 (the other
  pays 0); actions 2 and 3 are illegal; one step -> pi(b | b) -> 1, V -> 1.
- `MASKED`: only action 2 is legal and pays 1; the illegal actions would pay 2 (a temptation a
  leaky mask would follow); one step -> the policy never samples an illegal action, so every
  reward is exactly 1, and its entropy over legal actions is 0 (never NaN).
- `ALL_PROBES`: runs probe `PROBES[state["kind"]]`; `reset` starts kind 0, so set the kind of
  a fresh state with `with_kind` (the auto-reset keeps it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sailor_jax.agents.policy import EnvFns
from sailor_jax.game.env import StepResult
from sailor_jax.game.features import NUM_FEATURES

REWARD_FEATURE: int = 0
"""The feature that carries the probe reward (the 2048 `score_gain` slot)."""
REWARD_THETA = jnp.zeros((NUM_FEATURES,), jnp.float32).at[REWARD_FEATURE].set(1.0)
"""`[F] float32` theta under which the shaped reward equals the probe reward."""

ALL_LEGAL = jnp.ones((4,), jnp.bool_)
OBS_ACTION_MASK = jnp.array([True, True, False, False])
MASKED_MASK = jnp.array([False, False, True, False])
MASKED_LEGAL_ACTION: int = 2


def probe_phi(board, next_board, score_gain, terminated) -> jax.Array:
    """Put `score_gain` in feature `REWARD_FEATURE`, zeros elsewhere: `[..., 8] float32`."""
    del board, next_board, terminated
    gain = jnp.asarray(score_gain, jnp.float32)
    return gain[..., None] * jax.nn.one_hot(REWARD_FEATURE, NUM_FEATURES, dtype=jnp.float32)


def encode(cell0: jax.Array) -> jax.Array:
    """`[16] int32` board with `cell0` in cell 0 and zeros elsewhere."""
    return jnp.zeros((16,), jnp.int32).at[0].set(jnp.asarray(cell0, jnp.int32))


def _result(board, next_board, gain, terminated) -> StepResult:
    return StepResult(board=board, next_board=next_board,
                      score_gain=jnp.asarray(gain, jnp.float32),
                      terminated=jnp.asarray(terminated, jnp.bool_))


def _state(t=0, bit=0) -> dict:
    return {"t": jnp.asarray(t, jnp.int32), "bit": jnp.asarray(bit, jnp.int32)}


# (a) one step, constant reward 1 ------------------------------------------------------------

def _one_step_reset(key):
    del key
    return _state()


def _one_step_step(state, action, key):
    del action
    board = _board_t(state)
    return _one_step_reset(key), _result(board, board, 1.0, True)


def _board_t(state):
    return encode(1 + state["t"])


ONE_STEP = EnvFns(reset=_one_step_reset, step=_one_step_step, board=_board_t,
                  legal_action_mask=lambda state: ALL_LEGAL, phi=probe_phi)


# (b) two steps, reward 1 at the end ---------------------------------------------------------

def _two_step_step(state, action, key):
    del action, key
    t = state["t"]
    terminated = t == 1
    next_t = jnp.where(terminated, 0, t + 1)
    result = _result(_board_t(state), encode(2 + t), jnp.where(terminated, 1.0, 0.0), terminated)
    return _state(t=next_t), result


TWO_STEP = EnvFns(reset=_one_step_reset, step=_two_step_step, board=_board_t,
                  legal_action_mask=lambda state: ALL_LEGAL, phi=probe_phi)


# (c) observation-dependent best action ------------------------------------------------------

def _obs_reset(key):
    return _state(bit=jax.random.bernoulli(key))


def _obs_board(state):
    return encode(1 + state["bit"])


def _obs_step(state, action, key):
    gain = jnp.where(action == state["bit"], 1.0, 0.0)
    board = _obs_board(state)
    return _obs_reset(key), _result(board, board, gain, True)


OBS_ACTION = EnvFns(reset=_obs_reset, step=_obs_step, board=_obs_board,
                    legal_action_mask=lambda state: OBS_ACTION_MASK, phi=probe_phi)


# (d) a single legal action, illegal ones tempting -------------------------------------------

def _masked_step(state, action, key):
    gain = jnp.where(action == MASKED_LEGAL_ACTION, 1.0, 2.0)
    board = _board_t(state)
    return _one_step_reset(key), _result(board, board, gain, True)


MASKED = EnvFns(reset=_one_step_reset, step=_masked_step, board=_board_t,
                legal_action_mask=lambda state: MASKED_MASK, phi=probe_phi)


# All four in one program, selected per game by state["kind"] --------------------------------

PROBES: tuple[EnvFns, ...] = (ONE_STEP, TWO_STEP, OBS_ACTION, MASKED)
"""`kind` k of `ALL_PROBES` runs `PROBES[k]`."""


def _split(state):
    return state["kind"], {k: v for k, v in state.items() if k != "kind"}


def _all_reset(key):
    return {"kind": jnp.int32(0), **PROBES[0].reset(key)}


def _all_step(state, action, key):
    kind, inner = _split(state)
    inner, result = jax.lax.switch(kind, [p.step for p in PROBES], inner, action, key)
    return {"kind": kind, **inner}, result


def _all_board(state):
    kind, inner = _split(state)
    return jax.lax.switch(kind, [p.board for p in PROBES], inner)


def _all_mask(state):
    kind, inner = _split(state)
    return jax.lax.switch(kind, [p.legal_action_mask for p in PROBES], inner)


ALL_PROBES = EnvFns(reset=_all_reset, step=_all_step, board=_all_board,
                    legal_action_mask=_all_mask, phi=probe_phi)


def with_kind(state: dict, kind) -> dict:
    """Return an `ALL_PROBES` state (any batch shape) switched to probe `kind` (broadcast)."""
    return {**state, "kind": jnp.broadcast_to(jnp.asarray(kind, jnp.int32),
                                              state["kind"].shape)}
