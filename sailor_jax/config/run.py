"""Run configs: a SAILOR run and a fixed-reward PPO run, each nesting the agent and judge configs.

`SailorConfig()` is the recommended SAILOR (windows judged in groups with reference games, a
bounded Bradley-Terry MCMC step accepted only on held-out pairs, the survival guard); `PAPER`
is the update of Zeng et al. 2024 as this project first ran it (BO on whole games, every judged
game the agent's). `experiments/*.py` build these with tyro (presets via `sailor_jax.cli`) and
the runner writes them as `config.json` next to the checkpoints.
"""

from __future__ import annotations

import dataclasses
import math

from sailor_jax.config.agent import EvalConfig, PPOConfig
from sailor_jax.config.judge import AlignmentConfig, PreferenceConfig, RankerConfig
from sailor_jax.config.llm import RefineConfig
from sailor_jax.game.reward import THETA0, RewardSpec


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """A PPO run on a fixed reward theta, over `num_seeds` vmapped seeds."""

    total_timesteps: int = 20_000_000
    """Env steps (moves) per seed; rounded up to whole segments."""
    num_seeds: int = 1
    """Independent seeds trained in one compiled program (vmapped)."""
    seed: int = 0
    """Root PRNG seed."""
    theta: tuple[float, ...] | None = None
    """Reward weights (8 values, feature order); None = the baseline reward theta0."""
    ppo: PPOConfig = PPOConfig()
    """PPO hyperparameters."""
    eval: EvalConfig = EvalConfig()
    """Final evaluation."""
    evaluate_random: bool = True
    """Also evaluate a uniformly random legal-move policy (the reference baseline)."""
    tensorboard: bool = True
    """Write TensorBoard event files next to metrics.jsonl."""

    def __post_init__(self) -> None:
        if self.total_timesteps <= 0 or self.num_seeds <= 0:
            raise ValueError(f"total_timesteps and num_seeds must be positive, got "
                             f"{self.total_timesteps}, {self.num_seeds}")
        RewardSpec().validate(self.theta if self.theta is not None else THETA0)

    @property
    def num_segments(self) -> int:
        return math.ceil(self.total_timesteps / self.ppo.steps_per_segment)

    @property
    def run_ppo(self) -> PPOConfig:
        """`ppo` as this run trains it: a linear lr decays over the run (`PPOConfig.over_run`)."""
        return self.ppo.over_run(self.num_segments * self.ppo.updates_per_segment)

    def budget(self) -> str:
        """What the run will train, in words: `total_timesteps` rounded up to whole segments."""
        steps = self.num_segments * self.ppo.steps_per_segment
        rounded = (f" (--train.total-timesteps {self.total_timesteps:,} rounded up to whole "
                   f"segments)" if steps != self.total_timesteps else "")
        return (f"training {steps:,} env steps per seed x {self.num_seeds} seeds: "
                f"{self.num_segments} segments of {self.ppo.steps_per_segment:,}{rounded}")


REFERENCE_EPSILON = 0.5
"""Random-move probability of the reference player (`SailorConfig.reference_games`)."""

@dataclasses.dataclass(frozen=True, kw_only=True)
class SailorConfig:
    """One SAILOR run: T iterations of (PPO segment, ranking, theta update) over S seeds.

    The defaults are the recommended SAILOR (the repair table's settings: 16 windows of 100
    moves per seed and iteration, 8 of them played by an epsilon-greedy expert,
    `AlignmentConfig()`); `PAPER` is the paper's update on whole games.
    """

    iterations: int = 10
    """SAILOR iterations T (each trains ppo.updates_per_segment PPO updates)."""
    num_seeds: int = 1
    """Seeds S, vmapped in one compiled program and ranked in one judge call."""
    seed: int = 0
    """Root seed (device keys and host generators derive from it)."""
    trajectories: int = 16
    """Trajectories M sampled per seed and iteration for ranking."""
    max_len: int = 2000
    """Move cap of a sampled trajectory (longer games are truncated and flagged)."""
    window: int = 100
    """Judge and rank windows of this many consecutive moves, one per sampled game (start
    uniform, `rollout.cut_windows`), instead of whole games: 0 = whole games."""
    reference_games: int = 8
    """Of the `trajectories` judged per seed and iteration, this many are played by a
    reference policy instead of the agent (the depth-1 expert playing a random move with
    probability `REFERENCE_EPSILON`), so that a group compares play, not only the spawns' luck
    (PBRR, Hatgis-Kessell et al. 2025). 0 = the agent's games only."""
    warmup_updates: int = 8
    """Theta updates before the first segment trains: each samples and judges a
    group per seed from the untrained agent and the reference player and updates theta as an
    iteration does, so that a wrong start is corrected before the agent learns it (Christiano
    et al. 2017 fitted their reward predictor on a random policy's clips before RL began). No
    env steps of training; `theta_history` then holds these updates after the start, and
    `SailorResults.warmup` their records. 0 = none (the default's effect from each named
    start: docs/repair.md)."""
    ppo: PPOConfig = PPOConfig()
    """PPO hyperparameters; updates_per_segment is k."""
    ranker: RankerConfig = RankerConfig()
    """The judge."""
    preferences: PreferenceConfig = PreferenceConfig()
    """Discordant/concordant pairs and their weights."""
    alignment: AlignmentConfig = AlignmentConfig()
    """The theta update rule."""
    start: tuple[float, ...] | None = None
    """The start reward's weights (8, feature order), theta before any update;
    None = theta0, the seed plan's baseline reward."""
    tunable: tuple[str, ...] | None = None
    """Feature names whose weights may change (constrained editing); None = all."""
    eval: EvalConfig = EvalConfig()
    """Evaluation of the agents (native game score)."""
    eval_every: int = 0
    """Evaluate every this many iterations as well as at the end (0 = only at the end)."""
    baseline: bool = True
    """Also train S agents on the start reward kept fixed with the same budget, for comparison."""
    self_align: bool = True
    """Rank and update theta each iteration; False = train on the start reward kept fixed only (the
    ablations' fixed-reward variants: same segments, budget and evaluation, no judge)."""
    refine: RefineConfig = RefineConfig()
    """LLM-guided reward refinement when the rankings agree but the score stalls (off)."""
    pipeline: bool = False
    """Judge iteration t in a worker thread while segment t+1 trains on the theta before it;
    the judged theta then trains from segment t+2 on (`sailor_jax/run/pipeline.py`)."""
    tensorboard: bool = True
    """Write TensorBoard event files."""

    def __post_init__(self) -> None:
        for name in ("iterations", "num_seeds", "trajectories", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SailorConfig.{name} must be positive, got {getattr(self, name)}")
        if self.trajectories < 2:
            raise ValueError(f"trajectories must be >= 2 to form pairs, got {self.trajectories}")
        if not 0 <= self.reference_games < self.trajectories:
            raise ValueError(f"reference_games must be in [0, trajectories={self.trajectories})"
                             f" (at least one game of the agent), got {self.reference_games}")
        if self.alignment.heldout > 0 and self.trajectories < 4:
            raise ValueError(f"alignment.heldout needs trajectories >= 4 (2 fitted, 2 held "
                             f"out), got {self.trajectories}")
        if not 0 <= self.window <= self.max_len:
            raise ValueError(f"window must be in [0, max_len={self.max_len}], got {self.window}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0, got {self.eval_every}")
        if self.warmup_updates < 0:
            raise ValueError(f"warmup_updates must be >= 0, got {self.warmup_updates}")
        spec = RewardSpec()
        if self.start is not None:  # checked here so that the message names the field
            spec.validate(self.start, "start")
        unknown = sorted(set(self.tunable or ()) - set(spec.names))
        if unknown:
            raise ValueError(f"tunable names unknown feature(s) {unknown}; known: "
                             f"{', '.join(spec.names)}")
        self.reward_spec()

    @property
    def run_ppo(self) -> PPOConfig:
        """`ppo` as this run trains it: a linear lr decays over the T iterations' updates
        (`PPOConfig.over_run`)."""
        return self.ppo.over_run(self.iterations * self.ppo.updates_per_segment)

    @property
    def rows(self) -> int:
        """Vmapped training rows: the S seeds, then with `baseline` S rows of the start kept
        fixed."""
        return self.num_seeds * (2 if self.baseline else 1)

    def reward_spec(self) -> RewardSpec:
        """The `RewardSpec` with this run's start and tunable mask."""
        return RewardSpec().for_run(self.start, self.tunable)


PAPER = SailorConfig(trajectories=8, window=0, reference_games=0, warmup_updates=0,
                     alignment=AlignmentConfig(method="bo", beta=0.9, mcmc_trust_region=0.2,
                                               heldout=0.0, survival_guard=False,
                                               survival_floor=None))
"""The paper's update, as the seed plan ran it: 8 whole games per seed and iteration, all the
agent's (no warm-up), ranked by the sum of `R_theta`, theta updated by scikit-optimize BO over
the bounds (`method="bt_mcmc"` for Zeng et al.'s MH posterior mean, beta 0.9, in a box of
+-0.2), accepted when it lowers the fitted pairs' error, with no held-out test and no survival
guard. The repair and ablation `sailor*` arms build on it; what it does from each start:
docs/repair.md."""
