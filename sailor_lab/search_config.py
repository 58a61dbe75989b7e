"""Config of the direct theta search (`experiments/theta_search.py`, `sailor_lab/theta_search.py`).

A CMA-ES search over the tunable reward weights: every generation trains `population`
candidate thetas from scratch, `seeds_per_candidate` rows each, as the rows of one compiled
PPO program, and scores each candidate by its greedy agents' native game score. The best
theta and the start are then retrained on `retrain_seeds` fresh seeds. Frozen and validated on
construction (`ValueError` naming the offending numbers).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from sailor_jax.config.agent import SMALL_NETWORK, EvalConfig, PPOConfig
from sailor_jax.game.reward import RewardSpec


@dataclasses.dataclass(frozen=True, kw_only=True)
class ThetaSearchConfig:
    """A CMA-ES search for the theta whose trained agent scores best at a given budget."""

    total_timesteps: int = 1_000_000
    """Env steps (moves) each row trains, per candidate seed; rounded up to whole segments."""
    population: int = 8
    """CMA-ES population size (lambda): candidate thetas per generation."""
    generations: int = 6
    """CMA-ES generations (each trains population x seeds_per_candidate rows from scratch)."""
    sigma0: float = 0.25
    """Initial CMA-ES step size, in theta units (the bounds are [-1, 1])."""
    seeds_per_candidate: int = 2
    """Rows (seeds) per candidate, averaged into its fitness; seed j starts from the same
    network and games for every candidate of a generation (common random numbers)."""
    pick: Literal["best", "mean"] = "best"
    """Theta to retrain: best = the candidate with the highest search score; mean = the
    CMA-ES distribution mean after the last generation (Hansen's choice under noise)."""
    retrain_seeds: int = 8
    """Fresh seeds on which the picked theta and the start are retrained and compared (paired)."""
    start: tuple[float, ...] | None = None
    """Start of the search and the comparison (8 weights, feature order); None = the
    baseline reward theta0."""
    tunable: tuple[str, ...] | None = None
    """Feature names the search may change (the others stay at the start's); None = all."""
    seed: int = 0
    """Root seed: generation g trains from fold_in(seed, g); the retrain uses other keys."""
    ppo: PPOConfig = PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32,
                               updates_per_segment=16)
    """PPO of every row (the default recipe with the (64, 64) trunk, `SMALL_NETWORK`, at 256
    envs); a segment is num_envs x num_steps x updates_per_segment env steps (the presets'
    --help lists theirs)."""
    eval: EvalConfig = EvalConfig(episodes=64, max_len=50_000)
    """Greedy evaluation of every row: games per row (the fitness is their mean score)."""
    tensorboard: bool = False
    """Also write TensorBoard events in each generation's folder."""

    def __post_init__(self) -> None:
        counts = {"total_timesteps": 1, "population": 2, "generations": 1,
                  "seeds_per_candidate": 1, "retrain_seeds": 2}
        for name, least in counts.items():
            if int(getattr(self, name)) < least:
                raise ValueError(f"ThetaSearchConfig.{name} must be >= {least}, "
                                 f"got {getattr(self, name)}")
        if self.pick not in ("best", "mean"):
            raise ValueError(f"pick must be 'best' or 'mean', got {self.pick!r}")
        spec = self.reward_spec()
        if not spec.tunable_index.size:
            raise ValueError("tunable names no feature; the search needs at least one")
        widths = [spec.upper[k] - spec.lower[k] for k in spec.tunable_index]
        if not (math.isfinite(self.sigma0) and 0 < self.sigma0 <= min(widths) / 2):
            raise ValueError(f"sigma0 must be in (0, {min(widths) / 2}] (half the narrowest "
                             f"tunable bound interval), got {self.sigma0}")

    def reward_spec(self) -> RewardSpec:
        """The `RewardSpec` with this config's start and tunable mask (validates both)."""
        return RewardSpec().for_run(self.start, self.tunable)

    @property
    def num_segments(self) -> int:
        """PPO segments each row trains."""
        return math.ceil(self.total_timesteps / self.ppo.steps_per_segment)

    @property
    def run_ppo(self) -> PPOConfig:
        """`ppo` as each row trains it: a linear lr decays over the row's updates
        (`PPOConfig.over_run`)."""
        return self.ppo.over_run(self.num_segments * self.ppo.updates_per_segment)

    @property
    def env_steps_per_row(self) -> int:
        """Env steps each row actually trains (`total_timesteps` rounded up)."""
        return self.num_segments * self.ppo.steps_per_segment

    @property
    def rows(self) -> int:
        """Rows of one generation's program: population x seeds_per_candidate."""
        return self.population * self.seeds_per_candidate
