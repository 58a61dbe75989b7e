"""Named recipes: the `PPOConfig`s and `DQNConfig`s that `benchmarks/learning.py` and
`benchmarks/throughput.py` run by name.

`recipe(name)` looks one up; `RECIPES` lists the PPO ones, `DQN_RECIPES` the DQN ones:
- `default`: `PPOConfig()`, the GPU-sized default ((256, 256) afterstate trunk).
- `afterstates_64`: `PPOConfig()` with the (64, 64) trunk (`SMALL_NETWORK`), the CPU-sized
  default that the SAILOR presets and the repair, ablation and theta-search experiments train.
- `v0`: PureJaxRL's PPO as its reference implementation writes it (two 2x256 tanh towers on
  the one-hot board, 1024 envs x 128 steps, 4 epochs x 4 minibatches, constant lr 3e-4).
- `dqn`, `dqn_afterstates`: the transfer experiment's `DQNConfig()`, and the same with each
  move's Q-value read from its afterstate.
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
"""PureJaxRL's PPO on 2048: 20M env steps per seed give a mean score of 7,166 and 2048 in 1.3%
of greedy games (`docs/agent.md`)."""

RECIPES: dict[str, PPOConfig] = {
    "v0": V0,
    "default": PPOConfig(),
    "afterstates_64": PPOConfig(network=SMALL_NETWORK),
}
"""Recipe name -> `PPOConfig`."""


DQN_RECIPES: dict[str, DQNConfig] = {
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
