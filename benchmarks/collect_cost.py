"""What the SAILOR iteration's `collect` does: moves played, and seconds per call, per arm.

    python benchmarks/collect_cost.py --out benchmarks/results/collect_cpu
    python benchmarks/collect_cost.py --before f3878c5 --train-segments 0 3 --rounds 5

The collector is `run.loop._collector` of the `gpu` preset (`--preset`), vmapped over its
`num_seeds` rows as `run.loop.run` compiles it, built twice: with `agents.rollout` as it is
(arm `now`) and with the module of git revision `--before` (arm `before`; default: the last
revision whose collection played a fixed `max_len`-step scan). Params: PPO's initial params of
the rows, then after each count of `--train-segments` segments of the preset's PPO (theta0)
trained on them; each is collected with the keys of iteration 0, 1, ... as `collect_batch`
draws them.

Per params: the moves in which any agent or reference game of the call was still running (the
longest game, whole games before the window is cut), the mean game lengths, whether both arms
return the same batch bit for bit, and the seconds per compiled warm call of each arm, called in
turn `--rounds` times (medians; the ratio is the median of the per-round ratios).

Rows: one JSON object per params (`--out DIR` writes `collect.jsonl.gz`; stdout always).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from unittest import mock

import jax
import numpy as np

from sailor_jax.agents import ppo, rollout
from sailor_jax.run import loop, runner

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "experiments"))
import sailor as sailor_cli  # noqa: E402


def _module_at(rev: str):
    """`sailor_jax.agents.rollout` as git revision `rev` has it."""
    source = subprocess.run(["git", "show", f"{rev}:sailor_jax/agents/rollout.py"], check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(f"rollout_{rev}", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"rollout@{rev}", "exec"), module.__dict__)  # noqa: S102
    return module


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines()
                    if line.startswith("Model name"))
    except (OSError, StopIteration):
        return platform.processor()


def _lengths(batch, cfg) -> dict:
    n = cfg.trajectories - cfg.reference_games
    lengths = np.asarray(batch.lengths)
    agent, reference = lengths[:, :n], lengths[:, n:]
    return {"agent_longest": int(agent.max()), "agent_mean": float(agent.mean()),
            "agent_truncated": int(np.asarray(batch.truncated)[:, :n].sum()),
            "reference_longest": int(reference.max()) if reference.size else 0,
            "reference_mean": float(reference.mean()) if reference.size else 0.0,
            "reference_truncated": int(np.asarray(batch.truncated)[:, n:].sum())}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="gpu", choices=sorted(sailor_cli.PRESETS))
    parser.add_argument("--before", default="f3878c5", help="git revision of the `before` arm")
    parser.add_argument("--train-segments", type=int, nargs="+", default=[0, 3],
                        help="PPO segments trained before each measurement (cumulative)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    cfg = sailor_cli.PRESETS[args.preset]
    whole_cfg = dataclasses.replace(cfg, window=0)
    arms = {"before": _module_at(args.before), "now": rollout}
    fns = {}
    for name, module in arms.items():
        with mock.patch.multiple(loop, make_collect=module.make_collect,
                                 make_act_collect=module.make_act_collect):
            fns[name] = (jax.jit(jax.vmap(loop._collector(cfg))),
                         jax.jit(jax.vmap(loop._collector(whole_cfg))))
    init, segment = ppo.make_train(cfg.run_ppo, num_seeds=cfg.num_seeds)
    key_init, key_collect, _ = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    state = init(key_init)
    theta = np.tile(np.asarray(cfg.reward_spec().theta0, np.float32), (cfg.num_seeds, 1))
    rows, trained = [], 0
    for target in args.train_segments:
        for _ in range(target - trained):
            state, _ = segment(state, theta)
        trained = target
        params = runner.rows(state.params, 0, cfg.num_seeds)
        keys = [np.asarray(jax.random.split(jax.random.fold_in(key_collect, t), cfg.num_seeds))
                for t in range(args.rounds)]
        out = {name: jax.device_get(f[0](params, keys[0])) for name, f in fns.items()}
        whole = {name: jax.device_get(f[1](params, keys[0])) for name, f in fns.items()}
        same = all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(out["before"]),
                                                         jax.tree.leaves(out["now"])))
        same_whole = all(np.array_equal(a, b) for a, b in zip(
            jax.tree.leaves(whole["before"]), jax.tree.leaves(whole["now"])))
        seconds = {name: [] for name in fns}
        games = []
        for t in range(args.rounds):
            for name, f in fns.items():
                t0 = time.perf_counter()
                jax.block_until_ready(f[0](params, keys[t]))
                seconds[name].append(time.perf_counter() - t0)
            games.append(_lengths(jax.device_get(fns["now"][1](params, keys[t])), cfg))
        ratios = [b / n for b, n in zip(seconds["before"], seconds["now"])]
        row = {"preset": args.preset, "segments_trained": target,
               "env_steps_per_seed": target * cfg.ppo.steps_per_segment,
               "rows": cfg.num_seeds, "agent_games": cfg.trajectories - cfg.reference_games,
               "reference_games": cfg.reference_games, "max_len": cfg.max_len,
               "window": cfg.window, "before": args.before, "identical": same,
               "identical_whole_games": same_whole, "games": games,
               "seconds": seconds,
               "median_s": {k: float(np.median(v)) for k, v in seconds.items()},
               "before_over_now": float(np.median(ratios)), "cpu": _cpu(),
               "backend": jax.default_backend(), "jax": jax.__version__}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with gzip.open(os.path.join(args.out, "collect.jsonl.gz"), "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return rows


if __name__ == "__main__":
    main()
