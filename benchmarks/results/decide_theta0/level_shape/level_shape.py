"""Where a reward's headroom lies: its per-move level or its board shape; and what SAILOR moves.

    python benchmarks/results/decide_theta0/level_shape/level_shape.py \\
        --run runs/decide_theta0/expert --json

A reward `theta . phi` has a per-move part (every weight but `game_over`'s) and a terminal one.
Its **per-move level** is the mean per-move reward, `theta' . m` with `m` the features'
per-move means (`theta'`: `game_over` left out; `alignment.heldout.survival_level`): what an
agent earns just by playing on. Its **shape** is the per-move weights themselves, which boards
it prefers. A constant `c` added to every move's reward is, for the discounted return, the
terminal reward `-gamma c / (1 - gamma)` (plus a constant no policy can change), so a level can
be moved without touching the shape by changing the `game_over` weight alone, and PPO's reward
normalisation (`PPOConfig.normalize_rewards`: rewards divided by the running SD of the return)
makes the overall scale of theta irrelevant, so the result is scaled into the weights' bounds.

From the greedy games of the agents trained on theta0 kept fixed in `--run` (a comparison
folder, or a pooled one whose blocks are read), the script measures `m` and writes:

1. the levels of theta0 and `ones` on those moves, and the two starts that cross them, as
   start specs for `experiments/compare.py`: `theta0_at_ones_level` (theta0's per-move
   weights, `ones`' level) and `ones_at_theta0_level` (`ones`' per-move weights, theta0's
   level). Since the scale of theta does not matter, the level that is crossed is the
   scale-free one: the effective level (below) over the SD of the per-move reward;
2. what SAILOR's update did to the level: for every seed of `--arm` in `--run`, the
   effective level of its final theta, `theta' . m - (1 - gamma) / gamma * w_game_over` (the
   per-move level with the terminal weight turned into its per-move equivalent), over the SD
   of its per-move reward (the scale-free level), against theta0's and `ones`'.

Prints a table and, with `--json`, one JSON line (plus the machine).
"""

from __future__ import annotations

import dataclasses
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.game.features import FEATURE_NAMES, TERMINAL_FEATURES, phi
from sailor_jax.logging import json_line
from sailor_jax.run.results import SailorResults
from sailor_jax.run.trained import load_agent, play_greedy
from sailor_lab import report
from sailor_lab.starts import STARTS

TERMINAL = np.array([n in TERMINAL_FEATURES for n in FEATURE_NAMES])
GAME_OVER = FEATURE_NAMES.index("game_over")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """The per-move level and the shape of theta0, `ones` and SAILOR's final thetas."""

    run: str = "runs/decide_theta0/expert"
    """A comparison folder with `theta0.fixed` finished (`variants/`), or a pooled one
    (`seed<ROOT>/variants/`): its agents' games give the per-move feature statistics."""
    arm: str = "theta0.sailor"
    """The SAILOR arm whose final thetas' levels are reported (e.g. `theta0.sailor_random_judge`
    for the update without the judge's information)."""
    games: int = 8
    """Greedy games per agent (every seed of every block)."""
    max_moves: int = 50_000
    """Moves per game at most (the evaluation's cap)."""
    json: bool = False
    """Print one JSON line of the results."""


def blocks(run: str) -> list[str]:
    """The comparison folders of `run`: itself, or its `seed<ROOT>/` blocks.

    Raises:
      UserError: no `theta0.fixed` has finished there.
    """
    found = [run] if os.path.isdir(os.path.join(run, "variants")) else sorted(
        (os.path.join(run, d) for d in os.listdir(run) if d.startswith("seed")),
        key=lambda p: int(os.path.basename(p)[4:])) if os.path.isdir(run) else []
    found = [b for b in found
             if os.path.exists(os.path.join(b, "variants", "theta0.fixed", "results.json"))]
    if not found:
        raise UserError(f"--run {run}: no finished theta0.fixed in it or its seed*/ blocks",
                        "pass the --out of a comparison of theta0")
    return found


def move_features(folder: str, games: int, max_moves: int) -> np.ndarray:
    """`float64[N, F]`: phi of every move of `games` greedy games of each seed's agent in
    the finished run `folder` (`trained.play_greedy`; N moves in all)."""
    seeds = SailorResults.load(os.path.join(folder, "results.json")).config["num_seeds"]
    per_move = jax.jit(jax.vmap(jax.vmap(phi)))
    out = []
    for s in range(seeds):
        batch = play_greedy(load_agent(folder, s), games, max_moves, seed=s)
        t = np.arange(batch.score_gains.shape[1])[None]
        ended = (t == batch.lengths[:, None] - 1) & ~batch.truncated[:, None]
        f = np.asarray(per_move(jnp.asarray(batch.boards[:, :-1]),
                                jnp.asarray(batch.boards[:, 1:]),
                                jnp.asarray(batch.score_gains), jnp.asarray(ended)))
        out.append(f[t[0] < batch.lengths[:, None]].astype(np.float64))
    return np.concatenate(out)


def levels(theta, mean: np.ndarray, cov: np.ndarray, gamma: float) -> dict:
    """Per-move level, effective level (the terminal weight as its per-move equivalent), SD
    of the per-move reward and their ratio (the scale-free level) of one theta."""
    theta = np.asarray(theta, np.float64)
    per_move = np.where(TERMINAL, 0.0, theta)
    level = float(per_move @ mean)
    effective = level - (1 - gamma) / gamma * float(theta[GAME_OVER])
    sd = float(np.sqrt(per_move @ cov @ per_move))
    return {"level": level, "effective_level": effective, "reward_sd": sd,
            "scale_free_level": effective / sd if sd > 0 else float("nan")}


def crossed(shape, scale_free_level: float, mean: np.ndarray, cov: np.ndarray,
            gamma: float) -> tuple[float, ...]:
    """`shape`'s per-move weights with its scale-free level set to `scale_free_level` through
    the `game_over` weight alone (a per-move constant c is the terminal reward
    -gamma c / (1 - gamma)), the whole scaled into [-1, 1] (the reward normalisation makes the
    scale irrelevant)."""
    theta = np.asarray(shape, np.float64).copy()
    now = levels(theta, mean, cov, gamma)
    c = scale_free_level * now["reward_sd"] - now["effective_level"]
    theta[GAME_OVER] -= gamma * c / (1 - gamma)
    return tuple(float(w) for w in theta / max(1.0, float(np.abs(theta).max())))


def spec(name: str, theta) -> str:
    """A start spec for `experiments/compare.py`: `NAME:feature=w,...` (zero weights left
    out)."""
    return name + ":" + ",".join(f"{n}={w:.6g}" for n, w in zip(FEATURE_NAMES, theta,
                                                                   strict=True) if w != 0)


def measure(args: Args) -> dict:
    """Everything the module docstring lists, as one dict.

    Raises:
      UserError: `--run` holds no finished theta0.fixed.
    """
    found = blocks(args.run)
    feats = np.concatenate([move_features(os.path.join(b, "variants", "theta0.fixed"),
                                          args.games, args.max_moves) for b in found])
    mean, cov = feats.mean(0), np.cov(feats, rowvar=False)
    gamma = SailorResults.load(os.path.join(found[0], "variants", "theta0.fixed",
                                            "results.json")).config["ppo"]["gamma"]
    theta0, ones = STARTS["theta0"].theta, STARTS["ones"].theta
    named = {"theta0": levels(theta0, mean, cov, gamma), "ones": levels(ones, mean, cov, gamma)}
    starts = {"theta0_at_ones_level": crossed(theta0, named["ones"]["scale_free_level"], mean,
                                              cov, gamma),
              "ones_at_theta0_level": crossed(ones, named["theta0"]["scale_free_level"], mean,
                                              cov, gamma)}
    for name, theta in starts.items():
        named[name] = levels(theta, mean, cov, gamma)
    final = []
    for b in found:
        path = os.path.join(b, "variants", args.arm, "results.json")
        if os.path.exists(path):
            final += [levels(t, mean, cov, gamma)
                      for t in SailorResults.load(path).theta_history[-1]]
    reach = {k: report.mean_ci([f[k] for f in final]) if final else None
             for k in ("level", "effective_level", "reward_sd", "scale_free_level")}
    return {"run": args.run, "blocks": [os.path.basename(b) for b in found],
            "moves": int(len(feats)), "gamma": gamma,
            "per_move_means": dict(zip(FEATURE_NAMES, mean.tolist(), strict=True)),
            "thetas": named, "starts": {n: spec(n, t) for n, t in starts.items()},
            "sailor_final": {"arm": args.arm, "seeds": len(final), **reach},
            **report.machine()}


def _table(out: dict) -> str:
    lines = ["| reward | per-move level | effective level | per-move reward SD | "
             "scale-free level |", "|---|---:|---:|---:|---:|"]
    for name, v in out["thetas"].items():
        lines.append(f"| {name} | {v['level']:.4f} | {v['effective_level']:.4f} | "
                     f"{v['reward_sd']:.4f} | {v['scale_free_level']:.2f} |")
    s = out["sailor_final"]
    if s["seeds"]:
        lines.append(f"| {s['arm']}, final ({s['seeds']} seeds, mean [95% CI]) | "
                     + " | ".join(f"{s[k][0]:.4f} [{s[k][1]:.4f}, {s[k][2]:.4f}]"
                                  for k in ("level", "effective_level", "reward_sd")) + " | "
                     + f"{s['scale_free_level'][0]:.2f} [{s['scale_free_level'][1]:.2f}, "
                     f"{s['scale_free_level'][2]:.2f}] |")
    return "\n".join(lines + ["", "starts:", *out["starts"].values()]) + "\n"


def main(args: Args) -> dict:
    out = measure(args)
    print(f"{out['moves']:,} moves of the theta0.fixed agents' greedy games in "
          f"{', '.join(out['blocks'])}\n\n{_table(out)}", file=sys.stderr if args.json else None)
    if args.json:
        print(json_line(out))
    return out


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
