"""Judge quality: how well does a judge order trajectories of known skill?

    python benchmarks/judge_quality.py --judge expert --json
    python benchmarks/judge_quality.py --judge outcome --json
    python benchmarks/judge_quality.py --judge linear_oracle --json          # theta0 as theta_star
    python benchmarks/judge_quality.py --judge llm --json                    # embedded SmolLM2
    python benchmarks/judge_quality.py --judge llm --llm.model Qwen/Qwen2.5-1.5B-Instruct --json

Run it with your judge model before a long SAILOR run: a judge that cannot tell the
expert from a random player (`skill_order_accuracy` near 0.5) has nothing to teach theta.

The pool (`sailor_jax.judges.judge_eval.build_pool`): for each epsilon in `--epsilons`,
`--games-per-player` games of the epsilon-greedy expectimax expert (depth `--pool-depth`;
epsilon 1 = uniformly random legal moves), cut at `--max-len` moves; `--groups` groups of
`--m` trajectories drawn from it (seeded). Every judge sees the same groups. The expert judge
and the pool's players share the expert (at the same depth, it is the positive control by
construction); `--pool-depth 1` draws the pool from a different, weaker expert.

Prints one JSON line (`--json`): `judge`, `skill_order_accuracy`, `skill_pairs`,
`agreement_expert`, `agreement_outcome`, `kendall_tau`, `failed_groups`, `seconds_per_group`,
the pool settings, and for LLM judges `model`, `mode`, `position_bias`, `label_mass`,
`seconds_per_pair`, `tokens_per_pair`, `prompts`; plus `device`, `cpu`, `jax`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Annotated

import numpy as np
import tyro

from sailor_jax import report
from sailor_jax.config import LLMRankerConfig, RankerConfig
from sailor_jax.errors import report_user_errors
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges import ExpertRanker, OutcomeRanker, judge_eval
from sailor_jax.judges.factory import check_ranker, judge_name, make_ranker

PoolFlags = Annotated[judge_eval.PoolArgs, tyro.conf.OmitArgPrefixes]
"""Pool settings as flags without a prefix (`--epsilons`, `--m`, `--groups`, ...)."""


@dataclasses.dataclass(frozen=True)
class Args:
    """Judge-quality benchmark."""

    judge: str = "expert"
    """Judge kind: expert, outcome, linear_oracle (theta_star = `--theta-star`, default theta0)
    or llm."""
    llm: LLMRankerConfig = LLMRankerConfig(max_records=1_000_000)
    """LLM judge settings (`--llm.model`, `--llm.mode`, ...); model None = embedded SmolLM2."""
    theta_star: tuple[float, ...] | None = None
    """Reward of the linear-oracle judge (8 values); None = the baseline theta0."""
    expert_depth: int = 2
    """Depth of the expert judge (and of the reference expert)."""
    pool: PoolFlags = judge_eval.PoolArgs()
    """The graded-skill pool and group draw (`--epsilons`, `--m`, `--groups`, ...)."""
    json: bool = False
    """Print the result as one JSON line on stdout (the summary line goes to stderr)."""


def make_judge(args: Args):
    """The judge under test, built from `args` (validated before any game is played)."""
    if args.judge == "linear_oracle":
        theta_star = args.theta_star if args.theta_star is not None else RewardSpec().theta0
        cfg = RankerConfig(kind="linear_oracle", theta_star=tuple(theta_star))
    else:
        cfg = RankerConfig(kind=args.judge, llm=args.llm, expert_depth=args.expert_depth)
    check_ranker(cfg)
    return cfg, make_ranker(cfg)


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
    record = {"judge": judge_name(cfg), "kind": args.judge,
              **judge_eval.judge_metrics(rankings, [pool.epsilon[i] for i in index],
                                         references),
              "seconds_per_group": seconds / args.pool.groups}
    if args.judge == "llm":
        record |= {"mode": args.llm.mode, **judge_eval.llm_prompt_stats(judge.records)}
    lengths = np.asarray(pool.batch.lengths)
    record |= {**args.pool.record(), "pool_length_mean": float(lengths.mean()),
               **report.machine()}
    return record


def main(args: Args) -> dict:
    """Run and print a summary line (to stderr with --json, then the JSON line). Host-only."""
    record = run(args)
    print(f"judge {record['judge']}: skill-order accuracy {record['skill_order_accuracy']:.3f} "
          f"over {record['skill_pairs']} pairs, agreement with expert "
          f"{record['agreement_expert']:.3f}, with outcome {record['agreement_outcome']:.3f}, "
          f"Kendall tau {record['kendall_tau']:.3f}, {record['seconds_per_group']:.2f} s/group",
          file=sys.stderr if args.json else sys.stdout, flush=True)
    if args.json:
        out = {k: v for k, v in record.items() if k != "kendall_tau_per_group"}
        print(json.dumps(out), flush=True)
    return record


if __name__ == "__main__":
    report_user_errors(lambda argv: main(tyro.cli(Args, args=argv)))
