"""Judge quality: how well does a judge order trajectories of known skill?

    python benchmarks/judge_quality.py --judge expert --json
    python benchmarks/judge_quality.py --judge outcome --json
    python benchmarks/judge_quality.py --judge linear_oracle --json          # theta0 as theta_star
    python benchmarks/judge_quality.py --judge llm --json                    # embedded SmolLM2
    python benchmarks/judge_quality.py --judge llm --llm.model Qwen/Qwen2.5-1.5B-Instruct --json
    python benchmarks/judge_quality.py --judge llm --llm.endpoint http://127.0.0.1:8000/v1 --json
    python benchmarks/judge_quality.py --judge llm \
        --llm.model ~/.cache/sailor_jax/qwen2.5-coder-1.5b \
        --llm.gguf-file qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --llm.dtype bfloat16 \
        --groups 32 --json                                         # the offline 1.5B judge
    python benchmarks/judge_quality.py --setting sailor --json               # SAILOR's groups
    python benchmarks/judge_quality.py --setting strong --judge llm --json
    python benchmarks/judge_quality.py --setting windows --judge llm --json  # SAILOR's windows
    python benchmarks/judge_quality.py --setting windows --windows development --judge expert
    python benchmarks/judge_quality.py --setting windows --windows-seed 3 --judge llm  # fresh

Run it with your judge model before a long SAILOR run: a judge that cannot tell the
expert from a random player (`skill_order_accuracy` near 0.5) has nothing to teach theta.

The pool (`sailor_lab.judge_eval.build_pool`): for each epsilon in `--epsilons`,
`--games-per-player` games of the epsilon-greedy expectimax expert (depth `--pool-depth`;
epsilon 1 = uniformly random legal moves), cut at `--max-len` moves; `--groups` groups of
`--m` trajectories drawn from it (seeded). Every judge sees the same groups. The expert judge
and the pool's players share the expert (at the same depth, it is the positive control by
construction); `--pool-depth 1` draws the pool from a different, weaker expert.

`--setting strong`: the strong-play pool (`sailor_lab.strong_pool`: PPO agents close in skill
near the top, `--strong.players`), judged as whole games and as SAILOR's windows; the truth is
each player's skill (its mean score over games of its own), and the final score (the window's
points for windows) and the expert's verdict are measured beside the judge as references. One
JSON line with `views`: per view, each judge's metrics and its accuracy per pair of players.
The pool is cached under `~/.cache/sailor_jax/strong_pool` (training its agents takes minutes).

`--setting windows`: the windows SAILOR itself judges (`sailor_lab.sailor_windows`): every
training iteration's group of 16 windows from `cpu`-sized runs from theta0 and from
`pays_for_dying`, 8 of the agent then 8 of the reference player, stored once under
`benchmarks/results/judge_windows/` (`--windows development`, root seed 1, to choose a design
on; `confirmation`, root seed 2, to confirm it once; or a path). The truth of a group: the
agent's windows are the better play when its training score on that segment is above the
reference player's skill. The JSON line gives `accuracy` (the share of (agent, reference)
pairs the judge orders by skill) with its 95% interval `accuracy_ci` (bootstrap over groups),
`seconds_per_window` (the judge's wall-clock over the windows it judged, in this process, in
the calls the run made: one per iteration, every seed's group in it) and
`evidence_per_second` = (2 accuracy - 1)^2 / seconds_per_window, per start too (`by_start`);
an LLM judge adds its prompt statistics and `loop_order_agreement`, the share of the run's own
(agent, reference) pairs it orders as the run's judge did. `--windows-seed S` records a fresh
set from two new runs with root seed S first (as long as two `cpu` runs without their twins,
written to `runs/judge_windows/seed<S>/`), so that a design can be checked on windows nobody
tuned on.

Prints one JSON line (`--json`): `judge`, `skill_order_accuracy`, `skill_pairs`,
`agreement_expert`, `agreement_outcome`, `kendall_tau`, `failed_groups`, `seconds_per_group`,
the pool settings, and for LLM judges `model`, `mode`, `label_mass`, `prompts` and, rating
each window (pointwise), `seconds_per_window`, `tokens_per_window`, or comparing pairs,
`position_bias`, `seconds_per_pair`, `tokens_per_pair`; plus `device`, `cpu`, `jax`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import Annotated, Literal

import jax
import numpy as np
import tyro

from sailor_jax.agents.rollout import cut_windows
from sailor_jax.cli import parse_args
from sailor_jax.config import LLMRankerConfig, RankerConfig
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import THETA0
from sailor_jax.judges import ExpertRanker, LLMRanker, OutcomeRanker, pointwise
from sailor_jax.judges.base import group_size
from sailor_jax.judges.factory import check_ranker, judge_name, make_ranker
from sailor_jax.logging import to_jsonable
from sailor_lab import judge_eval, policy_groups, report, sailor_windows, strong_pool
from sailor_lab.identifiability import feature_spread

PoolFlags = Annotated[judge_eval.PoolArgs, tyro.conf.OmitArgPrefixes]
"""Pool settings as flags without a prefix (`--epsilons`, `--m`, `--groups`, ...)."""


@dataclasses.dataclass(frozen=True)
class Args:
    """Judge-quality benchmark."""

    judge: str = "expert"
    """Judge kind: expert, outcome, linear_oracle (theta_star = `--theta-star`, default theta0)
    or llm; `expert:<verdict>` picks the expert's verdict (regret, agreement, value)."""
    llm: LLMRankerConfig = LLMRankerConfig()
    """LLM judge settings (`--llm.model`, `--llm.mode`, ...); model None = embedded SmolLM2."""
    theta_star: tuple[float, ...] | None = None
    """Reward of the linear-oracle judge (8 values); None = the baseline theta0."""
    expert_depth: int = 2
    """Depth of the expert judge (and of the reference expert)."""
    noise: float = 0.0
    """The expert judges made this noisy (`--sailor.ranker.noise`, the judge of dialled
    quality); the record then also gives `tau_clean`, Kendall's tau with the same judge
    without noise."""
    pool: PoolFlags = judge_eval.PoolArgs()
    """The graded-skill pool and group draw (`--epsilons`, `--m`, `--groups`, ...)."""
    json: bool = False
    """Print the result as one JSON line on stdout (the summary and tables go to stderr)."""
    setting: Literal["graded", "sailor", "strong", "windows"] = "graded"
    """graded: the graded-skill pool above (one judge, `--judge`). sailor: SAILOR's own
    setting, groups of `--m` whole games of one policy each, every judge of `--judges`:
    rank correlation of each judge's verdict with game length and final score per policy,
    and which theta entries the groups' Phi sums can identify (whole games vs windows).
    strong: the strong-play pool (`--strong.*`), whole games and windows, the judge beside
    the final score and the expert. windows: the windows SAILOR itself judges (`--windows`)."""
    windows: str = "confirmation"
    """windows: the stored set (development, confirmation) or the path of a `.npz` set."""
    windows_seed: int | None = None
    """windows: record a fresh set from new runs with this root seed first (slow: two `cpu`
    runs without twins, into `runs/judge_windows/seed<S>/`) and judge it instead."""
    window_groups: int | None = None
    """windows: judge this many groups of the set (rounded up to the run's whole calls, every
    seed's group of one iteration), drawn with `--seed` (None: all)."""
    strong: strong_pool.StrongPoolArgs = strong_pool.StrongPoolArgs()
    """strong: the players, pool sizes, group draw and seed (1 = development, 2 =
    confirmation)."""
    policies: tuple[str, ...] = ("eps0.1", "eps0.3", "eps0.6", "ppo_init", "ppo_300k")
    """sailor: the policies (`policy_groups.policy_collect`: eps<e> experts at `--pool-depth`,
    ppo_init, ppo_<steps> trained on theta0)."""
    judges: tuple[str, ...] = ("expert", "outcome", "linear_oracle")
    """sailor: the judges compared (add llm for the LLM judge: slow on a CPU)."""
    policy_groups: int = 6
    """sailor: groups of `--m` games per policy."""
    game_len: int = 2000
    """sailor: moves per game at most (SailorConfig.max_len's default)."""
    window: int = 100
    """sailor: window length of the identifiability table's windowed rows."""


def make_judge(args: Args, kind: str | None = None):
    """The judge under test (`kind`, default `args.judge`), built from `args` (validated
    before any game is played; an LLM judge keeps every log record)."""
    kind, _, verdict = (kind or args.judge).partition(":")
    if kind == "linear_oracle":
        theta_star = args.theta_star if args.theta_star is not None else THETA0
        cfg = RankerConfig(kind="linear_oracle", theta_star=tuple(theta_star))
    else:
        cfg = RankerConfig(kind=kind, llm=args.llm, expert_depth=args.expert_depth,
                           expert_verdict=verdict or "regret",
                           noise=args.noise if kind == "expert" else 0.0)
    check_ranker(cfg)
    return cfg, LLMRanker(cfg.llm, keep_records=None) if kind == "llm" else make_ranker(cfg)


def tau_clean(cfg: RankerConfig, rankings, groups) -> dict:
    """`{"noise": sigma, "tau_clean": tau}` for a noisy expert judge (Kendall's tau with the
    same judge without noise, mean over groups); `{}` for any other judge."""
    if cfg.kind != "expert" or cfg.noise == 0:
        return {}
    clean = make_ranker(dataclasses.replace(cfg, noise=0.0)).rank_groups(groups)
    return {"noise": cfg.noise, "tau_clean": judge_eval.tau_with(rankings, clean)}


def _label(cfg: RankerConfig) -> str:
    """The judge's name in the tables: `judge_name`, with the expert's verdict if not regret."""
    name = judge_name(cfg)
    if cfg.kind == "expert" and cfg.expert_verdict != "regret":
        name = f"{name}:{cfg.expert_verdict}"
    return f"{name}+noise{cfg.noise:g}" if cfg.noise > 0 else name


def run(args: Args) -> dict:
    """Build the pool and groups, rank them with the judge and the references; the record."""
    cfg, judge = make_judge(args)
    pool, index = args.pool.draw()
    groups = judge_eval.group_batches(pool, index)
    references = {"expert": ExpertRanker(depth=args.expert_depth).rank_groups(groups),
                  "outcome": OutcomeRanker().rank_groups(groups)}
    t0 = time.perf_counter()
    rankings = judge.rank_groups(groups)
    seconds = time.perf_counter() - t0
    record = {"judge": _label(cfg), "kind": args.judge,
              **judge_eval.judge_metrics(rankings, [pool.epsilon[i] for i in index],
                                         references),
              "seconds_per_group": seconds / args.pool.groups, **tau_clean(cfg, rankings, groups)}
    if cfg.kind == "llm":
        record |= {"mode": args.llm.mode, **judge_eval.llm_prompt_stats(judge.records)}
    usage = getattr(judge, "token_usage", None)
    if usage is not None:  # an endpoint judge: what served it, and what it cost
        record |= {"endpoint": args.llm.endpoint, "served_model": judge.backend.model_name,
                   "endpoint_api": judge.backend.api, "logprobs": judge.backend.logprobs,
                   "tokens": usage.total}
    lengths = np.asarray(pool.batch.lengths)
    record |= {**args.pool.record(), "pool_length_mean": float(lengths.mean()),
               **report.machine()}
    return record


def run_sailor(args: Args) -> dict:
    """SAILOR's setting: per policy and judge, the rank correlation of the judge's verdict with
    game length and final score; per feature, its within-group spread (whole games, windows)."""
    judges = {kind: make_judge(args, kind) for kind in args.judges}
    t0 = time.perf_counter()
    played = policy_groups.play_policy_groups(args.policies, args.pool.m, args.policy_groups,
                                           args.game_len, args.pool.pool_depth, args.pool.seed)
    play_s = time.perf_counter() - t0
    groups = played.group_batches()
    rows = []
    for cfg, judge in judges.values():
        t0 = time.perf_counter()
        rankings = judge.rank_groups(groups)
        seconds = time.perf_counter() - t0
        for policy in args.policies:
            pick = [g for g, p in enumerate(played.policy) if p == policy]
            rows.append({"judge": _label(cfg), "policy": policy,
                         **policy_groups.outcome_correlations([rankings[g] for g in pick],
                                                           [groups[g] for g in pick]),
                         "seconds_per_group": seconds / len(groups),
                         **tau_clean(cfg, [rankings[g] for g in pick],
                                     [groups[g] for g in pick])})
    windows = [jax.device_get(cut_windows(g, jax.random.key(args.pool.seed + g_i), args.window))
               for g_i, g in enumerate(groups)]
    spread = {}
    for name, batches in (("whole", groups), (f"window{args.window}", windows)):
        spread[name] = feature_spread([np.asarray(b.Phi) for b in batches], FEATURE_NAMES,
                                      lengths=[np.asarray(b.lengths) for b in batches])
    per_policy = {p: {"length_mean": float(np.mean([groups[g].lengths for g, q in
                                                    enumerate(played.policy) if q == p])),
                      "score_mean": float(np.mean([groups[g].score for g, q in
                                                   enumerate(played.policy) if q == p])),
                      "truncated": float(np.mean([groups[g].truncated for g, q in
                                                  enumerate(played.policy) if q == p]))}
                  for p in args.policies}
    return {"setting": "sailor", "correlations": rows, "identifiability": spread,
            "policies": per_policy, "play_s": play_s, "m": args.pool.m,
            "policy_groups": args.policy_groups, "game_len": args.game_len,
            "pool_depth": args.pool.pool_depth, "seed": args.pool.seed, **report.machine()}


def run_strong(args: Args) -> dict:
    """The strong-play pool: per view (whole games, windows), the judge's metrics beside the
    final score's and the expert's, and each judge's accuracy per pair of players."""
    cfg, judge = make_judge(args)
    t0 = time.perf_counter()
    pool = strong_pool.build_strong_pool(args.strong)
    play_s = time.perf_counter() - t0
    references = {"outcome": OutcomeRanker(), "expert": ExpertRanker(depth=args.expert_depth)}
    views = {}
    for view in strong_pool.VIEWS:
        groups, index, truth = strong_pool.draw_groups(pool, args.strong, view)
        rows = {}
        for name, ranker in ((_label(cfg), judge), *references.items()):
            t0 = time.perf_counter()
            rankings = ranker.rank_groups(groups)
            seconds = time.perf_counter() - t0
            metrics = judge_eval.judge_metrics(rankings, truth, {})
            rows[name] = {k: v for k, v in metrics.items() if k != "kendall_tau_per_group"} | {
                "seconds_per_group": seconds / len(groups),
                "pairs_by_player": strong_pool.pair_table(rankings, index, pool)}
        views[view] = rows
    record = {"setting": "strong", "judge": _label(cfg), "kind": args.judge, "views": views,
              "skill": {p: {"skill": float(s), "skill_sem": float(e)}
                          for p, s, e in zip(pool.players, pool.skill, pool.skill_sem,
                                             strict=True)},
              "play_s": play_s, **args.strong.record(), **report.machine()}
    if cfg.kind == "llm":
        record |= {"mode": args.llm.mode, "model": args.llm.model}
    return record


WINDOW_SETS = {name: os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                  "judge_windows", f"{name}.npz")
               for name in ("development", "confirmation")}
"""The stored window sets (`sailor_lab.sailor_windows`): development (root seed 1) and
confirmation (root seed 2)."""


def window_set(args: Args) -> tuple[str, sailor_windows.WindowSet]:
    """The set `--windows` names (or a fresh one of `--windows-seed`), cut to
    `--window-groups`; its name.

    Raises:
      UserError: no such set, or `--window-groups` out of range.
    """
    if args.windows_seed is not None:
        name = f"seed{args.windows_seed}"
        windows = sailor_windows.collect(args.windows_seed,
                                         os.path.join("runs", "judge_windows", name))
    else:
        name = args.windows
        windows = sailor_windows.WindowSet.load(WINDOW_SETS.get(name, name))
    if args.window_groups is not None:
        if not 1 <= args.window_groups <= windows.num_groups:
            raise UserError(f"--window-groups must be in [1, {windows.num_groups}], got "
                            f"{args.window_groups}", "give fewer groups, or none for all")
        windows = windows.select(whole_calls(windows, args.window_groups, args.pool.seed))
    return name, windows


def whole_calls(windows: sailor_windows.WindowSet, groups: int, seed: int) -> np.ndarray:
    """Indices of at least `groups` groups (at most one call more), drawn as the run's whole
    calls (`WindowSet.calls`), so that a judge's cost per window is the loop's."""
    calls = [members for _, members in sorted(windows.calls().items())]
    pick: list[int] = []
    for k in np.random.default_rng(seed).permutation(len(calls)):
        if len(pick) >= groups:
            break
        pick += calls[k]
    return np.sort(np.asarray(pick))


def window_accuracy(rankings, truth: list[np.ndarray]) -> dict:
    """`accuracy`, `accuracy_ci` and `pairs` of a judge's rankings of window groups against
    their pair truth."""
    right, total = judge_eval.pair_counts(rankings, truth)
    return {"accuracy": float(right.sum() / total.sum()) if total.sum() else float("nan"),
            "accuracy_ci": list(judge_eval.accuracy_interval(rankings, truth)),
            "pairs": int(total.sum())}


def window_metrics(rankings, truth: list[np.ndarray], windows: int, seconds: float) -> dict:
    """`window_accuracy`, with `seconds_per_window` and `evidence_per_second`."""
    metrics = window_accuracy(rankings, truth)
    per_window = seconds / max(windows, 1)
    return metrics | {"seconds_per_window": per_window,
                      "evidence_per_second": (2 * metrics["accuracy"] - 1) ** 2 / per_window
                      if per_window > 0 else float("inf")}


def run_windows(args: Args) -> dict:
    """Judge the windows SAILOR itself judges (the module docstring); the record."""
    cfg, judge = make_judge(args)
    name, windows = window_set(args)
    groups, truth = windows.groups(), windows.pair_truth()
    count = sum(group_size(g) for g in groups)
    rankings, seconds = rank_as_the_loop(judge, groups, windows)
    record = {"setting": "windows", "judge": _label(cfg), "kind": args.judge, "windows": name,
              "groups": windows.num_groups, "windows_judged": count,
              **window_metrics(rankings, truth, count, seconds), "by_start": {}}
    for start in np.unique(windows.start).tolist():
        pick = np.flatnonzero(windows.start == start)
        record["by_start"][start] = {"groups": len(pick), **window_accuracy(
            [rankings[g] for g in pick], [truth[g] for g in pick])}
    if cfg.kind == "llm":
        stats = judge_eval.llm_prompt_stats(judge.records)
        stats["model_seconds_per_window"] = stats.pop("seconds_per_window", float("nan"))
        import torch  # loaded with the judge

        record |= {"mode": args.llm.mode, "batch_size": args.llm.batch_size,
                   "dtype": args.llm.dtype, **stats,
                   "loop_order_agreement": loop_agreement(rankings, windows),
                   "torch_threads": torch.get_num_threads(),
                   "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}
    record |= {"reference_skill": windows.reference_skill,
               "loop_seconds_per_window": windows.loop_seconds_per_window, **report.machine()}
    return record


def rank_as_the_loop(judge, groups, windows: sailor_windows.WindowSet) -> tuple[list, float]:
    """Rank the groups in the calls the run made (one per run and iteration, every seed's
    group in it), so that the judge shares prefixes and repeated windows within a call only,
    as in the loop; the rankings in the set's order and the judge's wall-clock seconds."""
    rankings, seconds = [None] * len(groups), 0.0
    for members in windows.calls().values():
        t0 = time.perf_counter()
        out = judge.rank_groups([groups[g] for g in members])
        seconds += time.perf_counter() - t0
        for g, ranking in zip(members, out, strict=True):
            rankings[g] = ranking
    return rankings, seconds


def loop_agreement(rankings, windows: sailor_windows.WindowSet) -> float:
    """The share of (agent, reference) pairs `rankings` order as the run's own judge did
    (its stored scores; groups it gave no score are left out)."""
    mask = windows.cross_pairs()
    loop = [pointwise.rating_ranking(s) for s in windows.loop_scores]
    keep = [g for g, r in enumerate(loop) if r is not None]
    signs = [np.sign(loop[g].rank[None, :] - loop[g].rank[:, None]) * mask for g in keep]
    return judge_eval.pair_accuracy([rankings[g] for g in keep], signs) if keep \
        else float("nan")


def print_windows(record: dict, file=sys.stdout) -> None:
    """The windows setting's table as markdown, to `file`."""
    lo, hi = record["accuracy_ci"]
    print(f"| judge | windows | accuracy [95%] | s per window | evidence per s |\n"
          f"|---|---|---:|---:|---:|\n| {record['judge']} | {record['windows']} "
          f"({record['groups']} groups) | {record['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] | "
          f"{record['seconds_per_window']:.4f} | {record['evidence_per_second']:.3g} |",
          file=file)
    for start, r in record["by_start"].items():
        lo, hi = r["accuracy_ci"]
        print(f"  from {start}: {r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] over {r['groups']} "
              "groups", file=file)


def print_strong(record: dict, file=sys.stdout) -> None:
    """The strong setting's tables as markdown, to `file`."""
    print("| player | skill (mean score) |\n|---|---:|", file=file)
    for p, v in record["skill"].items():
        print(f"| {p} | {v['skill']:.0f} +- {v['skill_sem']:.0f} |", file=file)
    print("\n| view | judge | skill-order accuracy [95%] | Kendall tau |\n|---|---|---:|---:|",
          file=file)
    for view, rows in record["views"].items():
        for name, r in rows.items():
            lo, hi = r["skill_order_accuracy_ci"]
            print(f"| {view} | {name} | {r['skill_order_accuracy']:.3f} [{lo:.3f}, {hi:.3f}] | "
                  f"{r['kendall_tau']:+.2f} |", file=file)


def print_sailor(record: dict, file=sys.stdout) -> None:
    """The sailor setting's tables as markdown, to `file`."""
    print("| policy | moves | score | truncated |\n|---|---:|---:|---:|", file=file)
    for p, v in record["policies"].items():
        print(f"| {p} | {v['length_mean']:.0f} | {v['score_mean']:.0f} | {v['truncated']:.2f} |",
              file=file)
    print("\n| judge | policy | tau(verdict, length) | tau(verdict, score) |\n|---|---|---:|---:|",
          file=file)
    for r in record["correlations"]:
        print(f"| {r['judge']} | {r['policy']} | {r['tau_length']:+.2f} | {r['tau_score']:+.2f} |",
              file=file)
    names = list(record["identifiability"])
    print("\n| feature | " + " | ".join(f"{n}: rel. spread / constant / corr(length)"
                                          for n in names) + " |", file=file)
    print("|---|" + "---:|" * len(names), file=file)
    for k, feature in enumerate(FEATURE_NAMES):
        cells = []
        for n in names:
            r = record["identifiability"][n][k]
            flag = "" if r["identifiable"] else " **not identifiable**"
            cells.append(f"{r['rel_spread']:.3f} / {r['constant_fraction']:.2f} / "
                         f"{r['corr_length']:+.2f}{flag}")
        print(f"| {feature} | " + " | ".join(cells) + " |", file=file)


def main(args: Args) -> dict:
    """Run and print a summary (to stderr with --json, then the JSON line). Host-only."""
    out = sys.stderr if args.json else sys.stdout
    settings = {"sailor": (run_sailor, print_sailor), "strong": (run_strong, print_strong),
                "windows": (run_windows, print_windows)}
    if args.setting in settings:
        run_setting, print_setting = settings[args.setting]
        record = run_setting(args)
        print_setting(record, out)
        if args.json:
            print(json.dumps(to_jsonable(record)), flush=True)  # NaN -> null
        return record
    record = run(args)
    lo, hi = record["skill_order_accuracy_ci"]
    print(f"judge {record['judge']}: skill-order accuracy {record['skill_order_accuracy']:.3f} "
          f"[{lo:.3f}, {hi:.3f}] over {record['skill_pairs']} pairs, agreement with expert "
          f"{record['agreement_expert']:.3f}, with outcome {record['agreement_outcome']:.3f}, "
          f"Kendall tau {record['kendall_tau']:.3f}, {record['seconds_per_group']:.2f} s/group"
          + (f", tau with the clean judge {record['tau_clean']:.3f}" if "tau_clean" in record
             else ""), file=out, flush=True)
    if args.json:
        out = {k: v for k, v in record.items() if k != "kendall_tau_per_group"}
        print(json.dumps(out), flush=True)
    return record


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
