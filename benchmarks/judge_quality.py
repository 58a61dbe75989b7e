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

Prints one JSON line (`--json`): `judge`, `skill_order_accuracy`, `skill_pairs`,
`agreement_expert`, `agreement_outcome`, `kendall_tau`, `failed_groups`, `seconds_per_group`,
the pool settings, and for LLM judges `model`, `mode`, `label_mass`, `prompts` and, rating
each window (pointwise), `seconds_per_window`, `tokens_per_window`, or comparing pairs,
`position_bias`, `seconds_per_pair`, `tokens_per_pair`; plus `device`, `cpu`, `jax`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Annotated, Literal

import jax
import numpy as np
import tyro

from sailor_jax.agents.rollout import cut_windows
from sailor_jax.cli import parse_args
from sailor_jax.config import LLMRankerConfig, RankerConfig
from sailor_jax.errors import report_user_errors
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges import ExpertRanker, LLMRanker, OutcomeRanker
from sailor_jax.judges.factory import check_ranker, judge_name, make_ranker
from sailor_jax.logging import to_jsonable
from sailor_lab import judge_eval, policy_groups, report, strong_pool
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
    setting: Literal["graded", "sailor", "strong"] = "graded"
    """graded: the graded-skill pool above (one judge, `--judge`). sailor: SAILOR's own
    setting, groups of `--m` whole games of one policy each, every judge of `--judges`:
    rank correlation of each judge's verdict with game length and final score per policy,
    and which theta entries the groups' Phi sums can identify (whole games vs windows).
    strong: the strong-play pool (`--strong.*`), whole games and windows, the judge beside
    the final score and the expert."""
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
        theta_star = args.theta_star if args.theta_star is not None else RewardSpec().theta0
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
    settings = {"sailor": (run_sailor, print_sailor), "strong": (run_strong, print_strong)}
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
