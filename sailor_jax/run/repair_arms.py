"""The repair experiment's arms (`experiments/repair.py`): which `SailorConfig` each start and
method runs. Host-only.

Methods (the experiment's module docstring says what each does): `fixed`, the issue-24 arms
(`sailor`, `sailor_trust`, `sailor_bt_mcmc`, `sailor_random_judge`) and the
issue-34 arms (`VALUE_JUDGES`), which share the conservative update set by `ValueArmSettings`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from sailor_jax.config import SailorConfig
from sailor_jax.config.run import RECOMMENDED_ALIGNMENT, RECOMMENDED_PREFERENCES
from sailor_jax.config.starts import STARTS, Start, parse_start
from sailor_jax.errors import UserError
from sailor_jax.run.repair_table import REFERENCE

METHODS: tuple[str, ...] = ("fixed", "sailor", "sailor_trust", "sailor_bt_mcmc",
                            "sailor_random_judge", "sailor_value", "sailor_value_regret",
                            "sailor_value_outcome", "sailor_value_random_judge",
                            "sailor_value_regret_random_judge", "sailor_value_llm")
VALUE_JUDGES = {"sailor_value": ("expert", "value"), "sailor_value_regret": ("expert", "regret"),
                "sailor_value_outcome": ("outcome", "regret"),
                "sailor_value_random_judge": ("random", "regret"),
                "sailor_value_regret_random_judge": ("random", "regret"),
                "sailor_value_llm": ("llm", "regret")}
"""Judge kind and expert verdict of the value arms (all share the conservative update; the LLM
arm's judge is `base.ranker.llm`, its verdict unused)."""
COMPARED_AS = {"sailor_value_regret_random_judge": "mean"}
"""`PreferenceConfig.compare` of the arms that do not compare as their judge's verdict is made
("auto"): a random judge's order carries no verdict (`RandomRanker.aggregate` is "sum"), so the
regret verdict's matched control compares `R_theta` per move, as the regret arm does."""


_RECOMMENDED = SailorConfig()


@dataclasses.dataclass(frozen=True, kw_only=True)
class ValueArmSettings:
    """The sailor_value* arms' judging and update settings (their command-line options); the
    defaults are `SailorConfig()`'s, the recommended SAILOR's."""

    window: int = _RECOMMENDED.window
    """Moves per judged window in the sailor_value* arms."""
    trajectories: int = _RECOMMENDED.trajectories
    """Windows (one per game) judged per seed and iteration in the sailor_value* arms."""
    value_update: Literal["bt_mcmc", "bo"] = RECOMMENDED_ALIGNMENT.method
    """The sailor_value* arms' update: "bt_mcmc" (the MH posterior mean) or "bo" (BO's best
    point), either in a box of +-`--value-step` around the current theta."""
    value_step: float = RECOMMENDED_ALIGNMENT.mcmc_trust_region
    """Half-width of that box (the MH prior box, or BO's trust region)."""
    value_beta: float = RECOMMENDED_ALIGNMENT.beta
    """Bradley-Terry rationality of the MH likelihood in the sailor_value* arms (Zeng et al.:
    0.9, this experiment's default before 2026-11-25's table; larger concentrates the posterior
    on the pairs' fit: longer steps)."""
    heldout: float = RECOMMENDED_ALIGNMENT.heldout
    """Fraction of each group held out of the fit in the sailor_value* arms."""
    heldout_z: float = RECOMMENDED_ALIGNMENT.heldout_z
    """The held-out sign test's z in the sailor_value* arms: a step is accepted when
    gained - lost >= max(1, z sqrt(gained + lost)) on the held-out pairs."""
    survival_guard: bool = RECOMMENDED_ALIGNMENT.survival_guard
    """In the sailor_value* arms, reject an update that lowers the per-move reward of the
    iteration's trajectories (`AlignmentConfig.survival_guard`; off before 2026-11-25's
    table: `--no-survival-guard`)."""
    survival_floor: float | None = RECOMMENDED_ALIGNMENT.survival_floor
    """The survival guard's floor in the sailor_value* arms (`AlignmentConfig.survival_floor`:
    an update may lower a per-move level above it, down to it; None = never lower it)."""
    value_compare: Literal["auto", "sum", "mean"] = RECOMMENDED_PREFERENCES.compare
    """How the sailor_value* arms rank `R_theta` against the judge
    (`PreferenceConfig.compare`), every arm and its control alike: "sum" (the recommended
    SAILOR's, `SailorConfig()`: with it `sailor_value_regret` is the recommended SAILOR
    judged by the expert; issue 49), "mean", or "auto" as the judge's verdict is made (sums
    for the value verdict, per-move means for the regret verdict: the repair experiment's
    presets, as its tables before issue 49's last rows measured them)."""
    reference_games: int = _RECOMMENDED.reference_games
    """Of the `trajectories` per group in the sailor_value* arms, this many are played by the
    epsilon-greedy expert (`--reference-epsilon`): groups that compare play, not luck."""
    reference_epsilon: float = _RECOMMENDED.reference_epsilon
    """Random-move probability of that reference expert (depth 1)."""
    warmup_updates: int = _RECOMMENDED.warmup_updates
    """Theta updates before the first segment in the sailor_value* arms, judged on the
    untrained agent's and the reference player's windows (`SailorConfig.warmup_updates`;
    issue 49). 0 = none."""
    judge_noise: float = 0.0
    """The expert judge of the sailor_value and sailor_value_regret arms with its verdicts made
    this noisy (`RankerConfig.noise`: issue 50's judge of dialled quality). 0 = the expert."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.judge_noise) and self.judge_noise >= 0):
            raise ValueError(f"judge_noise must be finite and >= 0, got {self.judge_noise}")


def guarded(cfg: SailorConfig, args: ValueArmSettings | None = None) -> SailorConfig:
    """Issue 34's guarded SAILOR over `cfg`, its judge kept: groups of `args.trajectories`
    windows of `args.window` moves (at most `cfg.max_len`), `args.reference_games` of them
    played by the epsilon-greedy expert; `R_theta` compared as `args.value_compare` says
    (sums by default); the update a step in a box of
    +-`args.value_step` around the current theta (MH posterior mean, Zeng et al. 2024, or
    BO), accepted only if it orders the held-out windows' pairs better (sign test) and keeps
    the per-move reward level (survival guard).
    `guarded(PAPER)` is `SailorConfig()`; repair.py's sailor_value* arms apply their flags
    with it.

    Raises:
      ValueError: settings `SailorConfig` refuses (e.g. reference games >= windows).
    """
    args = args or ValueArmSettings()
    return dataclasses.replace(
        cfg, window=min(args.window, cfg.max_len), trajectories=args.trajectories,
        reference_games=args.reference_games, reference_epsilon=args.reference_epsilon,
        warmup_updates=args.warmup_updates,
        preferences=dataclasses.replace(cfg.preferences, compare=args.value_compare),
        alignment=dataclasses.replace(
            cfg.alignment, method=args.value_update, heldout=args.heldout, heldout_z=args.heldout_z,
            beta=args.value_beta,
            survival_guard=args.survival_guard, survival_floor=args.survival_floor,
            **({"mcmc_trust_region": args.value_step} if args.value_update == "bt_mcmc"
               else {"trust_region": args.value_step})))


def value_arm(cfg: SailorConfig, method: str, args: ValueArmSettings | None = None
              ) -> SailorConfig:
    """The sailor_value* arms' settings over `cfg`: `guarded` with the judge of
    `VALUE_JUDGES[method]` (`args`: the settings, by default `ValueArmSettings()`; the expert's
    verdicts made `args.judge_noise` noisy), compared as `args.value_compare` says, or with
    "auto" as `COMPARED_AS` says where it names the arm."""
    args = args or ValueArmSettings()
    kind, verdict = VALUE_JUDGES[method]
    cfg = guarded(cfg, args)
    noise = args.judge_noise if kind == "expert" else 0.0
    if args.value_compare == "auto" and method in COMPARED_AS:  # else guarded's comparison
        cfg = dataclasses.replace(cfg, preferences=dataclasses.replace(
            cfg.preferences, compare=COMPARED_AS[method]))
    return dataclasses.replace(cfg, ranker=dataclasses.replace(
        cfg.ranker, kind=kind, expert_verdict=verdict, noise=noise))


def arm_config(start: Start, method: str, base: SailorConfig, trust_region: float = 0.25,
               args: ValueArmSettings | None = None) -> SailorConfig:
    """The `SailorConfig` of one arm: `base` from theta0 = `start.theta`, reward learning per
    `method` (see `METHODS`).

    Raises:
      UserError: unknown method.
    """
    if method not in METHODS:
        raise UserError(f"--methods: unknown arm {method!r}", f"known: {', '.join(METHODS)}")
    cfg = dataclasses.replace(base, theta0=start.theta, baseline=False, tunable=None,
                              self_align=method != "fixed")
    if method == "sailor_trust":
        cfg = dataclasses.replace(cfg, alignment=dataclasses.replace(
            cfg.alignment, trust_region=trust_region))
    elif method == "sailor_random_judge":
        cfg = dataclasses.replace(cfg, ranker=dataclasses.replace(cfg.ranker, kind="random"))
    elif method == "sailor_bt_mcmc":
        cfg = dataclasses.replace(cfg, alignment=dataclasses.replace(cfg.alignment,
                                                                     method="bt_mcmc"))
    elif method in VALUE_JUDGES:
        cfg = value_arm(cfg, method, args)
    return cfg


def arms(args) -> list[tuple[str, Start, str, SailorConfig]]:
    """`(arm name, start, method, config)` of every arm, the reference first; `args`: the
    experiment's `Args` (`experiments/repair.py`: a `ValueArmSettings` with `base`, `starts`,
    `methods`, `trust_region`).

    Raises:
      UserError: an unknown or repeated start or method (before any work is done).
    """
    try:
        starts = [parse_start(s) for s in args.starts]
    except ValueError as e:
        raise UserError(f"--starts: {e}") from None
    names = [s.name for s in starts]
    if "theta0" in names and starts[names.index("theta0")].theta != STARTS["theta0"].theta:
        raise UserError("--starts: the name theta0 is the reference's; name your start otherwise")
    for what, given in (("--starts", names), ("--methods", args.methods)):
        if len(set(given)) != len(given):
            raise UserError(f"{what} repeats a name: {' '.join(given)}")
    out = [(REFERENCE, STARTS["theta0"], "fixed",
            arm_config(STARTS["theta0"], "fixed", args.base))]
    for start in starts:
        for method in args.methods:
            if start.name == "theta0" and method == "fixed":
                continue  # theta0 kept fixed is the reference, always run
            out.append((f"{start.name}.{method}", start, method,
                        arm_config(start, method, args.base, args.trust_region, args)))
    return out
