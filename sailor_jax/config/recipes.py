"""Named recipes: the `PPOConfig`s that `benchmarks/learning.py` and `benchmarks/throughput.py`
train by name (the DQN's are the harness's, `sailor_lab.dqn.DQN_RECIPES`).

`recipe(name)` looks one up in `RECIPES`. `default`
is `PPOConfig()`, the GPU-sized default (the (256, 256) afterstate trunk); `afterstates_64` is
the CPU-sized one (`SMALL_NETWORK`, the (64, 64) trunk every CPU-sized experiment trains); `v0`
is the recipe the project first shipped, the reference the learning tables start from. The
recipes the search compared and retired are named in CHANGELOG.md.
"""

from __future__ import annotations

from sailor_jax.config.agent import SMALL_NETWORK, NetworkConfig, PPOConfig
from sailor_jax.errors import UserError

V0 = PPOConfig(num_envs=1024, num_steps=128, update_epochs=4, num_minibatches=4,
               updates_per_segment=10, gamma=0.99, gae_lambda=0.95, clip_eps=0.2, ent_coef=0.01,
               vf_coef=0.5, max_grad_norm=0.5, lr=3e-4, lr_schedule="constant",
               normalize_rewards=False,
               network=NetworkConfig(hidden_sizes=(256, 256), activation="tanh",
                                     first_layer="one_hot", trunk="separate"))
"""The recipe first shipped: the reference the learning tables start from (docs/agent.md)."""

AFTERSTATES_64 = PPOConfig(network=SMALL_NETWORK)
"""The CPU-sized default: `PPOConfig()` with the (64, 64) trunk (`SMALL_NETWORK`)."""

RECIPES: dict[str, PPOConfig] = {
    "v0": V0,
    "default": PPOConfig(),
    "afterstates_64": AFTERSTATES_64,
}
"""Recipe name -> `PPOConfig`."""

def recipe(name: str, more: dict | None = None) -> PPOConfig:
    """The `PPOConfig` of a named recipe (or of a name in `more`, e.g. the harness's DQN
    recipes).

    Raises:
      UserError: unknown name (the message lists the known ones).
    """
    known = {**RECIPES, **(more or {})}
    if name not in known:
        raise UserError(f"unknown recipe {name!r}", f"known: {', '.join(known)}")
    return known[name]
