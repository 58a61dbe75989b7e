"""Typed records of a run: per-seed theta updates, iterations, the loop state, results.json.

Host-only. The one place that knows the schema of a SAILOR `results.json` and of the loop
state saved in each checkpoint: `SailorResults.to_json` writes it, `SailorResults.load` reads
and validates it (`experiments/` read results only through here, or through `read_json`).
Every record converts with `to_json()` (plain JSON values; NaN becomes null through
`logging.to_jsonable`) and `from_json(d)`.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from typing import Any

import numpy as np

from sailor_jax.errors import MissingFileError, UserError
from sailor_jax.logging import open_text, stored_path, to_jsonable
from sailor_jax.run import run_dir

PHASES = ("train", "collect", "rank", "update", "checkpoint", "eval")
"""Wall-clock phases of a SAILOR run (seconds in `timings`, with `compile`)."""


def _from_fields(cls, d: dict) -> Any:
    """Build dataclass `cls` from the known keys of `d` (missing optional keys take defaults)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


class Outcome(enum.StrEnum):
    """What an update did to a seed's theta, in the order a decision is made
    (`run.theta_update.decide`); stored in `results.json` as its value."""

    MOVED = "moved"
    """Accepted: theta moved."""
    HELD_OUT = "held out"
    """Refused: it ordered the held-out windows no better than theta did."""
    NO_EVIDENCE = "no evidence"
    """Refused: the judge-evidence gate was closed (`AlignmentConfig.evidence_z`)."""
    GUARD = "guard"
    """Refused by the survival guard."""
    NO_GAIN = "no gain"
    """The fit did not lower the pair error."""
    NO_JUDGE = "no judge"
    """The judge gave no ranking."""


@dataclasses.dataclass
class SeedUpdate:
    """What one iteration did to one seed's theta (host-only; a row of `iterations[t].seeds`).

    Kendall tau is between `R_theta = Phi @ theta` and the judge's ranking of the seed's `M`
    sampled trajectories, before and after the update; errors are weighted pair errors in
    [0, 1] (`alignment.updates.pair_error`). Fields that did not apply stay None and are left out of
    the JSON (a failed judge has no tau).
    """

    judge_failed: bool = False
    num_discordant: int = 0
    num_concordant: int = 0
    message: str = ""
    kendall_tau_before: float | None = None
    """Kendall's tau of `R_theta` with the judge on the fitted windows, before the update."""
    kendall_tau_after: float | None = None
    """The same after it (the current theta's if the update was refused)."""
    error_before: float | None = None
    error_after: float | None = None
    accepted: bool | None = None
    outcome: Outcome | None = None
    """What the update did to theta (`Outcome`). None: no update was attempted (a fixed
    reward, another process)."""
    evaluations: int | None = None
    heldout_p: float | None = None
    """One-sided p-value that the fitted theta orders the held-out windows as the judge does
    (`alignment.heldout.heldout_p`; NaN: nothing to test; None: no held-out part)."""
    agent_preferred: float | None = None
    """The share of (agent, reference player) pairs of the judged group in which the judge
    ranked the agent's window higher (`alignment.preferences.agent_preferred`; None: no
    reference games)."""
    mcmc: dict | None = None
    """bt_mcmc's convergence diagnostics for this update, `{"rhat", "ess"}`
    (`alignment.updates.UpdateResult.diagnostics`; None: no sampler ran)."""
    evidence_z: float | None = None
    """The seed's judge evidence before this update: Stouffer's z of its earlier updates'
    `heldout_p` (`alignment.heldout.judge_evidence`; None: no held-out part)."""
    belief: dict | None = None
    """What the bt_reliability update leaves for the seed's next update (its posterior over
    theta and the judge's reliability, `alignment.reliability.Belief.to_json`); None: another
    method."""
    refine: dict | None = None
    """LLM-guided refinement of this seed: answer, suggestion, invalid_reason, accepted, ..."""

    def to_json(self) -> dict:
        return to_jsonable({k: v for k, v in dataclasses.asdict(self).items() if v is not None})

    @classmethod
    def from_json(cls, d: dict) -> SeedUpdate:
        # A present null was a NaN (e.g. the error of an update without pairs): keep it present.
        update = _from_fields(cls, {k: float("nan") if v is None and k in _NAN_FIELDS else v
                                    for k, v in d.items()})
        if update.outcome is not None:
            update.outcome = Outcome(update.outcome)
        return update


OUTCOMES = tuple(o.value for o in Outcome)
"""The values of `SeedUpdate.outcome`, in the order a decision is made."""

_NAN_FIELDS = ("kendall_tau_before", "kendall_tau_after", "error_before", "error_after",
               "heldout_p")


@dataclasses.dataclass
class IterationRecord:
    """One SAILOR iteration over all seeds (host-only; `results.json` `iterations[t]`).

    `seconds` holds the iteration's phase seconds; `host_overhead_s` is all of them but
    training; `theta` is `[S][F]` after the update; `train_score` the per-seed mean game score of
    the episodes that ended during the segment (None where none ended); `sampled_*` are means
    over the trajectories shown to the judge (None without a judge).
    """

    iteration: int
    env_steps: int
    sps: float
    seconds: dict[str, float]
    host_overhead_s: float
    theta: list[list[float]]
    seeds: list[SeedUpdate]
    train_score: list[float | None]
    sampled_score_mean: float | None = None
    sampled_length_mean: float | None = None
    evaluation: dict | None = None
    """Greedy evaluation after this iteration (`eval_every`), as `runner.evaluate_rows`."""
    judge_tokens: dict[str, int] | None = None
    """`{"prompt": n, "completion": n}` tokens an endpoint judge reported (None: no endpoint)."""
    sampled_ended: dict[str, list[int]] | None = None
    """Per seed, how many of the judged trajectories contain their game's end (`game_over`
    fired): `{"agent": [S], "reference": [S]}` (`phases.ended_counts`; None without a judge)."""

    def to_json(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["seeds"] = [s.to_json() for s in self.seeds]
        for optional in ("evaluation", "judge_tokens", "sampled_ended"):
            if d[optional] is None:
                del d[optional]
        return to_jsonable(d)

    @classmethod
    def from_json(cls, d: dict) -> IterationRecord:
        record = _from_fields(cls, d)
        record.seeds = [SeedUpdate.from_json(s) for s in d["seeds"]]
        return record


@dataclasses.dataclass
class LoopState:
    """The host state of a SAILOR run, saved with every checkpoint (host-only).

    `theta_history` is `[t + 1][S][F]` after `t` iterations; `best_score` and `stall` track,
    per seed, the best segment game score and the iterations since it last improved (for
    LLM-guided refinement). With `SailorConfig.warmup_updates = K`, `warmup` holds the K
    updates made before the first segment and `theta_history` is `[K + t + 1][S][F]`: the start,
    the K warm-up thetas, then one per iteration.
    """

    theta_history: list[list[list[float]]]
    iterations: list[IterationRecord] = dataclasses.field(default_factory=list)
    warmup: list[IterationRecord] = dataclasses.field(default_factory=list)
    timings: dict[str, float] = dataclasses.field(default_factory=lambda: dict.fromkeys(
        PHASES, 0.0))
    best_score: list[float | None] = dataclasses.field(default_factory=list)
    stall: list[int] = dataclasses.field(default_factory=list)

    @classmethod
    def start(cls, theta: np.ndarray, num_seeds: int) -> LoopState:
        """Iteration 0: every seed at the start weights `theta` (`float32[F]`)."""
        return cls(theta_history=[np.tile(theta, (num_seeds, 1)).tolist()],
                   best_score=[None] * num_seeds, stall=[0] * num_seeds)

    @property
    def iteration(self) -> int:
        """Iterations done."""
        return len(self.iterations)

    @property
    def thetas(self) -> np.ndarray:
        """`float32[S, F]` current weights."""
        return np.asarray(self.theta_history[-1], np.float32)

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["iterations"] = [r.to_json() for r in self.iterations]
        d["warmup"] = [r.to_json() for r in self.warmup]
        return to_jsonable(d)

    @classmethod
    def from_json(cls, d: dict) -> LoopState:
        state = _from_fields(cls, d)
        state.iterations = [IterationRecord.from_json(r) for r in d["iterations"]]
        state.warmup = [IterationRecord.from_json(r) for r in d.get("warmup", [])]
        return state


def total_tokens(iterations: list[IterationRecord]) -> dict[str, int] | None:
    """`{"prompt", "completion", "total"}` tokens summed over the iterations that report
    `judge_tokens`; None when none does (the judge is not an endpoint)."""
    counted = [r.judge_tokens for r in iterations if r.judge_tokens is not None]
    if not counted:
        return None
    prompt, completion = (sum(c[k] for c in counted) for k in ("prompt", "completion"))
    return {"prompt": prompt, "completion": completion, "total": prompt + completion}


@dataclasses.dataclass
class SailorResults:
    """`results.json` of a SAILOR run (host-only): the schema lives here.

    `evaluation` / `baseline_evaluation` are `runner.evaluate_rows` dicts (pooled
    `evaluation.summarize` plus `per_seed`); `baseline_evaluation` is None without baseline
    rows. `preferences` and `agreement` in the JSON are per-iteration views of `iterations`.
    `warmup` holds the updates made before the first segment (`SailorConfig.warmup_updates`;
    their thetas follow the start in `theta_history`); left out of the JSON when there were none.
    """

    config: dict
    ranker: dict
    feature_names: list[str]
    theta_history: list[list[list[float]]]
    iterations: list[IterationRecord]
    env_steps_per_seed: int
    evaluation: dict
    baseline_evaluation: dict | None
    timings: dict[str, float]
    warmup: list[IterationRecord] = dataclasses.field(default_factory=list)

    @property
    def preferences(self) -> list[dict[str, list[int]]]:
        """Per iteration, the per-seed `num_discordant` / `num_concordant` pair counts."""
        return [{key: [getattr(s, key) for s in r.seeds]
                 for key in ("num_discordant", "num_concordant")} for r in self.iterations]

    @property
    def agreement(self) -> list[dict[str, list[float | None]]]:
        """Per iteration, the per-seed Kendall tau before / after the update."""
        return [{key: [getattr(s, key) for s in r.seeds]
                 for key in ("kendall_tau_before", "kendall_tau_after")} for r in self.iterations]

    @property
    def judge_tokens(self) -> dict[str, int] | None:
        """The run's endpoint-judge tokens (`total_tokens` of the warm-up's and the
        iterations' records)."""
        return total_tokens(self.warmup + self.iterations)

    @property
    def self_align(self) -> bool:
        """Whether theta was learned (False: a fixed-reward variant)."""
        return bool(self.config.get("self_align", True))

    def to_json(self) -> dict:
        return to_jsonable({
            "config": self.config, "ranker": self.ranker, "feature_names": self.feature_names,
            "theta_history": self.theta_history, "preferences": self.preferences,
            "agreement": self.agreement, "judge_tokens": self.judge_tokens,
            "iterations": [r.to_json() for r in self.iterations],
            "env_steps_per_seed": self.env_steps_per_seed, "evaluation": self.evaluation,
            "baseline_evaluation": self.baseline_evaluation, "timings": self.timings,
            **({"warmup": [r.to_json() for r in self.warmup]} if self.warmup else {})})

    @classmethod
    def from_json(cls, d: dict) -> SailorResults:
        results = _from_fields(cls, d)
        results.config = run_dir.renamed_fields(results.config)
        results.iterations = [IterationRecord.from_json(r) for r in d["iterations"]]
        results.warmup = [IterationRecord.from_json(r) for r in d.get("warmup", [])]
        return results

    def write(self, out_dir: str) -> str:
        """Write `out_dir/results.json`; return its path."""
        path = os.path.join(out_dir, "results.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=2)
        return path

    @classmethod
    def load(cls, path: str) -> SailorResults:
        """Read a run's `results.json` (the file, or the run folder holding it).

        Raises:
          FileNotFoundError: no results.json at `path`.
          ValueError: not JSON, or not a SAILOR results.json (the message names the file and
            the missing keys).
        """
        file, d = read_json(path)
        required = {f.name for f in dataclasses.fields(cls)} - {"baseline_evaluation", "warmup"}
        missing = sorted(required - set(d))
        if missing:
            raise UserError(f"{file} is not a SAILOR results.json: missing {missing}")
        try:
            return cls.from_json(d)
        except (KeyError, TypeError, ValueError) as err:
            raise UserError(f"{file} is not a SAILOR results.json: {err!r}") from err


def read_json(path: str) -> tuple[str, dict]:
    """`(file, parsed dict)` of a run's `results.json` (the file, or the folder holding it).

    Raises:
      MissingFileError: no results.json at `path` (a `FileNotFoundError`); for a run folder
        that has not finished, the line says that `sailor.py ... --resume` finishes it.
      UserError: not valid JSON, or not a JSON object (a `ValueError`).
    """
    file = stored_path(os.path.join(path, "results.json") if os.path.isdir(path) else path)
    if not os.path.isfile(file) and os.path.isfile(stored_path(os.path.join(path,
                                                                           "config.json"))):
        raise run_dir.unfinished_error(path, "run this command again")
    if not os.path.isfile(file):
        raise MissingFileError(f"no SAILOR results.json at {path!r}",
                               "pass the folder of a finished run, or its results.json")
    try:
        with open_text(file) as f:
            d = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{file} is not valid JSON: {err}") from err
    if not isinstance(d, dict):
        raise UserError(f"{file} is not a SAILOR results.json (not a JSON object)")
    return file, d

