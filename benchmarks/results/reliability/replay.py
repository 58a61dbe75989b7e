"""The reliability update replayed on the stored SAILOR windows: how far theta moves, and how
well it then orders the other set's windows, under SmolLM2's recorded verdicts and a random
judge. A development probe of this folder's design, not a row: no agent trains on the thetas.

    python benchmarks/results/reliability/replay.py --windows development --json

For each run of the window set (start x seed) its groups are taken in iteration order; each
group's verdicts (the loop judge's recorded scores, or uniformly random scores) become every
judged pair, weight 2 / M, and `alignment.reliability.sample` updates the carried belief;
theta steps to the posterior mean clipped into [-1, 1]. A theta is scored by the share of the
other set's (agent, reference player) window pairs of its start that `theta . Phi` orders by
skill (`view_ceiling.score_accuracy`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

import numpy as np

from sailor_jax.alignment import reliability
from sailor_jax.alignment.pair_objectives import diff_scale
from sailor_jax.cli import parse_args
from sailor_lab import view_ceiling
from sailor_lab.sailor_windows import WindowSet
from sailor_lab.starts import STARTS

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOWS = os.path.join(HERE, "..", "judge_windows")


@dataclasses.dataclass(frozen=True)
class Args:
    """Replay the reliability update on a stored window set."""

    windows: str = "development"
    """The set replayed (development or confirmation); the other one scores the thetas."""
    judges: tuple[str, ...] = ("random", "llm")
    """random (uniform scores) and llm (the loop's recorded SmolLM2 scores)."""
    eta_prior: tuple[float, float] = (1.0, 4.0)
    """Beta prior of the judge's reliability."""
    prior_sd: float = 0.3
    """theta's prior sd around its start (and the widest later prior)."""
    beta: float = 5.0
    """Bradley-Terry rationality."""
    warmup: int = 500
    samples: int = 1000
    json: bool = False
    """Print one JSON line per judge and start."""


def replay(windows: WindowSet, judge: str, args: Args, rng: np.random.Generator) -> dict:
    """Per (start, seed): the theta history `[T + 1, 8]`, eta's mean and R-hat/ESS per update."""
    out = {}
    for start, seed in sorted(set(zip(windows.start.tolist(), windows.seed.tolist(), strict=True))):
        idx = np.flatnonzero((windows.start == start) & (windows.seed == seed))
        theta = np.asarray(STARTS[start].theta, np.float64)
        belief = reliability.Belief.prior(theta, args.prior_sd, *args.eta_prior)
        history, etas, diagnostics = [theta], [], []
        for g in idx[np.argsort(windows.iteration[idx])]:
            phi = windows.batch.Phi[g].astype(np.float64)
            scores = (windows.loop_scores[g].astype(np.float64) if judge == "llm"
                      else rng.random(len(phi)))
            i, j = np.triu_indices(len(phi), 1)
            keep = scores[i] != scores[j]
            i, j = i[keep], j[keep]
            first = scores[i] > scores[j]
            dphi = phi[np.where(first, i, j)] - phi[np.where(first, j, i)]
            post = reliability.sample(
                belief, -np.ones(8), np.ones(8), dphi * args.beta / diff_scale(dphi),
                np.zeros(len(dphi)), np.full(len(dphi), 2.0 / len(phi)),
                int(rng.integers(2**31)), args.warmup, args.samples, args.prior_sd)
            belief = post.belief
            history.append(np.clip(belief.mean, -1, 1))
            etas.append(belief.eta_mean)
            diagnostics.append((post.rhat, post.ess))
        out[start, seed] = {"history": np.array(history), "eta": np.array(etas),
                            "diagnostics": np.array(diagnostics)}
    return out


def main(args: Args) -> list[dict]:
    other = "confirmation" if args.windows == "development" else "development"
    replayed, scoring = (WindowSet.load(os.path.join(WINDOWS, f"{n}.npz"))
                         for n in (args.windows, other))
    rows = []
    for judge in args.judges:
        result = replay(replayed, judge, args, np.random.default_rng(0))
        for start in ("theta0", "pays_for_dying"):
            own = scoring.select(scoring.start == start)

            def accuracy(theta, own=own):
                return view_ceiling.score_accuracy(
                    own, own.batch.Phi.astype(np.float64) @ theta)["accuracy"]
            runs = [v for k, v in result.items() if k[0] == start]
            diag = np.concatenate([r["diagnostics"] for r in runs])
            rows.append({
                "windows": args.windows, "judge": judge, "start": start,
                "accuracy_start": accuracy(np.asarray(STARTS[start].theta, np.float64)),
                "accuracy_end": [accuracy(r["history"][-1]) for r in runs],
                "drift": [float(np.linalg.norm(r["history"][-1] - r["history"][0]))
                          for r in runs],
                "eta_end": [float(r["eta"][-1]) for r in runs],
                "rhat_median": float(np.median(diag[:, 0])),
                "ess_median": float(np.median(diag[:, 1])),
                "eta_prior": list(args.eta_prior), "prior_sd": args.prior_sd})
            if args.json:
                print(json.dumps(rows[-1]))
    return rows


if __name__ == "__main__":
    main(parse_args(Args, sys.argv[1:]))
