"""Compare two `experiments/compare.py` folders start by start, paired per seed.

A change to SAILOR is measured by running `compare.py` twice with the same starts, seeds and
budget, once with the change (folder B) and once without (folder A); the kept-fixed arms may
be shared (copied: they do not depend on the change). Two arms of one comparison are
compared by `experiments/compare.py` itself (its `against` option). For every start whose
`METHOD` arm finished in both folders this prints:

- B - A: the paired difference of the final greedy score [95% t-CI] and the seeds where B is
  higher (seed s of both arms starts from the same network and games);
- the recovery fraction in A and in B (`report.recovery_fraction`, against the start and
  theta0 kept fixed in A; theta0 itself: the paired difference to theta0 kept fixed and the
  worst seed's ratio to its fixed twin);
- the final `game_over` weight (mean over seeds) in A and B, theta0's being -1;
- the share of the agent's judged windows that hold their game's end, over the whole run
  (`IterationRecord.sampled_ended`; "-" for a run recorded before it existed).
- what became of the seed-updates in A and B (`update_outcomes`, warm-up updates included):
  accepted, refused by the held-out test, refused by the survival guard after passing it.

    python benchmarks/results/repair_named_starts/compare_repairs.py --a runs/compare \\
        --b runs/compare_changed --out runs/compare_changed_vs_compare

More seeds: `--more-a` / `--more-b` name folders run the same way with other root seeds
(`compare.py --seed 1`); their seeds are pooled with `--a`'s and `--b`'s, pair by pair.

Writes `compare.md` and `compare.json.gz` (per-seed numbers) in `--out`.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.logging import stored_path
from sailor_jax.run.results import SailorResults
from sailor_lab import report
from sailor_lab.comparison import REFERENCE, score_samples, worst_ratio

GAME_OVER = FEATURE_NAMES.index("game_over")


@dataclasses.dataclass(frozen=True)
class Args:
    """Two compare.py folders, compared start by start."""

    a: str
    """The folder without the change (the baseline)."""
    b: str
    """The folder with the change."""
    method: str = "sailor"
    """The arm compared in both folders."""
    label_a: str = "A"
    label_b: str = "B"
    """Column labels of the two folders."""
    more_a: tuple[str, ...] = ()
    """Further seed sets of `--a`: folders run like it with other seeds (`compare.py
    --seed`), each holding the arm, its start kept fixed and theta0 kept fixed; their
    seeds are pooled after `--a`'s, in order."""
    more_b: tuple[str, ...] = ()
    """The same for `--b`, one folder per `--more-a` folder."""
    out: str = ""
    """Where compare.md and compare.json.gz go (none: print only)."""

    def __post_init__(self) -> None:
        if len(self.more_b) != len(self.more_a):
            raise UserError(f"--more-b: {len(self.more_b)} folders for {len(self.more_a)} in "
                            "--more-a", "name one --more-b folder per --more-a folder")


def _load(folder: str, arm: str) -> SailorResults | None:
    path = stored_path(os.path.join(folder, "variants", arm, "results.json"))
    return SailorResults.load(path) if os.path.exists(path) else None


def ended_share(results: SailorResults) -> float | None:
    """Mean over iterations and seeds of the agent's judged windows holding their game's end,
    as a share of the agent's windows (`trajectories - reference_games`); None if unrecorded."""
    counts = [it.sampled_ended for it in results.iterations]
    if not counts or any(c is None for c in counts):
        return None
    cfg = results.config
    per_seed = cfg["trajectories"] - cfg.get("reference_games", 0)
    return float(np.mean([c["agent"] for c in counts]) / per_seed)


def update_outcomes(results: SailorResults) -> dict[str, int]:
    """Counts over iterations and seeds of the seed-updates (`SeedUpdate.outcome`): `accepted`
    (moved), `heldout` (refused by the held-out test), `guard` (passed it, refused by the
    survival guard), `other` (no gain, no judge, none recorded), `total`. The warm-up updates
    before the first segment (`SailorResults.warmup`) count with them."""
    keys = {"moved": "accepted", "held out": "heldout", "guard": "guard"}
    counts = dict.fromkeys(("accepted", "heldout", "guard", "other", "total"), 0)
    for it in [*results.warmup, *results.iterations]:
        for seed in it.seeds:
            counts[keys.get(seed.outcome, "other")] += 1
            counts["total"] += 1
    return counts


def _side(folders: list[str], arm: str) -> dict | None:
    """One arm pooled over seed sets (`folders`): per-seed scores in order, the final
    `game_over` weight's mean over all seeds, the seed-weighted end-window share (None if any
    set lacks it) and the summed update outcomes; None if any set has not finished it."""
    runs = [_load(f, arm) for f in folders]
    if any(r is None for r in runs):
        return None
    per_run = [score_samples(r)["score"] for r in runs]
    final = np.concatenate([np.asarray(r.theta_history[-1]) for r in runs])
    shares = [ended_share(r) for r in runs]
    weights = [len(scores) for scores in per_run]
    counts = [update_outcomes(r) for r in runs]
    return {"score": [x for scores in per_run for x in scores],
            "game_over": float(final[:, GAME_OVER].mean()),
            "ended": None if None in shares else float(np.average(shares, weights=weights)),
            "updates": {k: sum(c[k] for c in counts) for k in counts[0]}}


def compare_start(args: Args, start: str) -> dict | None:
    """One start's row (seeds pooled over `--more-a`/`--more-b`), or None where the arm has
    not finished in every folder."""
    folders_a = [args.a, *args.more_a]
    folders_b = [args.b, *args.more_b]
    a = _side(folders_a, f"{start}.{args.method}")
    b = _side(folders_b, f"{start}.{args.method}")
    fixed = _side(folders_a, REFERENCE if start == "theta0" else f"{start}.fixed")
    reference = _side(folders_a, REFERENCE)
    if a is None or b is None or fixed is None or reference is None:
        return None
    sa, sb, sf, sr = (side["score"] for side in (a, b, fixed, reference))
    row = {"start": start, "b_minus_a": report.paired_difference(sb, sa),
           "score": {args.label_a: sa, args.label_b: sb}, "fixed": sf,
           "game_over": {args.label_a: a["game_over"], args.label_b: b["game_over"]},
           "ended_share": {args.label_a: a["ended"], args.label_b: b["ended"]},
           "updates": {args.label_a: a["updates"], args.label_b: b["updates"]}}
    if start == "theta0":
        row["vs_fixed"] = {lab: report.paired_difference(s, sf)
                           for lab, s in ((args.label_a, sa), (args.label_b, sb))}
        row["worst_to_fixed"] = {lab: worst_ratio(s, sf)
                                 for lab, s in ((args.label_a, sa), (args.label_b, sb))}
    elif np.mean(sr) > np.mean(sf):
        row["recovery"] = {lab: report.recovery_fraction(s, sf, sr)
                           for lab, s in ((args.label_a, sa), (args.label_b, sb))}
    return row


def _starts(args: Args) -> list[str]:
    """The starts with a `METHOD` arm folder in `--a` (finished or not)."""
    variants = os.path.join(args.a, "variants")
    names = sorted(os.listdir(variants)) if os.path.isdir(variants) else []
    suffix = "." + args.method
    return [n[: -len(suffix)] for n in names if n.endswith(suffix)]


def _ci(d: dict, fmt: str) -> str:
    return f"{d['mean']:{fmt}} [{d['ci_low']:{fmt}}, {d['ci_high']:{fmt}}]"


def _outcomes(u: dict) -> str:
    return f"{u['accepted']} / {u['heldout']} / {u['guard']} of {u['total']}"


def markdown(args: Args, rows: list[dict]) -> str:
    """The comparison table, one line per start."""
    la, lb = args.label_a, args.label_b
    lines = [f"| start | {lb} - {la}: final score [95% CI] (seeds higher) | recovery {la} | "
             f"recovery {lb} | game_over {la} / {lb} | windows holding the end {la} / {lb} | "
             f"accepted / held-out refused / guard refused {la}; {lb} |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        d = r["b_minus_a"]
        if "recovery" in r:
            rec = [_ci(r["recovery"][lab] | {"mean": r["recovery"][lab]["fraction"]}, ".2f")
                   for lab in (la, lb)]
        elif "vs_fixed" in r:
            rec = [_ci(r["vs_fixed"][lab], "+,.0f")
                   + f" (to fixed; worst seed {r['worst_to_fixed'][lab]:.2f})" for lab in (la, lb)]
        else:
            rec = ["-", "-"]
        ended = [f"{r['ended_share'][lab]:.2f}" if r["ended_share"][lab] is not None else "-"
                 for lab in (la, lb)]
        lines.append(f"| {r['start']} | {_ci(d, '+,.0f')} ({d['wins']}/{len(d['per_seed'])}) "
                     f"| {rec[0]} | {rec[1]} | {r['game_over'][la]:+.2f} / "
                     f"{r['game_over'][lb]:+.2f} | {ended[0]} / {ended[1]} | "
                     f"{_outcomes(r['updates'][la])}; {_outcomes(r['updates'][lb])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(Args, sys.argv[1:] if argv is None else argv,
                      description=__doc__.splitlines()[0])
    rows = [r for r in (compare_start(args, s) for s in _starts(args)) if r is not None]
    if not rows:
        raise UserError(f"--a/--b: no {args.method} arm has finished in both {args.a} and "
                        f"{args.b}", "run compare.py in both folders first")
    table = markdown(args, rows)
    print(table)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "compare.md"), "w", encoding="utf-8") as f:
            f.write(table)
        record = {"a": args.a, "b": args.b, "more_a": list(args.more_a),
                  "more_b": list(args.more_b), "method": args.method,
                  "rows": rows,
                  "machine": report.machine()}
        report.write_json_gz(os.path.join(args.out, "compare.json.gz"), record)
    return rows


if __name__ == "__main__":
    report_user_errors(main)
