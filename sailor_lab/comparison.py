"""The comparison's table (`experiments/compare.py`): per-arm means, paired differences to the
start kept fixed and to the arm's random-judge control (`Arm.control`), recovery fractions,
and the field's statistics (`seed_statistics`: rliable's IQM, bootstrap mean and probability
of improvement; the smallest paired difference the seeds detect at 80% power). Host-only.

Each arm is a `SailorResults`; seed s of every arm starts from the same network and
environments, so differences are paired per seed (`report.paired_difference`). The table is
computed from each arm's per-seed samples (`arm_samples`), so blocks of seeds run under other
root seeds pool into one table by concatenation (`pool`), each seed keeping its twins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sailor_jax.config.arms import ARMS
from sailor_jax.game.features import FEATURE_NAMES
from sailor_lab import report, seed_statistics

REFERENCE = "theta0.fixed"
"""The reference arm: the baseline reward theta0 kept fixed."""
BOOTSTRAP_MIN_SEEDS = 3
"""Seeds from which the tables give rliable's bootstrap statistics (IQM, bootstrap mean,
probability of improvement): from 2 seeds a resample is one of 3 distinct sets, and an
interval over them reads as certainty ("0.00 [0.00, 0.00]")."""
SHORT = dict(zip(FEATURE_NAMES, ("score", "empty", "corner", "mono", "merges", "smooth",
                                  "tile_inc", "game_over"), strict=True))
"""Short feature names for the table's final-theta column."""


def worst_ratio(scores, fixed_scores) -> float:
    """The worst seed's final score over its kept-fixed twin's (paired per seed; the no-loss
    target's floor is 0.8)."""
    return min(a / max(b, 1e-9) for a, b in zip(scores, fixed_scores, strict=True))


def score_samples(results) -> dict[str, list[float]]:
    """Per-seed final greedy score and 1024 / 2048 rates of one arm."""
    m = report.per_seed_metrics(results.evaluation)
    return {"score": m["score"], "tile_1024": m["tile_1024"], "tile_2048": m["tile_2048"]}


def arm_samples(results) -> dict[str, list]:
    """What the table reads of one arm's `SailorResults`: its `score_samples` and
    `final_theta`, the final theta per seed (`[S][F]`)."""
    return {**score_samples(results), "final_theta": results.theta_history[-1]}


def pool(blocks: Sequence[dict[str, dict]]) -> dict[str, dict]:
    """The `arm_samples` of several blocks of seeds as one: every list concatenated block by
    block, so seed s of block b is at the same place in every arm (still paired).

    Args:
      blocks: per block, arm name -> `arm_samples`; every block must have the same arms.

    Raises:
      ValueError: no blocks, or blocks with different arms.
    """
    if not blocks or any(set(b) != set(blocks[0]) for b in blocks):
        raise ValueError(f"pool needs blocks with the same arms, got {[sorted(b) for b in blocks]}")
    return {arm: {k: [x for b in blocks for x in b[arm][k]] for k in blocks[0][arm]}
            for arm in blocks[0]}


def _paired(a: list[float], b: list[float]) -> dict:
    """`report.paired_difference` with its power (`seed_statistics.power_summary`) when there
    are 2 or more seeds."""
    d = report.paired_difference(a, b)
    if len(a) >= 2:
        d["power"] = seed_statistics.power_summary(d["per_seed"])
    return d


def verdict(diff: dict, recovery: dict | None = None) -> str:
    """One line that says what a paired comparison decides at its size.

    "a gain" or "a loss" when the paired difference's 95% t-interval excludes 0; "level" when
    every seed's difference is 0; otherwise "undecided at this size", with the largest
    difference the interval leaves open and the paired seeds (`seed_statistics.seeds_needed`,
    80% power, at the observed paired SD) that would detect the observed one. With a
    `recovery` (`report.recovery_fraction`; a wrong start) whose interval says otherwise than
    the paired difference's, the line says the measures disagree instead of a verdict.

    Args:
      diff: `report.paired_difference` (its `per_seed` differences, mean and interval).
      recovery: the same comparison's recovery fraction, or None.
    """
    d = diff["per_seed"]
    mean, lo, hi = diff["mean"], diff["ci_low"], diff["ci_high"]
    said = f"{mean:+,.0f} [{lo:+,.0f}, {hi:+,.0f}] ({diff['wins']}/{len(d)} seeds higher)"
    if all(x == 0 for x in d):
        return f"level: the same final score on every one of {len(d)} seeds"
    if len(d) < 2:
        return f"undecided at this size: 1 seed gives no interval ({mean:+,.0f})"
    sign = 1 if lo > 0 else -1 if hi < 0 else 0
    sd = float(np.std(d, ddof=1))
    n = seed_statistics.seeds_needed(abs(mean), sd)
    need = (f"; about {n:,} paired seeds would detect ±{abs(mean):,.0f} (paired SD {sd:,.0f})"
            if n is not None else "")
    if recovery is not None:
        r_lo, r_hi = recovery["ci_low"], recovery["ci_high"]
        r_sign = 1 if r_lo > 0 else -1 if r_hi < 0 else 0
        if r_sign != sign:
            return (f"the measures disagree: recovery {recovery['fraction']:.2f} [{r_lo:.2f}, "
                    f"{r_hi:.2f}] against a paired difference of {said}; no verdict at this "
                    f"size{need}")
    if sign:
        return f"{'a gain' if sign > 0 else 'a loss'}: {said}"
    return (f"undecided at this size: no difference larger than ±{max(-lo, hi):,.0f} (95%), "
            f"{said}{need}")


def summarize(arm_list, samples: dict, reps: int | None = None,
              against: str | None = None) -> list[dict]:
    """One row per arm: means [CI], paired differences to its fixed start (with their power)
    and to its random-judge control, recovery fraction; with 2 or more seeds, rliable's IQM
    and mean with bootstrap intervals (`rliable`) and the probability of improvement over the
    fixed start (`p_improvement_vs_fixed_start`) and the control. With `against`, the same
    paired difference and probability of improvement against that arm of the row's start
    (`vs_against`, `p_improvement_vs_against`). Each row compared with something carries its
    `verdict` (`verdict`) against `against`, else against its fixed start.

    Args:
      arm_list: `(row name, start, arm, config)` per row (`START.ARM`), the reference first.
      samples: `arm_samples` per arm name (or `pool`ed blocks); the reference's must be there.
      reps: bootstrap resamples of the rliable intervals (None: `seed_statistics.REPS`).
      against: an arm name of `arm_list`, or None.
    """
    reps = seed_statistics.REPS if reps is None else reps
    ref = samples[REFERENCE]["score"]
    many, boot = len(ref) >= 2, len(ref) >= BOOTSTRAP_MIN_SEEDS
    field = seed_statistics.aggregate_intervals(
        {n: samples[n]["score"] for n, *_ in arm_list}, reps) if boot else {}
    rows = []
    for name, start, method, _ in arm_list:
        s = {k: v for k, v in samples[name].items() if k != "final_theta"}
        row = {"arm": name, "start": start.name, "method": method, "per_seed": s,
               **{k: report.mean_ci(v) for k, v in s.items()},
               "final_theta": [sum(col) / len(col) for col in
                               zip(*samples[name]["final_theta"], strict=True)]}
        if boot:
            row["rliable"] = {**field[name], "reps": reps}
        fixed = f"{start.name}.fixed" if start.name != "theta0" else REFERENCE
        if name != REFERENCE and method != "fixed" and fixed in samples:
            fixed_score = samples[fixed]["score"]
            row["vs_fixed_start"] = _paired(s["score"], fixed_score)
            row["worst_ratio_to_fixed"] = worst_ratio(s["score"], fixed_score)
            gap = report.paired_difference(ref, fixed_score)
            if gap["mean"] > 0 and many and fixed != REFERENCE:
                row["recovery"] = report.recovery_fraction(s["score"], fixed_score, ref)
            if boot:
                row["p_improvement_vs_fixed_start"] = seed_statistics.probability_of_improvement(
                    s["score"], fixed_score, reps)
        named = ARMS.get(method)  # an arm written out on the command line has no control
        control = f"{start.name}.{named.control}" if named and named.control else None
        if control in samples:
            row["random_judge_arm"] = control
            row["vs_random_judge"] = _paired(s["score"], samples[control]["score"])
            if boot:
                row["p_improvement_vs_random_judge"] = (
                    seed_statistics.probability_of_improvement(
                        s["score"], samples[control]["score"], reps))
        if method == "fixed" and name != REFERENCE:
            row["vs_theta0"] = _paired(s["score"], ref)
        _against(row, samples, f"{start.name}.{against}" if against else None, boot, reps)
        rows.append(row)
    return rows


def _against(row: dict, samples: dict, other: str | None, many: bool, reps: int) -> None:
    """A row's `vs_against` (to arm `other` of its start, where that ran and is not the row)
    and its `verdict` (against `other`, else its fixed start)."""
    if other is not None and other in samples and other != row["arm"]:
        row["against_arm"] = other
        row["vs_against"] = _paired(row["per_seed"]["score"], samples[other]["score"])
        if many:
            row["p_improvement_vs_against"] = seed_statistics.probability_of_improvement(
                row["per_seed"]["score"], samples[other]["score"], reps)
        row["verdict"] = verdict(row["vs_against"])
    elif other is None and "vs_fixed_start" in row:
        row["verdict"] = verdict(row["vs_fixed_start"], row.get("recovery"))


def _ci(stat, digits=0) -> str:
    mean, lo, hi = stat
    return f"{mean:,.{digits}f}" + ("" if lo != lo else f" [{lo:,.{digits}f}, {hi:,.{digits}f}]")


def _diff(d: dict | None) -> str:
    if not d:
        return ""
    return (f"{_ci((d['mean'], d['ci_low'], d['ci_high']))} ({d['wins']}/{len(d['per_seed'])} "
            "higher)")


def _table(head: list[str], cells: list[list[str]], last_left: bool = False) -> list[str]:
    """GitHub markdown lines of a table, without the columns empty in every row."""
    keep = [k for k in range(len(head)) if k == 0 or any(row[k] for row in cells)]
    head, cells = [head[k] for k in keep], [[row[k] for k in keep] for row in cells]
    align = "|---|" + "---:|" * (len(head) - 1 - last_left) + ("---|" if last_left else "")
    return ["| " + " | ".join(head) + " |", align,
            *("| " + " | ".join(row) + " |" for row in cells)]


def markdown(rows: list[dict]) -> str:
    """The repair table (GitHub markdown), with a column of the paired difference to the
    `against` arm when one was given; with 2 or more seeds, `field_markdown` under it; then
    one verdict line per compared arm (`verdict`)."""
    against = any("vs_against" in r for r in rows)
    head = ["arm", "final score [95% CI]", "worst seed",
            "paired diff. to the fixed start [95% CI]", "worst seed / its fixed twin",
            "(fixed start) diff. to theta0",
            "diff. to the random judge", *(["diff. to the arm compared with"] if against else []),
            "recovery fraction [95% CI]", "1024", "2048", "final theta (mean over seeds)"]
    cells = []
    for r in rows:
        rec = r.get("recovery")
        theta = ", ".join(f"{SHORT[n]} {v:.2f}" for n, v in
                          zip(FEATURE_NAMES, r["final_theta"], strict=True) if abs(v) >= 0.005)
        mean, lo, hi = r["score"]
        cells.append([
            r["arm"], _ci((mean, max(lo, 0.0), hi)), f"{min(r['per_seed']['score']):,.0f}",
            _diff(r.get("vs_fixed_start")),
            f"{r['worst_ratio_to_fixed']:.2f}" if "worst_ratio_to_fixed" in r else "",
            _diff(r.get("vs_theta0")),
            _diff(r.get("vs_random_judge")), *([_diff(r.get("vs_against"))] if against else []),
            _ci((rec["fraction"], rec["ci_low"], rec["ci_high"]), 2) if rec else "",
            f"{r['tile_1024'][0]:.2f}", f"{r['tile_2048'][0]:.2f}", theta])
    lines = _table(head, cells, last_left=True)
    if len(rows[0]["per_seed"]["score"]) >= 2:
        lines += ["", field_markdown(rows).rstrip("\n")]
    judged = [r for r in rows if "verdict" in r]
    if judged:
        lines += ["", "Verdicts (the paired difference of final score, 95% t-interval):", ""]
        lines += [f"- {r['arm']} against {r.get('against_arm', 'its fixed start')}: "
                  f"{r['verdict']}" for r in judged]
    return "\n".join(lines) + "\n"


def _p(stat: list[float] | None) -> str:
    return "" if not stat else f"{stat[0]:.2f} [{stat[1]:.2f}, {stat[2]:.2f}]"


def _detectable(power: dict) -> str:
    """The detectable difference of `seed_statistics.power_summary`, or why there is none."""
    if power["paired_sd"] == 0:
        return "no power estimate: the paired SD is 0"
    d = power["detectable_80"]
    return f"±{d:,.0f}" if math.isfinite(d) else "no power estimate: the solver found none"


def field_markdown(rows: list[dict]) -> str:
    """The field's statistics of `summarize`'s rows (GitHub markdown): per arm, rliable's IQM
    and bootstrap mean, the probabilities of improvement, the paired SD to the fixed start (to
    the arm compared with, where one was) and the smallest paired difference its seeds detect
    at 80% power; then the power line."""
    against = any("vs_against" in r for r in rows)
    versus = "the arm compared with" if against else "the fixed start"
    head = ["arm", "seeds", "IQM [95% bootstrap]", "mean [95% bootstrap]",
            "P(arm > fixed start) [95%]", "P(arm > random judge) [95%]",
            *(["P(arm > arm compared with) [95%]"] if against else []),
            f"paired SD to {versus}", "detectable at 80% power"]
    powered, cells = [], []
    for r in rows:
        power = (r.get("vs_against" if against else "vs_fixed_start") or {}).get("power")
        if power:
            powered.append((r["arm"], power))
        cells.append([
            r["arm"], str(len(r["per_seed"]["score"])),
            *((_ci(r["rliable"]["iqm"]), _ci(r["rliable"]["mean"])) if "rliable" in r
              else ("", "")),
            _p(r.get("p_improvement_vs_fixed_start")), _p(r.get("p_improvement_vs_random_judge")),
            *([_p(r.get("p_improvement_vs_against"))] if against else []),
            f"{power['paired_sd']:,.0f}" if power else "",
            _detectable(power) if power else ""])
    lines = _table(head, cells)
    lines.append("")
    detects = "; ".join(f"{_detectable(p)} for {arm} ({p['seeds']} seeds, paired SD "
                        f"{p['paired_sd']:,.0f})" for arm, p in powered)
    field = (f"IQM, bootstrap means and P(X > Y) (a seed of X scores above one of Y) are "
             f"rliable's, {rows[0]['rliable']['reps']:,} stratified bootstrap resamples."
             if "rliable" in rows[0] else
             f"rliable's IQM, bootstrap means and P(X > Y) need {BOOTSTRAP_MIN_SEEDS} or more "
             f"seeds.")
    lines.append(f"{field} Power at 80% (a two-sided paired t-test at 5%): the smallest paired "
                 f"difference to {versus} these seeds detect is "
                 f"{detects or f'not defined (no {versus})'}.")
    return "\n".join(lines) + "\n"
