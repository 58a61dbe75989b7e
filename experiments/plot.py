"""Figures of a comparison (or of one SAILOR run): PNG and PDF in RESULTS_DIR/figures/.

    python experiments/plot.py runs/compare
    python experiments/plot.py runs/sailor_cpu          # a single experiments/sailor.py run

Figures (one line, bar or panel per variant; bands and error bars are 95% Student-t
confidence intervals over seeds, see `sailor_lab.report.mean_ci`):
  learning_curves        game score vs env steps per seed: the mean score of the training
                         episodes that ended in each SAILOR segment (stochastic policy), and the
                         greedy-policy evaluation when the run evaluated during training
  final_performance      final greedy-policy score and max-tile rates 512..4096
  theta_trajectories     each reward weight over SAILOR iterations
  max_tile_distribution  fraction of final evaluation games ending with each largest tile
  agreement              Kendall tau between R_theta and the judge per iteration (before and
                         after the update)
  max_tile_position      where the largest tile sits on the final boards (4 x 4 heatmaps)
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only; no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import tyro  # noqa: E402

from sailor_jax.cli import parse_args  # noqa: E402
from sailor_jax.errors import report_user_errors  # noqa: E402
from sailor_jax.run import run_dir  # noqa: E402
from sailor_jax.run.results import SailorResults  # noqa: E402
from sailor_lab import report  # noqa: E402
from sailor_lab.variants import load_runs  # noqa: E402

FIGURES = ("learning_curves", "final_performance", "theta_trajectories",
           "max_tile_distribution", "agreement", "max_tile_position")


def _band(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and CI per column of `[S, T]` samples (NaN-free columns; NaN bands with S = 1)."""
    stats = []
    for col in samples.T:
        col = col[np.isfinite(col)]
        stats.append(report.mean_ci(col) if col.size else (math.nan,) * 3)
    mean, lo, hi = (np.asarray(x) for x in zip(*stats, strict=True))
    return mean, lo, hi


def _seed_scores(run: SailorResults) -> tuple[np.ndarray, np.ndarray]:
    """Env steps `[T]` and per-seed segment game scores `[S, T]` (NaN where none ended)."""
    its = run.iterations
    steps = np.asarray([r.env_steps for r in its], np.float64)
    scores = np.asarray([[np.nan if v is None else v for v in r.train_score or []]
                         for r in its], np.float64)
    return steps, scores.T if scores.size else np.empty((0, len(its)))


def _eval_curve(run: SailorResults) -> tuple[np.ndarray, np.ndarray] | None:
    """Env steps and per-seed greedy scores `[S, K]` of the evaluations (incl. the final)."""
    points = [(r.env_steps, [e["score_mean"] for e in r.evaluation["per_seed"]])
              for r in run.iterations if r.evaluation]
    if not points:
        return None
    points.append((run.env_steps_per_seed,
                   [e["score_mean"] for e in run.evaluation["per_seed"]]))
    return (np.asarray([p[0] for p in points], np.float64),
            np.asarray([p[1] for p in points], np.float64).T)


def _colors(runs: dict) -> dict[str, str]:
    """One colour per variant, the same in every figure."""
    return {name: f"C{i % 10}" for i, name in enumerate(runs)}


def _line(ax, x, samples, label, band=True, **kw):
    mean, lo, hi = _band(samples)
    (line,) = ax.plot(x, mean, marker="o", ms=3, label=label, **kw)
    if band and np.isfinite(lo).any():
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)


def plot_learning_curves(runs: dict[str, SailorResults]):
    evals = {n: _eval_curve(r) for n, r in runs.items()}
    with_eval = any(v is not None for v in evals.values())
    colors = _colors(runs)
    fig, axes = plt.subplots(1, 2 if with_eval else 1, figsize=(12 if with_eval else 7, 4.5),
                             squeeze=False)
    for name, run in runs.items():
        steps, scores = _seed_scores(run)
        if scores.size:
            _line(axes[0, 0], steps, scores, name, color=colors[name])
        if with_eval and evals[name] is not None:
            _line(axes[0, 1], *evals[name], name, color=colors[name])
    axes[0, 0].set(title="training episodes (stochastic policy)", xlabel="env steps per seed",
                   ylabel="game score")
    if with_eval:
        axes[0, 1].set(title="evaluation (greedy policy)", xlabel="env steps per seed",
                       ylabel="game score")
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Learning curves: mean and 95% CI over seeds")
    return fig


def plot_final_performance(runs: dict[str, SailorResults]):
    rows = [report.summary_row(n, r.evaluation) for n, r in runs.items()]
    names = [r["variant"] for r in rows]
    fig, (ax_score, ax_tiles) = plt.subplots(1, 2, figsize=(13, 4.5))
    x = np.arange(len(rows))

    def err(metric):
        mean = np.asarray([r[f"{metric}_mean"] for r in rows])
        lo = np.asarray([r[f"{metric}_ci_low"] for r in rows])
        hi = np.asarray([r[f"{metric}_ci_high"] for r in rows])
        yerr = np.nan_to_num(np.stack([mean - lo, hi - mean]), nan=0.0)
        return mean, yerr

    mean, yerr = err("score")
    ax_score.bar(x, mean, yerr=yerr, capsize=4, color=[f"C{i}" for i in x])
    ax_score.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax_score.set(ylabel="game score (greedy policy)", title="final score")
    width = 0.8 / len(rows)
    for i, name in enumerate(names):
        means, yerrs = zip(*(err(f"tile_{t}") for t in report.TILES), strict=True)
        ax_tiles.bar(np.arange(len(report.TILES)) + (i - (len(rows) - 1) / 2) * width,
                     [m[i] for m in means], width, yerr=np.stack([e[:, i] for e in yerrs], 1),
                     capsize=2, label=name, color=f"C{i}")
    ax_tiles.set_xticks(np.arange(len(report.TILES)), [f"≥ {t}" for t in report.TILES])
    ax_tiles.set(ylabel="fraction of games", ylim=(0, 1.05), title="max-tile rates (2048 = win)")
    ax_tiles.legend(fontsize=8)
    for ax in (ax_score, ax_tiles):
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle("Final performance: mean and 95% CI over seeds")
    fig.tight_layout()
    return fig


def plot_theta_trajectories(runs: dict[str, SailorResults]):
    names = next(iter(runs.values())).feature_names
    fig, axes = plt.subplots(2, math.ceil(len(names) / 2), figsize=(16, 7), sharex=True)
    for i, (variant, run) in enumerate(runs.items()):
        history = np.asarray(run.theta_history, np.float64)  # [T+1, S, F]
        its = np.arange(history.shape[0]) - len(run.warmup)  # the warm-up's below 0
        style = {} if run.self_align else {"ls": "--", "lw": 1}
        for k, ax in enumerate(axes.ravel()[:len(names)]):
            _line(ax, its, history[:, :, k].T, variant, color=f"C{i}", **style)
            ax.plot(its, history[:, :, k], color=f"C{i}", lw=0.6, alpha=0.35)  # each seed
    for k, ax in enumerate(axes.ravel()):
        if k < len(names):
            ax.set(title=names[k], xlabel="SAILOR iteration (below 0: warm-up)")
            ax.grid(alpha=0.3)
        else:
            ax.axis("off")
    axes.ravel()[0].legend(fontsize=7)
    fig.suptitle("Reward weights theta over iterations (mean, 95% CI over seeds, thin lines: "
                 "single seeds; dashed: fixed reward)")
    fig.tight_layout()
    return fig


def plot_max_tile_distribution(runs: dict[str, SailorResults]):
    counts = {n: {int(k): v for k, v in r.evaluation["max_tile_counts"].items()}
              for n, r in runs.items() if "max_tile_counts" in r.evaluation}
    tiles = sorted({t for c in counts.values() for t in c})
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(tiles)), 4.5))
    if not counts:
        ax.text(0.5, 0.5, "no max-tile counts in these results (older format)", ha="center",
                transform=ax.transAxes)
    width = 0.8 / max(1, len(counts))
    for i, (name, c) in enumerate(counts.items()):
        total = sum(c.values())
        ax.bar(np.arange(len(tiles)) + (i - (len(counts) - 1) / 2) * width,
               [c.get(t, 0) / total for t in tiles], width, label=name, color=f"C{i}")
    ax.set_xticks(np.arange(len(tiles)), [str(t) for t in tiles])
    ax.set(xlabel="largest tile at the end of the game", ylabel="fraction of games",
           title="Max-tile distribution (final greedy evaluation, all seeds pooled)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return fig


def plot_agreement(runs: dict[str, SailorResults]):
    sailor = {n: r for n, r in runs.items() if r.self_align and r.iterations}
    colors = _colors(runs)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, run in sailor.items():
        for key, style in (("kendall_tau_before", "-"), ("kendall_tau_after", ":")):
            values = np.asarray([[np.nan if v is None else v for v in a[key]]
                                 for a in run.agreement], np.float64)  # [T, S]
            label = f"{name} ({key.removeprefix('kendall_tau_')} update)"
            _line(ax, np.arange(values.shape[0]), values.T, label, band=style == "-",
                  color=colors[name], ls=style)
    if not sailor:
        ax.text(0.5, 0.5, "no self-aligning variant in this run", ha="center",
                transform=ax.transAxes)
    ax.set(xlabel="SAILOR iteration", ylabel="Kendall tau (R_theta vs judge)", ylim=(-1.05, 1.05),
           title="Agreement of R_theta with the judge on fresh trajectories\n"
                 "(band: 95% CI of the before-update tau)")
    ax.axhline(0, color="grey", lw=0.5)
    ax.grid(alpha=0.3)
    if sailor:
        ax.legend(fontsize=7)
    return fig


def plot_max_tile_position(runs: dict[str, SailorResults]):
    with_pos = {n: r for n, r in runs.items() if "max_tile_position" in r.evaluation}
    n = max(1, len(with_pos))
    cols = min(n, 4)
    fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(3.2 * cols,
                                                                  3.2 * math.ceil(n / cols)),
                             squeeze=False)
    for ax, (name, run) in zip(axes.ravel(), with_pos.items(), strict=False):
        grid = np.asarray(run.evaluation["max_tile_position"], np.float64)
        ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
        for (r, c), v in np.ndenumerate(grid):
            ax.text(c, r, f"{v:.2f}", ha="center", va="center",
                    color="white" if v < 0.5 else "black", fontsize=8)
        ax.set(title=name, xticks=[], yticks=[])
    for ax in axes.ravel()[len(with_pos):]:
        ax.axis("off")
    fig.suptitle("Where the largest tile sits on the final boards (fraction of games)")
    fig.tight_layout()
    return fig


def make_figures(results_dir: str, out_dir: str | None = None) -> list[str]:
    """Write every figure of `FIGURES` as PNG and PDF; return the written paths.

    Raises:
      MissingFileError: `results_dir` holds no finished run (the line says which command
        finishes a started one: `variants.load_runs`).
      UserError: the figure folder cannot be created or written (`run_dir.check_writable`).
    """
    runs = load_runs(results_dir)
    out_dir = out_dir or os.path.join(results_dir, "figures")
    run_dir.check_writable(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name in FIGURES:
        fig = globals()[f"plot_{name}"](runs)
        for ext in ("png", "pdf"):
            path = os.path.join(out_dir, f"{name}.{ext}")
            fig.savefig(path, dpi=120, bbox_inches="tight")
            paths.append(path)
        plt.close(fig)
    return paths


@dataclasses.dataclass(frozen=True)
class Args:
    """Figures of a comparison (or of one SAILOR run)."""

    results_dir: tyro.conf.Positional[str]
    """Ablation folder (or one SAILOR run folder)."""
    out: str | None = None
    """Figure folder (default RESULTS_DIR/figures)."""


def parse(argv: list[str]) -> Args:
    """The flags (tyro); a mistake is one `error:` line, exit 2 (`cli.parse_args`)."""
    return parse_args(Args, argv)


def main(argv: list[str] | None = None) -> list[str]:
    args = parse(sys.argv[1:] if argv is None else argv)
    paths = make_figures(args.results_dir, args.out)
    print("\n".join(paths))
    return paths


if __name__ == "__main__":
    report_user_errors(main)
