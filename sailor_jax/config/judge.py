"""Configs of the judge and of the theta update (host side): rankers, preference pairs,
Bayesian optimisation / Bradley-Terry MCMC (the LLM's own settings: `config.llm`).

Frozen, hashable dataclasses; validation raises `ValueError` naming the offending values.
Nothing here imports torch, transformers or scikit-optimize.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from sailor_jax.config.llm import LLMRankerConfig
from sailor_jax.game.reward import RewardSpec

WEIGHTINGS = ("none", "confidence", "discrepancy")
COMPARISONS = ("auto", "sum", "mean")
"""How `R_theta` ranks a trajectory: the judge's own way (auto), by feature sums or means."""
METHODS = ("bo", "bt_mcmc", "bt_reliability")
OBJECTIVES = ("error", "bt_nll")
RANKER_KINDS = ("llm", "outcome", "linear_oracle", "expert", "random")
EXPERT_VERDICTS = ("regret", "agreement", "value")


def verdict_aggregate(verdict: str) -> str:
    """What the expert's `verdict` on a trajectory is about: "sum" for the value verdict,
    "mean" for the per-move regret and agreement (`Ranker.aggregate`)."""
    return "sum" if verdict == "value" else "mean"


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PreferenceConfig:
    """How preference pairs are selected and weighted."""

    weighting: Literal["none", "confidence", "discrepancy"] = "none"
    """Pair weights: 1, the judge's margin |2p - 1|, or its rank distance (mean 1)."""
    concordant_ratio: float = 1.0
    """|D_pos| = round(ratio * |D_neg|) (half up), capped by the concordant pairs available."""
    compare: Literal["auto", "sum", "mean"] = "sum"
    """How `R_theta` ranks a trajectory against the judge: "sum" (`theta . Phi`, the whole
    return; the recommended, whatever the judge: a trajectory cut short by the game's end then
    collects less of every per-move term, so the pairs see dying), "mean" (`theta . Phi /
    length`, per move) or "auto" (as the judge's verdict is made, `RankerConfig.aggregate`:
    per-move mean for the expert's regret, sum for its value verdict, the outcome and the
    LLM; `alignment.heldout`)."""

    def __post_init__(self) -> None:
        if self.compare not in COMPARISONS:
            raise ValueError(f"compare must be one of {COMPARISONS}, got {self.compare!r}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {self.weighting!r}")
        if not (np.isfinite(self.concordant_ratio) and self.concordant_ratio >= 0):
            raise ValueError(
                f"concordant_ratio must be finite and >= 0, got {self.concordant_ratio}"
            )


@dataclasses.dataclass(frozen=True, kw_only=True)
class AlignmentConfig:
    """How theta is updated from preference pairs. The defaults are the recommended update
    (`SailorConfig().alignment`): the Metropolis-Hastings posterior mean of a Bradley-Terry
    likelihood (Zeng et al. 2024) in a box of +-0.3 around the current theta, fitted on half
    of each group's trajectories and accepted only if it orders the held-out half better and
    keeps the per-move reward level (the survival guard, floor 0.5). The paper's update is
    `PAPER.alignment` (`config.run.PAPER`)."""

    method: Literal["bo", "bt_mcmc", "bt_reliability"] = "bt_mcmc"
    """"bo": scikit-optimize GP minimisation; "bt_mcmc": Zeng et al. (2024) posterior mean;
    "bt_reliability": the posterior mean of theta and the judge's reliability, carried from
    update to update (`alignment.reliability`)."""
    objective: Literal["error", "bt_nll"] = "error"
    """BO objective: weighted pair error (ties count 1/2) or Bradley-Terry NLL."""
    bo_calls: int = 40
    """Objective evaluations by `gp_minimize` after the current theta."""
    bo_initial_points: int = 10
    """Random points before the GP model is used (at most `bo_calls`)."""
    update_workers: int = 0
    """Processes that run the seeds' updates side by side (joblib's loky pool; 0 = one per
    CPU core available, at most one per seed; 1 = serial). Same thetas whatever the number."""
    trust_region: float | None = None
    """Max absolute change of each tunable entry per update (None = bounds only)."""
    beta: float = 5.0
    """Boltzmann rationality of the Bradley-Terry likelihood."""
    mcmc_samples: int = 2000
    """Sampler steps per chain, burn-in included (bt_mcmc's Metropolis-Hastings steps;
    bt_reliability's NUTS adaptation and draws)."""
    mcmc_burn_in: int = 500
    """Initial steps per chain left out of the posterior mean (bt_reliability: adaptation)."""
    reliability_prior: tuple[float, float] = (1.0, 4.0)
    """bt_reliability: the Beta(a, b) prior of the judge's reliability eta (the share of its
    verdicts that follow the reward; the rest are coin flips): (1, 4) has its mode at eta = 0,
    "no information", and mean 0.2."""
    prior_sd: float = 0.3
    """bt_reliability: the sd of theta's Gaussian prior around the seed's first theta, and the
    widest any later prior may be."""
    mcmc_trust_region: float = 0.3
    """Half-width of the uniform prior box around the current theta (within bounds)."""
    heldout: float = 0.5
    """Fraction of each group's trajectories held out of the fit: the update is fitted on the
    others' pairs and accepted only if it orders the held-out pairs better than the current
    theta by a sign-test margin (net pairs gained >= max(1, sqrt(pairs changed)),
    `alignment.heldout.pairs_test`). 0 = accept on the fitted pairs."""
    survival_guard: bool = True
    """Reject an update that lowers the per-move reward of the iteration's trajectories (the
    terminal feature left out; `alignment.heldout.survival_check`): how this project sets the
    per-move level that no comparison of equal-length windows can see."""
    survival_floor: float | None = 0.5
    """With `survival_guard`, the per-move level above which an update may lower it (never
    below this floor; reward units per move, the terminal feature left out): it repairs a start
    that pays a bonus on every move. None = never lower it."""
    evidence_z: float = 0.0
    """The judge-evidence gate: accept an update only while the seed's judge has shown, over its
    earlier updates, that a theta fitted to its verdicts orders held-out trajectories better
    than chance: Stouffer's z of the earlier updates' one-sided Kendall tests at least this
    (`alignment.heldout.judge_evidence`). 0 = no gate; needs `heldout > 0`."""

    def __post_init__(self) -> None:
        _check(self.method in METHODS, f"method must be one of {METHODS}, got {self.method!r}")
        _check(
            self.objective in OBJECTIVES,
            f"objective must be in {OBJECTIVES}, got {self.objective!r}",
        )
        _check(
            self.bo_calls >= 1 and 0 <= self.bo_initial_points <= self.bo_calls,
            f"need 0 <= bo_initial_points <= bo_calls and bo_calls >= 1, "
            f"got {self.bo_initial_points} and {self.bo_calls}",
        )
        _check(
            0 <= self.mcmc_burn_in < self.mcmc_samples,
            f"need 0 <= mcmc_burn_in < mcmc_samples, got {self.mcmc_burn_in}, {self.mcmc_samples}",
        )
        _check(np.isfinite(self.heldout) and 0 <= self.heldout < 1,
               f"heldout must be in [0, 1), got {self.heldout}")
        _check(self.survival_floor is None
               or (np.isfinite(self.survival_floor) and self.survival_floor >= 0),
               f"survival_floor must be None or finite and >= 0, got {self.survival_floor}")
        _check(np.isfinite(self.evidence_z) and self.evidence_z >= 0,
               f"evidence_z must be finite and >= 0, got {self.evidence_z}")
        _check(self.evidence_z == 0 or self.heldout > 0,
               f"evidence_z {self.evidence_z} needs a held-out part: set heldout in (0, 1)")
        _check(self.update_workers >= 0,
               f"update_workers must be >= 0 (0 = one per core), got {self.update_workers}")
        _check(len(self.reliability_prior) == 2
               and all(np.isfinite(v) and v > 0 for v in self.reliability_prior),
               f"reliability_prior must be two finite numbers > 0, got {self.reliability_prior}")
        for name in ("beta", "mcmc_trust_region", "trust_region", "prior_sd"):
            value = getattr(self, name)
            if value is not None or name != "trust_region":
                _check(
                    np.isfinite(value) and value > 0, f"{name} must be finite and > 0, got {value}"
                )


def unread_fields(kind: str) -> tuple[str, ...]:
    """The `RankerConfig` fields a judge of `kind` never reads (`RankerConfig.unread_fields`;
    also for a saved config's dict, `run_dir.current_config`)."""
    expert = () if kind == "expert" else ("expert_depth", "expert_verdict")
    return expert + (() if kind == "llm" else ("llm",))


@dataclasses.dataclass(frozen=True, kw_only=True)
class RankerConfig:
    """Who judges the sampled trajectories."""

    kind: Literal["llm", "outcome", "linear_oracle", "expert", "random"] = "llm"
    """llm (Hugging Face model), outcome (final game score), linear_oracle (theta_star),
    expert (the expectimax player's verdict on each move, `judges.expert.ExpertRanker`) or
    random (a uniformly random order: the no-information control, `oracles.RandomRanker`)."""
    llm: LLMRankerConfig = LLMRankerConfig()
    """LLM settings (kind=llm)."""
    theta_star: tuple[float, ...] | None = None
    """Hidden reward of the linear oracle (kind=linear_oracle), 8 values."""
    expert_depth: int = 2
    """Expectimax depth of the expert judge (kind=expert; player moves searched)."""
    expert_verdict: Literal["regret", "agreement", "value"] = "regret"
    """Verdict of the expert judge: per-move normalised "regret" for the move played (the
    recommended, with `R_theta` compared as sums: `PreferenceConfig.compare`) or
    "agreement" with the expert's move (means over the moves), or "value": score gained +
    change of the expert's value of the position over the trajectory (a sum;
    `judges.expert`)."""
    noise: float = 0.0
    """A synthetic judge of dialled quality (0 = exact; large = a random order). kind=expert:
    each group ranked by the normal scores of the expert's order plus Gaussian noise of this
    standard deviation (`judges.expert`); kind=linear_oracle: the Boltzmann temperature of
    its order, in return units (`oracles.LinearOracleRanker`)."""

    @property
    def aggregate(self) -> str:
        """What this judge's verdict on a trajectory is about: "mean" (the expert's per-move
        regret and agreement) or "sum" (every other verdict); what `compare="auto"` resolves
        to (`alignment.heldout.resolve_comparison`, `judges.base.Ranker.aggregate`)."""
        return verdict_aggregate(self.expert_verdict) if self.kind == "expert" else "sum"

    def unread_fields(self) -> tuple[str, ...]:
        """The fields this judge never reads (a name covers its nested fields): the expert's
        settings under another judge, the LLM's under another judge. A saved run that differs
        from a config only there ran the same (`run_dir`)."""
        return unread_fields(self.kind)

    def __post_init__(self) -> None:
        if not (np.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise must be finite and >= 0, got {self.noise}")
        if self.noise > 0 and self.kind not in ("expert", "linear_oracle"):
            raise ValueError(f"noise applies to the synthetic judges only (kind 'expert' or "
                             f"'linear_oracle'), got kind {self.kind!r}")
        if self.kind not in RANKER_KINDS:
            raise ValueError(f"ranker kind must be one of {', '.join(RANKER_KINDS)}, "
                             f"got {self.kind!r}")
        if self.expert_verdict not in EXPERT_VERDICTS:
            raise ValueError(f"expert_verdict must be one of {EXPERT_VERDICTS}, "
                             f"got {self.expert_verdict!r}")
        if isinstance(self.expert_depth, bool) or int(self.expert_depth) < 1:
            raise ValueError(f"expert_depth must be an int >= 1, got {self.expert_depth}")
        if self.kind == "linear_oracle" and self.theta_star is None:
            raise ValueError("ranker kind linear_oracle needs theta_star (8 values)")
        if self.theta_star is not None:
            RewardSpec().validate(self.theta_star, "theta_star")

