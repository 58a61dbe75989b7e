"""Configs of the agents (device side): networks, PPO and the greedy evaluation.

Frozen, hashable dataclasses (static: baked into the compiled programs); every field has a
one-line docstring that tyro turns into `--help`. Validation raises `ValueError` naming the
offending values.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import tyro

ACTIVATIONS = ("tanh", "relu", "gelu")
"""Hidden activations `networks` knows."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetworkConfig:
    """The actor-critic (or Q) MLP: sizes, activation, how it reads the board, shared or not."""

    hidden_sizes: tuple[int, ...] = (256, 256)
    """Width of each hidden layer (of each tower, or of the shared trunk)."""
    activation: str = "relu"
    """Hidden activation: tanh, relu or gelu."""
    first_layer: Literal["one_hot", "embedding"] = "embedding"
    """How the first layer reads the board: a matmul on the `16 x 18` one-hot encoding, or the
    same function as a gather of 16 rows of its kernel and a sum (no one-hot, no matmul) on the
    CPU, computed as the one-hot matmul on accelerators (`board_layers.reads_one_hot`)."""
    symmetry: Literal["none", "canonical"] = "none"
    """none: the network reads the board as it is; canonical: it reads the board turned and
    mirrored into a canonical orientation (one of the 8 symmetries of the square, the
    largest corner tile top-left) and its per-action outputs are mapped back, so the policy
    and value are exactly symmetric (`agents/symmetry.py`)."""
    trunk: Literal["separate", "shared"] = "shared"
    """separate: one MLP tower per head (actor, critic); shared: one trunk, a linear output
    layer per head (half the FLOPs; actor and critic gradients meet in the trunk)."""
    actions: Literal["board", "afterstates"] = "board"
    """board: per-action outputs (policy logits, Q-values) are 4 outputs of the network on
    the board; afterstates: each move's output is one output of the same network on that
    move's afterstate (the board after the slide, before the spawn), as n-tuple TD learning
    picks moves (Szubert & Jaskowski 2014). The value still reads the board; 5 boards pass
    through the network per decision instead of 1."""

    def __post_init__(self) -> None:
        if self.trunk not in ("separate", "shared"):
            raise ValueError(f"trunk must be 'separate' or 'shared', got {self.trunk!r}")
        if self.actions not in ("board", "afterstates"):
            raise ValueError(f"actions must be 'board' or 'afterstates', got {self.actions!r}")
        if self.symmetry not in ("none", "canonical"):
            raise ValueError(f"symmetry must be 'none' or 'canonical', got {self.symmetry!r}")
        if self.first_layer not in ("one_hot", "embedding"):
            raise ValueError(f"first_layer must be 'one_hot' or 'embedding', "
                             f"got {self.first_layer!r}")
        if not self.hidden_sizes or any(int(h) <= 0 for h in self.hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive, got {self.hidden_sizes}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, "
                             f"got {self.activation!r}")


SMALL_NETWORK = NetworkConfig(hidden_sizes=(64, 64), symmetry="canonical",
                              actions="afterstates")
"""A shared (64, 64) relu trunk reading the board through an embedding, in the canonical
orientation, that scores each move's afterstate: the CPU-sized network (recipe
`afterstates_64`), trained where a CPU budget trains (the SAILOR presets, the repair, ablation
and theta-search experiments, the judge's policy groups). Its speed against `DEFAULT_NETWORK`:
docs/performance.md."""

DEFAULT_NETWORK = dataclasses.replace(SMALL_NETWORK, hidden_sizes=(256, 256))
"""PPO's default actor-critic: `SMALL_NETWORK` with a (256, 256) trunk, the GPU-sized
network (recipe `default`). What it reaches against the (64, 64) trunk: docs/agent.md."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class PPOConfig:
    """PPO hyperparameters (static: baked into the compiled segment).

    The defaults are the recipe search's pick (docs/agent.md): 256 envs x 32 steps, 8
    minibatches, lr 1e-3 decayed linearly to 0 over the run, and a (256, 256) trunk that
    scores each move's afterstate in the canonical orientation (`DEFAULT_NETWORK`); the
    CPU-sized experiments train the (64, 64) trunk (`SMALL_NETWORK`,
    `recipes.recipe("afterstates_64")`).
    """

    num_envs: int = 256
    """Parallel 2048 games."""
    num_steps: int = 32
    """Rollout length T per update."""
    update_epochs: int = 4
    """Passes over each rollout batch."""
    num_minibatches: int = 8
    """Minibatches per epoch; must divide num_envs * num_steps."""
    updates_per_segment: int = 10
    """PPO updates per compiled segment (one SAILOR iteration trains one segment)."""
    gamma: float = 0.997
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_eps: float = 0.2
    """PPO ratio clipping (also the value clipping's range when clip_value)."""
    clip_value: bool = True
    """Clip the value update to +-clip_eps around the rollout's value, as the ratio (CleanRL);
    False: plain squared error (Andrychowicz et al. 2021 found value clipping does not help)."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    lr: float = 1e-3
    """Adam learning rate (initial value under the linear schedule)."""
    lr_schedule: Literal["constant", "linear"] = "linear"
    """constant, or linear decay to 0 over the run's PPO updates."""
    lr_decay_updates: Annotated[int, tyro.conf.Suppress] = 0
    """PPO updates over which the linear schedule decays to 0; 0 = over the whole run. Not a
    flag: each run sets it to its own number of updates per seed (`over_run`)."""
    normalize_rewards: bool = True
    """Divide rewards by the running std of the discounted return (VecNormalize-style)."""
    network: NetworkConfig = DEFAULT_NETWORK
    """The actor-critic (default `DEFAULT_NETWORK`, not `NetworkConfig()`)."""

    def __post_init__(self) -> None:
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches",
                     "updates_per_segment"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"PPOConfig.{name} must be a positive integer, "
                                 f"got {getattr(self, name)}")
        if self.batch_size % self.num_minibatches:
            raise ValueError(
                f"num_envs * num_steps = {self.num_envs} * {self.num_steps} = {self.batch_size} "
                f"is not divisible by num_minibatches = {self.num_minibatches}")
        checks = {"gamma": 0 < self.gamma <= 1, "gae_lambda": 0 <= self.gae_lambda <= 1,
                  "clip_eps": self.clip_eps > 0, "lr": self.lr > 0,
                  "max_grad_norm": self.max_grad_norm > 0, "ent_coef": self.ent_coef >= 0,
                  "vf_coef": self.vf_coef >= 0}
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"PPOConfig.{name} = {getattr(self, name)} is out of range")
        if self.lr_schedule not in ("constant", "linear"):
            raise ValueError(
                f"lr_schedule must be 'constant' or 'linear', got {self.lr_schedule!r}")
        if self.lr_decay_updates < 0:
            raise ValueError(f"lr_decay_updates must be >= 0 (0 = over the whole run), "
                             f"got {self.lr_decay_updates}")

    def over_run(self, total_updates: int) -> PPOConfig:
        """This config for a run of `total_updates` PPO updates per seed: a linear schedule
        with `lr_decay_updates=0` decays over exactly those updates (CleanRL's `anneal_lr`,
        which decays over `total_timesteps`); any other config comes back unchanged.

        Raises:
          ValueError: `total_updates` < 1.
        """
        if total_updates < 1:
            raise ValueError(f"a run needs >= 1 PPO update, got {total_updates}")
        if self.lr_schedule != "linear" or self.lr_decay_updates:
            return self
        return dataclasses.replace(self, lr_decay_updates=int(total_updates))

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def steps_per_segment(self) -> int:
        """Env steps (moves) one segment plays, per seed."""
        return self.batch_size * self.updates_per_segment


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """How the agent is evaluated: its greedy policy (argmax of the legal logits), native game
    score."""

    episodes: int = 256
    """Games per seed."""
    max_len: int = 50_000
    """Move cap per game (games still running then count as truncated)."""

    def __post_init__(self) -> None:
        if self.episodes <= 0 or self.max_len <= 0:
            raise ValueError(f"EvalConfig.episodes and max_len must be positive, "
                             f"got {self.episodes}, {self.max_len}")

