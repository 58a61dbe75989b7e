"""Oracle recovery: can the alignment machinery recover a known linear reward?

    python experiments/oracle_recovery.py                       # defaults, both update rules
    python experiments/oracle_recovery.py --json                # + one JSON line per rule
    python experiments/oracle_recovery.py --theta-star 1,0,0,0,0,0,0,0 --updates bo

No LLM: the judge is `LinearOracleRanker(theta_star)`, which ranks trajectories exactly by
`Phi @ theta_star`. Each iteration samples a fresh pool of real 2048 games (a freshly
initialised, near-uniform random policy; the iteration is folded into the key), ranks it with
the oracle and with the current `r_theta = Phi @ theta`, builds preference pairs
(`build_preferences`) and updates theta (`update_theta`), exactly as `loop.align_step` does.
Reported per iteration: |D_neg|, |D_pos|, the cosine between theta and theta_star on the
tunable entries (rankings are scale-invariant, so only the direction can be recovered), and
the pairwise agreement of `r_theta` with the oracle on a fixed held-out pool.

Identifiability. Every game of a random policy ends before `max_len`, so the feature sum of
`game_over` is 1 for every trajectory: its weight adds the same constant to every return and
no ranking can reveal it. It is therefore not tunable by default (and so not in the cosine).
The other features all grow with the game length (pairwise correlations 0.7-0.99), yet theta_star
is identifiable: a logistic fit on all 2016 pairs of one 64-game pool already has cosine 0.99.

Defaults that differ from the paper's update's (`PAPER.alignment`; settings of the algorithm):
`--beta 100` (the oracle is noiseless, i.e. perfectly rational; with beta 0.9 the Bradley-Terry
posterior is so soft that its mean drifts towards the [-1, 1] box corners, cosine ~0.89) and
`--trust-region 0.2` (without it each BO update jumps to some optimum of that iteration's small
preference set, cosine 0.1-0.8 from one iteration to the next). `--accumulate` keeps every past
pair (with its Phi), so each update sees the union of all pools so far: steadier, and held-out
agreement ~0.997 instead of ~0.96-0.98.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from sailor_jax.cli import make_console, parse_args
from sailor_jax.config import PAPER, AlignmentConfig, NetworkConfig, PreferenceConfig
from sailor_jax.errors import report_user_errors
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import RewardSpec
from sailor_lab.recovery import recover_theta, sample_phi

DEFAULT_THETA_STAR = "0.5,0.3,0.4,0.2,0.1,0,0.3,-0.5"
"""score_gain 0.5, empty_cells 0.3, max_tile_in_corner 0.4, monotonicity 0.2, merges_available
0.1, smoothness 0, max_tile_increase 0.3, game_over -0.5: every kind of feature, one zero."""

UPDATES = ("bo", "bt_mcmc")
TARGET = 0.95
"""The acceptance bar: both the cosine and the held-out agreement should reach this."""


def parse_vector(text: str, what: str) -> np.ndarray:
    """Parse comma-separated floats, one per feature of `FEATURE_NAMES`. Host-only.

    Raises:
      ValueError: not `len(FEATURE_NAMES)` finite numbers.
    """
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError as err:
        raise ValueError(f"{what} must be comma-separated numbers, got {text!r}") from err
    if len(values) != len(FEATURE_NAMES) or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} needs {len(FEATURE_NAMES)} finite comma-separated values "
                         f"(order: {','.join(FEATURE_NAMES)}), got {text!r}")
    return np.asarray(values, dtype=np.float64)


def _split_names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Recover a hidden linear reward theta_star from its rankings alone."""

    theta_star: str = DEFAULT_THETA_STAR
    """Oracle weights: 8 comma-separated finite values, FEATURE_NAMES order (direction matters)."""
    start: str | None = None
    """Start theta, comma-separated (default: RewardSpec's baseline 1,0,0.1,0,0,0,0,-1)."""
    tunable: str = ",".join(FEATURE_NAMES[:-1])
    """Comma-separated tunable features (default: all but game_over); the cosine uses these."""
    updates: str = ",".join(UPDATES)
    """Update rules to run, comma-separated: bo, bt_mcmc."""
    iterations: int = 10
    """Alignment iterations (a fresh trajectory pool each)."""
    trajectories: int = 64
    """Trajectories M per pool (M (M - 1) / 2 judged pairs)."""
    heldout: int = 256
    """Held-out trajectories for the agreement metric (sampled in pools of --trajectories)."""
    max_len: int = 2000
    """Move cap of a sampled game (random play ends after ~50-250 moves)."""
    hidden: int = 64
    """Hidden width of the random-init policy network (two layers)."""
    seed: int = 0
    """Root seed (pools, policies, preference sampling, optimisers)."""
    objective: str = "error"
    """BO objective: error (weighted pair error) or bt_nll (Bradley-Terry NLL)."""
    bo_calls: int = 40
    """Objective evaluations per BO update."""
    trust_region: float | None = 0.2
    """Max change of each tunable weight per update (None = bounds only: BO is erratic then)."""
    mcmc_trust_region: float = 0.2
    """bt_mcmc: half-width of the prior box around the current theta."""
    beta: float = 100.0
    """Bradley-Terry rationality (bt_mcmc; BO with bt_nll): large for a noiseless oracle."""
    concordant_ratio: float = 1.0
    """|D_pos| = ratio * |D_neg| concordant pairs are sampled as anchors."""
    accumulate: bool = False
    """Keep all past pairs (with their Phi): each update sees the union of all pools so far."""
    json: bool = False
    """Print one JSON line per update rule on stdout (the tables go to stderr)."""

    def __post_init__(self) -> None:
        parse_vector(self.theta_star, "--theta-star")
        self.spec()
        bad = sorted(set(self.update_rules) - set(UPDATES))
        if bad or not self.update_rules:
            raise ValueError(f"--updates must name some of {UPDATES}, got {self.updates!r}")
        for name in ("iterations", "heldout", "max_len", "hidden", "bo_calls"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, "
                                 f"got {getattr(self, name)}")
        if self.trajectories < 2:
            raise ValueError(f"--trajectories must be >= 2, got {self.trajectories}")
        self.alignment("bo")  # validates objective, trust regions

    @property
    def update_rules(self) -> tuple[str, ...]:
        return _split_names(self.updates)

    def spec(self) -> RewardSpec:
        """The reward spec: the --start (theta0 by default), --tunable mask. Raises ValueError."""
        spec = RewardSpec().with_tunable(_split_names(self.tunable))
        if self.start is not None:
            start = tuple(parse_vector(self.start, "--start").tolist())
            spec = dataclasses.replace(spec, start=start)
        if not spec.tunable_index.size:
            raise ValueError("--tunable names no feature")
        return spec

    def alignment(self, method: str) -> AlignmentConfig:
        """The paper's update (`PAPER.alignment`) by `method`, with this run's settings."""
        return dataclasses.replace(
            PAPER.alignment, method=method, objective=self.objective, bo_calls=self.bo_calls,
            bo_initial_points=min(10, self.bo_calls), trust_region=self.trust_region,
            mcmc_trust_region=self.mcmc_trust_region, beta=self.beta)


def recover(method: str, pools: list[np.ndarray], heldout: np.ndarray, args: Args,
            rule_index: int = 0) -> dict:
    """Run `len(pools)` alignment iterations of one update rule against the linear oracle.

    Host-only.

    Args:
      method: "bo" or "bt_mcmc".
      pools: per-iteration `float[M, F]` trajectory feature sums.
      heldout: `float[H, F]` feature sums of the held-out trajectories.
      args: settings (theta_star, spec, budgets, seed).
      rule_index: folded into the host seeds.

    Returns:
      Dict with the final `cosine`, `heldout_agreement`, `theta` and per-iteration `rows`
      (row 0 is the start before any update).
    """
    pref_cfg = PreferenceConfig(concordant_ratio=args.concordant_ratio)
    theta, rows = recover_theta(parse_vector(args.theta_star, "--theta-star"), pools, heldout,
                                args.spec(), args.alignment(method), pref_cfg, seed=args.seed,
                                rule_index=rule_index, accumulate=args.accumulate)
    return {"update": method, "cosine": rows[-1]["cosine"],
            "heldout_agreement": rows[-1]["heldout_agreement"], "iterations": len(pools),
            "theta": [round(float(v), 6) for v in theta], "rows": rows}


def run_recovery(args: Args, pools: tuple[list[np.ndarray], np.ndarray] | None = None
                 ) -> list[dict]:
    """Sample the pools (unless given) and run every update rule on the same pools. Host-only.

    Args:
      args: settings.
      pools: optional `(per-iteration Phi list, held-out Phi)`; `args.iterations` is then
        ignored in favour of the number of pools (tests pass synthetic Phi here).

    Returns:
      One result dict per update rule (see `recover`), each with a `sampling` entry.
    """
    info: dict = {"synthetic": True}
    if pools is None:
        net = NetworkConfig(hidden_sizes=(args.hidden, args.hidden))
        *pools, info = sample_phi(net, args.trajectories, args.max_len, seed=args.seed,
                                  iterations=args.iterations, heldout=args.heldout)
    results = []
    for k, method in enumerate(args.update_rules):
        t0 = time.perf_counter()
        result = recover(method, pools[0], pools[1], args, rule_index=k)
        results.append({**result, "seconds": time.perf_counter() - t0, "sampling": info})
    return results


def first_hit(rows: list[dict], target: float = TARGET) -> int | None:
    """First iteration whose cosine and held-out agreement both reach `target` (None if none)."""
    return next((r["iteration"] for r in rows
                 if r["cosine"] >= target and r["heldout_agreement"] >= target), None)


def print_table(result: dict, args: Args, console: Console) -> None:
    """Print one update rule's per-iteration table (row 0: the start)."""
    data = "accumulated pairs" if args.accumulate else "fresh pool each iteration"
    what = f"objective {args.objective}" if result["update"] == "bo" else f"beta {args.beta:g}"
    table = Table(title=f"{result['update']} ({what}, {data}, M={args.trajectories})")
    for col in ("iter", "|D_neg|", "|D_pos|", "pairs", "error after", "cosine", "held-out",
                "s"):
        table.add_column(col, justify="right")
    for r in result["rows"]:
        err = r.get("error_after", float("nan"))
        table.add_row(str(r["iteration"]), str(r.get("num_discordant", "-")),
                      str(r.get("num_concordant", "-")), str(r.get("pairs_used", "-")),
                      f"{err:.3f}" if np.isfinite(err) else "-", f"{r['cosine']:.4f}",
                      f"{r['heldout_agreement']:.4f}", f"{r.get('seconds', 0.0):.1f}")
    console.print(table)
    theta = ", ".join(f"{n} {v:+.3f}" for n, v in zip(FEATURE_NAMES, result["theta"], strict=True))
    console.print(f"final theta: {theta}")


def summary(result: dict, args: Args) -> dict:
    """The JSON line of one update rule."""
    rows = result["rows"]
    return {"update": result["update"], "cosine": result["cosine"],
            "heldout_agreement": result["heldout_agreement"],
            "iterations": result["iterations"], "target_met_at": first_hit(rows),
            "accumulate": args.accumulate, "trajectories": args.trajectories,
            "objective": args.objective if result["update"] == "bo" else "bt_posterior",
            "beta": args.beta, "trust_region": args.trust_region,
            "seconds": round(result["seconds"], 2), "theta": result["theta"],
            "cosine_history": [round(r["cosine"], 4) for r in rows],
            "heldout_agreement_history": [round(r["heldout_agreement"], 4) for r in rows]}


def parse(argv: list[str]) -> Args:
    """The flags (tyro); a mistake is one `error:` line, exit 2 (`cli.parse_args`)."""
    return parse_args(Args, argv)


def main(args: Args) -> list[dict]:
    """Run the experiment, print the tables (and JSON lines with --json). Host-only."""
    console = make_console(stderr=args.json)  # --json: stdout holds the JSON lines only
    t0 = time.perf_counter()
    results = run_recovery(args)
    info = results[0]["sampling"]
    console.print(f"theta_star = {args.theta_star}; tunable = {args.tunable}; "
                  f"pools: {args.iterations} x {args.trajectories} + {args.heldout} held-out "
                  f"games, length {info['length_min']}-{info['length_max']} "
                  f"(mean {info['length_mean']:.0f}), {info['truncated']} truncated; "
                  f"compile {info['compile_s']:.1f} s, sampling {info['sample_s']:.1f} s")
    for result in results:
        print_table(result, args, console)
    for r in results:
        hit = first_hit(r["rows"])
        console.print(f"{r['update']}: cosine {r['cosine']:.4f}, held-out agreement "
                      f"{r['heldout_agreement']:.4f} after {r['iterations']} iterations; "
                      f"both >= {TARGET} " + (f"first at iteration {hit}" if hit else "never"))
    console.print(f"wall time {time.perf_counter() - t0:.1f} s")
    if args.json:
        for r in results:
            print(json.dumps(summary(r, args)), flush=True)
    return results


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse(argv)))
