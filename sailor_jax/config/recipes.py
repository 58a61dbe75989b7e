"""Named recipes: `PPOConfig`s chosen (and compared) with `benchmarks/learning.py`, and the
`DQNConfig`s it measures beside them.

`recipe(name)` looks one up; `RECIPES` lists the PPO ones, `DQN_RECIPES` the DQN ones. `v0`
is the recipe the project shipped before the recipe search (issue 10); `default` is today's
`PPOConfig()`: round 10's `r10_afterstates_256`, confirmed in round 11 (issue 36);
`afterstates_64` was the default of rounds 9-10 (round 9's pick `r9_envs256_afterstates_64`
with its lr decayed over each run instead of a fixed 10M, issue 26), and is what the CPU-sized
experiments train; `r2_relu` was the default of rounds 3-8. The other entries
are the trials of the search, kept so that every row of the table in `benchmarks/results.md`
can be re-run by name.
"""

from __future__ import annotations

import dataclasses

from sailor_jax.config.agent import SMALL_NETWORK, DQNConfig, NetworkConfig, PPOConfig
from sailor_jax.errors import UserError

V0 = PPOConfig(num_envs=1024, num_steps=128, update_epochs=4, num_minibatches=4,
               updates_per_segment=10, gamma=0.99, gae_lambda=0.95, clip_eps=0.2, ent_coef=0.01,
               vf_coef=0.5, max_grad_norm=0.5, lr=3e-4, lr_schedule="constant",
               normalize_rewards=False,
               network=NetworkConfig(hidden_sizes=(256, 256), activation="tanh",
                                     first_layer="one_hot", trunk="separate"))
"""The shipped recipe before issue 10: 20M steps/seed gave mean score 7,166, 1.3% 2048."""


def _changed(base: PPOConfig, **changes) -> PPOConfig:
    """`base` with `changes`; `network={...}` changes fields of its network."""
    network = changes.pop("network", {})
    return dataclasses.replace(base, network=dataclasses.replace(base.network, **network),
                               **changes)


def _v0(**changes) -> PPOConfig:
    return _changed(V0, **changes)


def _shared(**changes) -> PPOConfig:
    """r1_shared (round 1's pick) with `changes`."""
    network = {"first_layer": "embedding", "trunk": "shared", **changes.pop("network", {})}
    base = {"num_steps": 32, "num_minibatches": 8, "gamma": 0.997, "normalize_rewards": True}
    return _v0(network=network, **{**base, **changes})


def _relu(**changes) -> PPOConfig:
    """r2_relu (round 2's pick, the default) with `changes`."""
    return _shared(network={"activation": "relu", **changes.pop("network", {})}, **changes)


AFTERSTATES_64 = PPOConfig(network=SMALL_NETWORK)
"""The default of rounds 9-10: `PPOConfig()` with the (64, 64) trunk (`SMALL_NETWORK`)."""


def _r9(**changes) -> PPOConfig:
    """The default of rounds 9-10 (`AFTERSTATES_64`) with `changes`: rounds 10 and 11."""
    return _changed(AFTERSTATES_64, **changes)


SEARCH_STEPS = 9_961_472
"""Env steps per seed of search rounds 5-8 (304 updates of 1024 envs x 32 steps)."""


def _r5(decay_steps: int = SEARCH_STEPS, **changes) -> PPOConfig:
    """r5_symmetric_lr_linear_mb32 (round 5's best) with `changes`; the lr decays to 0 over
    the updates of `decay_steps` env steps at the recipe's num_envs x num_steps."""
    network = {"symmetry": "canonical", **changes.pop("network", {})}
    base = {"lr": 1e-3, "lr_schedule": "linear", "num_minibatches": 32, **changes}
    batch = base.get("num_envs", 1024) * base.get("num_steps", 32)
    return _relu(network=network, lr_decay_updates=decay_steps // batch, **base)


RECIPES: dict[str, PPOConfig] = {
    "v0": V0,
    "default": PPOConfig(),
    "afterstates_64": AFTERSTATES_64,
    "v0_embedding": _v0(network={"first_layer": "embedding"}),
    # Search round 1 (3M steps/seed, 2 seeds): updates per sample, horizon, network sharing.
    "r1_short_rollout": _v0(num_steps=32, num_minibatches=8,
                            network={"first_layer": "embedding"}),
    "r1_long_horizon": _v0(num_steps=32, num_minibatches=8, gamma=0.997,
                           normalize_rewards=True, network={"first_layer": "embedding"}),
    "r1_shared": _v0(num_steps=32, num_minibatches=8, gamma=0.997, normalize_rewards=True,
                     network={"first_layer": "embedding", "trunk": "shared"}),
    "r1_low_entropy": _v0(num_steps=32, num_minibatches=8, gamma=0.997, normalize_rewards=True,
                          ent_coef=0.003, network={"first_layer": "embedding"}),
    # Search round 2 (3M steps/seed, 2 seeds): variations of r1_shared.
    "r2_minibatch32": _shared(num_minibatches=32),
    "r2_gamma999": _shared(gamma=0.999),
    "r2_epochs2": _shared(update_epochs=2),
    "r2_relu": _shared(network={"activation": "relu"}),
    # Search round 3 (3M steps/seed, 2 seeds): variations of r2_relu (the default).
    "r3_lambda09_clip01": _relu(gae_lambda=0.9, clip_eps=0.1),
    "r3_lr1e-3": _relu(lr=1e-3),
    "r3_lr1e-4": _relu(lr=1e-4),
    "r3_lr_linear": _relu(lr=1e-3, lr_schedule="linear", lr_decay_updates=92),
    "r3_envs2048": _relu(num_envs=2048, num_minibatches=16),
    "r3_minibatch32": _relu(num_minibatches=32),
    # Search round 4 (issue 26: 2048 in >= 55% of games at 10M steps; 2 seeds): the n-tuple
    # first layer, and round 3's suggested lr 1e-3 + 32 minibatches.
    "r4_lr1e-3_mb32": _relu(lr=1e-3, num_minibatches=32),
    "r4_symmetric": _relu(network={"symmetry": "canonical"}),
    "r4_symmetric_lr1e-3_mb32": _relu(lr=1e-3, num_minibatches=32,
                                      network={"symmetry": "canonical"}),
    # Search round 5 (10M steps/seed, 2 seeds): round 4's leads with lr 1e-3 decayed linearly
    # to 0 at 10M steps (304 updates of 1024 x 32), as lr 1e-3 + 32 minibatches levelled off
    # between 7.5M and 10M.
    "r5_symmetric_lr_linear_mb32": _r5(),
    # ... and single changes to the default not yet tried at 10M: twice the sample reuse, a
    # wider trunk.
    "r5_epochs8": _relu(update_epochs=8),
    "r5_wide512": _relu(network={"hidden_sizes": (512, 512)}),
    # Search round 6 (10M steps/seed, 2 seeds): single changes to round 5's best
    # (r5_symmetric_lr_linear_mb32): no value clipping (Andrychowicz et al. 2021), a longer
    # horizon.
    "r6_no_value_clip": _r5(clip_value=False),
    "r6_gamma999": _r5(gamma=0.999),
    # ... and more policy updates per env step at the same minibatch size (1,024) and FLOPs:
    # fewer envs, the lr decayed over the 10M steps' updates (round 1: updates per sample
    # mattered most; the CPU's env steps/s hardly depends on num_envs from 256 up).
    "r6_envs512": _r5(num_envs=512, num_minibatches=16),
    "r6_envs256": _r5(num_envs=256, num_minibatches=8),
    # Search round 7 (10M steps/seed, 2 seeds): round 6's lead (256 envs, 4x the updates per
    # env step) pushed further (128 envs, 8x), and joined with no value clipping.
    "r7_envs128": _r5(num_envs=128, num_minibatches=4),
    "r7_envs256_no_value_clip": _r5(num_envs=256, num_minibatches=8, clip_value=False),
    # Search round 8 (10M steps/seed, 2 seeds): single changes to r6_envs256. The 2048 rate
    # jumped from 12.5% to 30% over the last 2.5M steps as the lr decayed to 0: a less noisy
    # policy plays better greedy games, so a smaller entropy bonus; and a larger initial lr.
    # Neither beat r6_envs256 (14,250 / 21.1% and 14,427 / 16.4% 2048 at 10M).
    "r8_envs256_ent003": _r5(num_envs=256, num_minibatches=8, ent_coef=0.003),
    "r8_envs256_lr2e-3": _r5(num_envs=256, num_minibatches=8, lr=2e-3),
    # The 30M-step curve of the best measured recipe (issue 26 item 2): r6_envs256 with its lr
    # decayed to 0 over 3 x SEARCH_STEPS (3,648 updates) instead of 10M.
    "r6_envs256_30m": _r5(decay_steps=3 * SEARCH_STEPS, num_envs=256, num_minibatches=8),
    # Search round 9 (issue 26; 2 seeds): the policy scores each move's afterstate with one
    # output of the shared trunk (`NetworkConfig.actions`), on r6_envs256 with a 2x256 trunk
    # (run to 2.5M only: 6x slower) and a (64, 64) one (the pick: 2048 in 68.8% at 10M, 3
    # seeds; the default with its lr decayed over each run), and with a constant lr; the
    # (128, 128) trunk's cost was measured, not its learning.
    "r9_envs256_afterstates": _r5(num_envs=256, num_minibatches=8,
                                  network={"actions": "afterstates"}),
    "r9_envs256_afterstates_128": _r5(num_envs=256, num_minibatches=8,
                                      network={"actions": "afterstates",
                                               "hidden_sizes": (128, 128)}),
    "r9_envs256_afterstates_64": _r5(num_envs=256, num_minibatches=8,
                                     network={"actions": "afterstates", "hidden_sizes": (64, 64)}),
    "r9_afterstates_64": _relu(network={"actions": "afterstates", "hidden_sizes": (64, 64),
                                        "symmetry": "canonical"}),
    "r9_envs256_afterstates_64_lr3e-4": _relu(num_envs=256, network={
        "actions": "afterstates", "hidden_sizes": (64, 64), "symmetry": "canonical"}),
    # Search round 10 (issue 36: 2048 in >= 90% of greedy games at 10M steps; run on one H200
    # on 2026-11-26 with `benchmarks/gpu/learning36.sh`): single changes to the default of
    # then, `afterstates_64`, whose 30M curve levels off at 73% (a capacity limit?): wider
    # and deeper trunks, the n-tuple first layer, twice the epochs, longer rollouts, a
    # smaller entropy bonus.
    "r10_afterstates_128": _r9(network={"hidden_sizes": (128, 128)}),
    "r10_afterstates_256": _r9(network={"hidden_sizes": (256, 256)}),
    "r10_afterstates_64x3": _r9(network={"hidden_sizes": (64, 64, 64)}),
    "r10_epochs8": _r9(update_epochs=8),
    "r10_steps128": _r9(num_steps=128, num_minibatches=32),
    "r10_ent003": _r9(ent_coef=0.003),
    # Search round 11 (issue 36; run on one H100 on 2026-11-26): single changes to round 10's
    # best, `r10_afterstates_256` (today's `default`): wider still, its longer rollouts, a
    # smaller lr (wider networks often want one).
    "r11_afterstates_512": _r9(network={"hidden_sizes": (512, 512)}),
    "r11_256_steps128": _r9(num_steps=128, num_minibatches=32,
                            network={"hidden_sizes": (256, 256)}),
    "r11_256_lr5e-4": _r9(lr=5e-4, network={"hidden_sizes": (256, 256)}),
}
"""Recipe name -> `PPOConfig`."""


DQN_RECIPES: dict[str, DQNConfig] = {
    # Issue 36 item 3: the transfer experiment's DQN (`DQNConfig()`, Q-values of the board's
    # 4 moves) and the same with each move's Q-value read from its afterstate.
    "dqn": DQNConfig(),
    "dqn_afterstates": DQNConfig(network=dataclasses.replace(DQNConfig().network,
                                                             actions="afterstates")),
}
"""Recipe name -> `DQNConfig` (no name is also in `RECIPES`)."""


def recipe(name: str) -> PPOConfig | DQNConfig:
    """The `PPOConfig` (or, for a `DQN_RECIPES` name, `DQNConfig`) of a named recipe.

    Raises:
      UserError: unknown name (the message lists the known ones).
    """
    known = {**RECIPES, **DQN_RECIPES}
    if name not in known:
        raise UserError(f"unknown recipe {name!r}", f"known: {', '.join(known)}")
    return known[name]
