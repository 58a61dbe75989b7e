"""The comparison's table (`experiments/compare.py`): per-arm means, paired differences to the
start kept fixed and to the arm's random-judge control (`Arm.control`), recovery fractions.
Host-only.

Each arm is a `SailorResults`; seed s of every arm starts from the same network and
environments, so differences are paired per seed (`report.paired_difference`).
"""

from __future__ import annotations

from sailor_jax.config.arms import ARMS
from sailor_jax.game.features import FEATURE_NAMES
from sailor_lab import report

REFERENCE = "theta0.fixed"
"""The reference arm: the baseline reward theta0 kept fixed."""
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


def summarize(arm_list, results: dict) -> list[dict]:
    """One row per arm: means [CI], paired difference to its fixed start, recovery fraction.

    Args:
      arm_list: `(row name, start, arm, config)` per row (`START.ARM`), the reference first.
      results: `SailorResults` per arm name; the reference's must be there.
    """
    ref = score_samples(results[REFERENCE])["score"]
    rows = []
    for name, start, method, _ in arm_list:
        s = score_samples(results[name])
        row = {"arm": name, "start": start.name, "method": method, "per_seed": s,
               **{k: report.mean_ci(v) for k, v in s.items()},
               "final_theta": [sum(col) / len(col) for col in
                               zip(*results[name].theta_history[-1], strict=True)]}
        fixed = f"{start.name}.fixed" if start.name != "theta0" else REFERENCE
        if name != REFERENCE and method != "fixed" and fixed in results:
            fixed_score = score_samples(results[fixed])["score"]
            row["vs_fixed_start"] = report.paired_difference(s["score"], fixed_score)
            row["worst_ratio_to_fixed"] = worst_ratio(s["score"], fixed_score)
            gap = report.paired_difference(ref, fixed_score)
            if gap["mean"] > 0 and len(ref) >= 2 and fixed != REFERENCE:
                row["recovery"] = report.recovery_fraction(s["score"], fixed_score, ref)
        control = f"{start.name}.{ARMS[method].control}"
        if ARMS[method].control and control in results:
            row["random_judge_arm"] = control
            row["vs_random_judge"] = report.paired_difference(
                s["score"], score_samples(results[control])["score"])
        if method == "fixed" and name != REFERENCE:
            row["vs_theta0"] = report.paired_difference(s["score"], ref)
        rows.append(row)
    return rows


def _ci(stat, digits=0) -> str:
    mean, lo, hi = stat
    return f"{mean:,.{digits}f}" + ("" if lo != lo else f" [{lo:,.{digits}f}, {hi:,.{digits}f}]")


def _diff(d: dict | None) -> str:
    if not d:
        return ""
    return (f"{_ci((d['mean'], d['ci_low'], d['ci_high']))} ({d['wins']}/{len(d['per_seed'])} "
            "higher)")


def markdown(rows: list[dict]) -> str:
    """The repair table (GitHub markdown)."""
    head = ["arm", "final score [95% CI]", "worst seed",
            "paired diff. to the fixed start [95% CI]", "worst seed / its fixed twin",
            "(fixed start) diff. to theta0",
            "diff. to the random judge", "recovery fraction [95% CI]", "1024", "2048",
            "final theta (mean over seeds)"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * 9 + "---|"]
    for r in rows:
        rec = r.get("recovery")
        theta = ", ".join(f"{SHORT[n]} {v:.2f}" for n, v in
                          zip(FEATURE_NAMES, r["final_theta"], strict=True) if abs(v) >= 0.005)
        lines.append("| " + " | ".join([
            r["arm"], _ci(r["score"]), f"{min(r['per_seed']['score']):,.0f}",
            _diff(r.get("vs_fixed_start")),
            f"{r['worst_ratio_to_fixed']:.2f}" if "worst_ratio_to_fixed" in r else "",
            _diff(r.get("vs_theta0")),
            _diff(r.get("vs_random_judge")),
            _ci((rec["fraction"], rec["ci_low"], rec["ci_high"]), 2) if rec else "",
            f"{r['tile_1024'][0]:.2f}", f"{r['tile_2048'][0]:.2f}", theta]) + " |")
    return "\n".join(lines) + "\n"
