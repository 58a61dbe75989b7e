"""The ceiling of a linear R_theta's agreement with the expert judge, and what updates reach.

    python benchmarks/results/agreement_ceiling/agreement_ceiling.py --json
    python benchmarks/results/agreement_ceiling/agreement_ceiling.py --window 100 --json  # windows

Builds a pool of `--groups-per-policy` groups of `--m` whole games for each policy of
`--policies` (`policy_groups.policy_collect`; 4 x 64 x 8 = 2,048 games by default), ranks every
group with the expert judge and splits the groups per policy into train and held-out ones.

1. Ceiling: Bradley-Terry logistic regression (`sailor_lab.offline_fit.fit_bradley_terry`) on
   every judged pair of the train groups; held-out pair accuracy and mean per-group Kendall
   tau of `R_theta`, against theta0's. `game_over` stays at theta0's value when it never
   varies within a group (finished whole games): no ranking can move it.
2. Replay of the in-loop update: per replay seed, theta starts at theta0 and takes
   `--iterations` updates, each on one fresh train group (as a SAILOR iteration ranks M fresh
   games): discordant + concordant pairs (`build_preferences`), then `update_theta` with each
   method of `--variants`. The held-out agreement of the final theta is reported per variant:
   mean and worst seed.

Prints tables and, with `--json`, one JSON line (plus `device`, `cpu`, `jax`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time

import jax
import numpy as np

from sailor_jax.agents.rollout import cut_windows
from sailor_jax.alignment.preferences import build_preferences
from sailor_jax.alignment.updates import update_theta
from sailor_jax.cli import parse_args
from sailor_jax.config import PAPER, PreferenceConfig
from sailor_jax.errors import report_user_errors
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges import ExpertRanker
from sailor_jax.logging import to_jsonable
from sailor_lab import policy_groups, report
from sailor_lab.identifiability import feature_spread
from sailor_lab.offline_fit import (
    agreement,
    fit_bradley_terry,
    group_pairs,
    mean_group_tau,
)


@dataclasses.dataclass(frozen=True)
class Args:
    """Agreement ceiling of a linear reward with the expert judge."""

    policies: tuple[str, ...] = ("eps0.3", "eps0.6", "ppo_init", "ppo_300k")
    """Policies of the pool (`policy_groups.policy_collect`)."""
    groups_per_policy: int = 64
    """Groups of `--m` games per policy."""
    m: int = 8
    """Games per group (SAILOR's trajectories M)."""
    max_len: int = 2000
    """Moves per game at most."""
    window: int = 0
    """Rank one window of this many moves per game instead of whole games (0 = whole)."""
    pool_depth: int = 2
    """Expectimax depth of the eps-expert players."""
    expert_depth: int = 2
    """Depth of the expert judge."""
    train_fraction: float = 0.75
    """Fraction of each policy's groups fitted on; the rest are held out."""
    l2: float = 1e-3
    """Ridge penalty of the offline fit."""
    variants: tuple[str, ...] = ("bt_mcmc", "bo")
    """Replayed updates: `AlignmentConfig.method` names."""
    iterations: int = 8
    """Replayed updates per seed."""
    replay_seeds: int = 5
    """Replay seeds (each its own sequence of train groups)."""
    seed: int = 0
    """Seed of the pool, the split and the replays."""
    json: bool = False
    """Also print one JSON line."""


def build(args: Args):
    """Play and judge the pool; `(phis per group, rankings, policy per group, seconds)`."""
    t0 = time.perf_counter()
    played = policy_groups.play_policy_groups(args.policies, args.m, args.groups_per_policy,
                                           args.max_len, args.pool_depth, args.seed)
    groups = played.group_batches()
    if args.window:
        groups = [jax.device_get(cut_windows(g, jax.random.key(args.seed + k), args.window))
                  for k, g in enumerate(groups)]
    play_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rankings = ExpertRanker(depth=args.expert_depth).rank_groups(groups)
    return groups, rankings, played.policy, {"play_s": play_s,
                                             "rank_s": time.perf_counter() - t0}


def split(policy: list[str], fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Train and held-out group indices, `fraction` of each policy's groups in train."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for p in dict.fromkeys(policy):
        idx = rng.permutation([g for g, q in enumerate(policy) if q == p])
        cut = int(round(fraction * len(idx)))
        train += sorted(idx[:cut].tolist())
        test += sorted(idx[cut:].tolist())
    return train, test


def pooled(phis: list[np.ndarray], rankings: list, idx: list[int]):
    """Pooled `Phi` and every judged pair of the groups `idx`."""
    phi = np.concatenate([phis[g] for g in idx])
    offsets = np.cumsum([0] + [len(phis[g]) for g in idx[:-1]]).tolist()
    return phi, group_pairs([rankings[g] for g in idx], offsets)


def held_out(theta, phis, rankings, test) -> dict:
    """Held-out pair accuracy and mean per-group Kendall tau of `theta`."""
    phi, prefs = pooled(phis, rankings, test)
    return {"pair_accuracy": agreement(theta, phi, prefs),
            "kendall_tau": mean_group_tau(theta, [phis[g] for g in test],
                                          [rankings[g] for g in test])}


def replay(variant: str, phis, rankings, train, test, spec: RewardSpec, args: Args) -> dict:
    """The in-loop update replayed on fresh train groups (module docstring, item 2)."""
    cfg = dataclasses.replace(PAPER.alignment, method=variant)  # the paper's update
    finals, t0 = [], time.perf_counter()
    for s in range(args.replay_seeds):
        rng = np.random.default_rng([args.seed, s])
        order = rng.choice(train, size=args.iterations, replace=False)
        theta = np.asarray(spec.start, np.float32)
        for t, g in enumerate(order):
            step_rng = np.random.default_rng([args.seed, s, t])
            phi = np.asarray(phis[g], np.float64)
            prefs = build_preferences(phi @ theta, rankings[g], step_rng, PreferenceConfig())
            if len(prefs):
                theta = update_theta(theta, phi, prefs, spec, cfg, step_rng).theta
        finals.append({"theta": theta.tolist(), **held_out(theta, phis, rankings, test)})
    taus = [f["kendall_tau"] for f in finals]
    accs = [f["pair_accuracy"] for f in finals]
    return {"variant": variant, "kendall_tau_mean": float(np.mean(taus)),
            "kendall_tau_worst": float(np.min(taus)), "pair_accuracy_mean": float(np.mean(accs)),
            "pair_accuracy_worst": float(np.min(accs)), "seeds": finals,
            "seconds": time.perf_counter() - t0}


def run(args: Args) -> dict:
    """Everything in the module docstring; the record."""
    groups, rankings, policy, seconds = build(args)
    phis = [np.asarray(g.Phi, np.float64) for g in groups]
    train, test = split(policy, args.train_fraction, args.seed)
    spread = feature_spread(phis, FEATURE_NAMES)
    spec = RewardSpec()
    # a weight whose sum is constant in every group cannot be fitted: keep theta0's value
    free = np.asarray([r["constant_fraction"] < 1.0 for r in spread])
    phi, prefs = pooled(phis, rankings, train)
    t0 = time.perf_counter()
    fit = fit_bradley_terry(phi, prefs, theta=spec.start, free=free, l2=args.l2)
    seconds["fit_s"] = time.perf_counter() - t0
    theta0 = np.asarray(spec.start)
    ceiling = {"theta0": {**held_out(theta0, phis, rankings, test),
                          "train_pair_accuracy": agreement(theta0, phi, prefs)},
               "fit": {**held_out(fit.theta, phis, rankings, test),
                       "train_pair_accuracy": agreement(fit.theta, phi, prefs),
                       "theta": fit.theta.tolist(), "converged": fit.converged}}
    per_policy = {}
    for p in dict.fromkeys(policy):
        sub = [g for g in test if policy[g] == p]
        per_policy[p] = {"theta0": held_out(theta0, phis, rankings, sub),
                         "fit": held_out(fit.theta, phis, rankings, sub)}
    replays = [replay(v, phis, rankings, train, test, spec, args) for v in args.variants]
    lengths = np.concatenate([g.lengths for g in groups])
    return {"games": int(sum(len(p) for p in phis)), "train_groups": len(train),
            "test_groups": len(test), "train_pairs": len(prefs), "window": args.window,
            "length_mean": float(lengths.mean()), "fixed": [n for n, f in
                                                           zip(FEATURE_NAMES, free, strict=True)
                                                           if not f],
            "ceiling": ceiling, "per_policy": per_policy, "replay": replays, **seconds,
            "args": {**dataclasses.asdict(args)}, **report.machine()}


def print_tables(r: dict) -> None:
    """Markdown tables of the record."""
    print(f"{r['games']} games ({'whole' if not r['window'] else str(r['window']) + '-move'}"
          f", mean {r['length_mean']:.0f} moves), {r['train_groups']} train / "
          f"{r['test_groups']} held-out groups, {r['train_pairs']} train pairs; fixed at "
          f"theta0: {r['fixed']}")
    print("\n| theta | held-out pair accuracy | held-out Kendall tau | train pair accuracy |"
          "\n|---|---:|---:|---:|")
    for name, v in r["ceiling"].items():
        print(f"| {name} | {v['pair_accuracy']:.3f} | {v['kendall_tau']:.3f} | "
              f"{v['train_pair_accuracy']:.3f} |")
    print("\n| policy | theta0 tau | fit tau | theta0 acc | fit acc |\n|---|---:|---:|---:|---:|")
    for p, v in r["per_policy"].items():
        print(f"| {p} | {v['theta0']['kendall_tau']:.3f} | {v['fit']['kendall_tau']:.3f} | "
              f"{v['theta0']['pair_accuracy']:.3f} | {v['fit']['pair_accuracy']:.3f} |")
    print("\n| replayed update | held-out tau mean | worst seed | pair acc. mean | worst seed "
          "| s |\n|---|---:|---:|---:|---:|---:|")
    for v in r["replay"]:
        print(f"| {v['variant']} | {v['kendall_tau_mean']:.3f} | {v['kendall_tau_worst']:.3f}"
              f" | {v['pair_accuracy_mean']:.3f} | {v['pair_accuracy_worst']:.3f} | "
              f"{v['seconds']:.0f} |")
    print("\nfitted theta: " + ", ".join(
        f"{n} {w:+.3f}" for n, w in zip(FEATURE_NAMES, r["ceiling"]["fit"]["theta"],
                                        strict=True)))


def main(args: Args) -> dict:
    """Run, print the tables (to stderr with --json) and the JSON line (stdout). Host-only."""
    record = run(args)
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        print_tables(record)
    if args.json:
        print(json.dumps(to_jsonable(record)), flush=True)  # NaN -> null
    return record


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
