"""What the theta updates did in a comparison: outcomes, the judge-evidence gate, the sampler.

    python benchmarks/update_audit.py --run runs/compare --arms theta0.sailor
    python benchmarks/update_audit.py --run runs/decide --json runs/decide/audit.json

Reads `variants/<ARM>/results.json` of a comparison folder (the folder compare.py wrote), or
of every block `seed<ROOT>/` under it, warm-up updates included. Per arm:

- the updates' outcomes (moved, held out, no evidence, guard, no gain, no judge) and shares;
- the judge-evidence gate (`AlignmentConfig.evidence_z`, `alignment.heldout.judge_evidence`):
  per seed, the first update at which the evidence z reached `--gate` (none: never), and the
  evidence z after the last update; the share of held-out tests with p < 0.05;
- the Bradley-Terry sampler's diagnostics (`SeedUpdate.mcmc`): median and 90th percentile of
  R-hat, the share of updates with R-hat above 1.1, the median effective sample size;
- the judge on the run's own windows (`SeedUpdate.agent_preferred`): the mean share of
  (agent, reference player) pairs it gave the agent and, with `--reference-skill` (the
  reference player's mean score on games of its own: `experiments/expert_play.py` at depth 1
  and epsilon 0.5 plays them), its accuracy: per update after the warm-up, the share where the
  agent's mean score in that segment's training games is above the reference's, one minus it
  where below, averaged per seed (`sailor_lab.judge_curve.window_accuracy`), then over seeds.

Prints a markdown table; `--json` writes the numbers. An arm whose results.json has no
`heldout_p` (a run written before the gate's records) shows no gate columns.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter

import numpy as np

from sailor_jax.alignment.heldout import judge_evidence
from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.run.results import OUTCOMES
from sailor_lab.judge_curve import comparison_folders, read_results, seed_updates, window_accuracy


@dataclasses.dataclass(frozen=True)
class Args:
    """The updates of a comparison's arms."""

    run: str
    """A compare.py output folder (its blocks `seed<ROOT>/` are read when it has them)."""
    arms: tuple[str, ...] = ()
    """Arms as `<start>.<arm>` (e.g. `theta0.sailor`); none: every arm with a judge."""
    gate: float = 3.0
    """The evidence z at which the gate counts as open."""
    reference_skill: float | None = None
    """The reference player's mean game score, for the judge's accuracy on the windows."""
    json: str = ""
    """Write the numbers to this file (none: print only)."""


def arm_records(folders: list[str], arm: str) -> list[list[list[dict]]]:
    """Per block, per seed, the update records of `arm` (`judge_curve.seed_updates`)."""
    return [seed_updates(r) for r in (read_results(f, arm) for f in folders) if r is not None]


def audit(blocks: list[list[list[dict]]], gate: float,
          reference_skill: float | None = None) -> dict:
    """The numbers of one arm (module docstring) from `arm_records`."""
    seeds = [seed for block in blocks for seed in block]
    updates = [u for seed in seeds for u in seed]
    counts = Counter(u.get("outcome") or "-" for u in updates)
    out = {"seeds": len(seeds), "updates": len(updates),
           "outcomes": {k: counts.get(k, 0) for k in (*OUTCOMES, "-") if counts.get(k, 0)}}
    p = [[u.get("heldout_p") for u in seed] for seed in seeds]
    if any(v is not None for row in p for v in row):
        opened, final = [], []
        for row in p:
            z = [judge_evidence(row[:k]) for k in range(1, len(row) + 1)]
            opened.append(next((k + 1 for k, v in enumerate(z) if v >= gate), None))
            final.append(z[-1] if z else 0.0)
        flat = np.array([v for row in p for v in row if v is not None], np.float64)
        out["gate"] = {"threshold": gate, "opened_after": opened, "final_z": final,
                       "seeds_opened": sum(k is not None for k in opened),
                       "share_p_below_0.05": float(np.nanmean(flat < 0.05))}
    diag = [u["mcmc"] for u in updates if u.get("mcmc")]
    if diag:
        rhat = np.array([d["rhat"] for d in diag], np.float64)
        ess = np.array([d["ess"] for d in diag], np.float64)
        out["mcmc"] = {"updates": len(diag), "rhat_median": float(np.nanmedian(rhat)),
                       "rhat_p90": float(np.nanpercentile(rhat, 90)),
                       "share_rhat_above_1.1": float(np.mean(rhat > 1.1)),
                       "ess_median": float(np.nanmedian(ess))}
    shares = [u["agent_preferred"] for u in updates if u.get("agent_preferred") is not None]
    if shares:
        out["judge"] = {"agent_preferred": float(np.mean(shares))}
        per_seed = [window_accuracy(seed, reference_skill) for seed in seeds] \
            if reference_skill is not None else []
        known = [x for x in per_seed if x is not None]
        if known:
            out["judge"] |= {"window_accuracy": float(np.mean(known)), "updates": sum(
                u.get("agent_preferred") is not None and u.get("train_score") is not None
                and u["train_score"] != reference_skill for seed in seeds for u in seed)}
    return out


def markdown(audits: dict[str, dict]) -> str:
    """One row per arm."""
    lines = ["| arm | seeds | updates | outcomes | gate opened (seeds) | first opening "
             "(update) | final z, median | p < 0.05 | R-hat median / p90 / > 1.1 | ESS median "
             "| agent preferred | window accuracy |",
             "|---|---:|---:|---|---:|---|---:|---:|---|---:|---:|---:|"]
    for arm, a in audits.items():
        outcomes = ", ".join(f"{k} {v} ({v / a['updates']:.1%})"
                             for k, v in a["outcomes"].items())
        g, m = a.get("gate"), a.get("mcmc")
        gate = ["-"] * 4 if g is None else [
            f"{g['seeds_opened']}/{a['seeds']}",
            " ".join("-" if k is None else str(k) for k in g["opened_after"]),
            f"{np.median(g['final_z']):+.2f}", f"{g['share_p_below_0.05']:.1%}"]
        mc = ["-", "-"] if m is None else [
            f"{m['rhat_median']:.2f} / {m['rhat_p90']:.2f} / {m['share_rhat_above_1.1']:.0%}",
            f"{m['ess_median']:.0f}"]
        j = a.get("judge", {})
        judge = [f"{j['agent_preferred']:.3f}" if j else "-",
                 f"{j['window_accuracy']:.3f} ({j['updates']} updates)"
                 if "window_accuracy" in j else "-"]
        lines.append(f"| {arm} | {a['seeds']} | {a['updates']} | {outcomes} | "
                     + " | ".join(gate + mc + judge) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    args = parse_args(Args, argv)
    folders = comparison_folders(args.run)
    arms = args.arms or sorted({a for f in folders
                                for a in os.listdir(os.path.join(f, "variants"))
                                if not a.endswith(".fixed")})
    audits = {}
    for arm in arms:
        blocks = arm_records(folders, arm)
        if not blocks:
            raise UserError(f"--arms: no finished {arm!r} in {args.run!r}",
                            "name an arm as <start>.<arm>, e.g. theta0.sailor")
        audits[arm] = audit(blocks, args.gate, args.reference_skill)
    print(markdown(audits))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(audits, f, indent=1)


if __name__ == "__main__":
    report_user_errors(main)
