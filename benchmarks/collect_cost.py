"""What the SAILOR iteration's `collect` does: moves played, and seconds per call, per arm.

    python benchmarks/collect_cost.py --out benchmarks/results/collect_cpu
    python benchmarks/collect_cost.py --arms f3878c5 f3878c5:400 now --train-segments 0 3

The collector is `run.loop._collector` of the `gpu` preset (`--preset`), vmapped over its
`num_seeds` rows as `run.loop.run` compiles it, once per arm (`--arms`): `now` is
`agents.rollout` as it is, `REV` the module of git revision REV (f3878c5: the last one whose
collection played a fixed `max_len`-move scan), `REV:N` that module with `max_len` N. The first
arm is the one the others are compared with. Params: PPO's initial params of
the rows, then after each count of `--train-segments` segments of the preset's PPO (theta0)
trained on them; each is collected with the keys of iteration 0, 1, ... as `collect_batch`
draws them.

Per params: the moves in which any agent or reference game of the call was still running (the
longest of the last arm's whole games), the mean game lengths, whether each arm
returns the first arm's batch bit for bit (windowed, and whole games), and the seconds per
compiled warm call of each arm, called in turn `--rounds` times (medians; the first arm's time
over each arm's, the median of the per-round ratios), and the seconds to lower and compile
each arm, measured once at the first params (every row repeats them).

Rows: one JSON object per params (`--out DIR` writes `collect.jsonl.gz`; stdout always).
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import time
from unittest import mock

import jax
import numpy as np

from sailor_jax.agents import ppo, rollout
from sailor_jax.cli import parse_args
from sailor_jax.run import loop, runner
from sailor_lab.report import machine

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


def _same(a, b) -> bool:
    pairs = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    return all(np.array_equal(x, y) for x, y in pairs)


def _same_len(a, b) -> bool:
    return a.boards.shape == b.boards.shape


def _lengths(batch, cfg) -> dict:
    n = cfg.trajectories - cfg.reference_games
    lengths = np.asarray(batch.lengths)
    agent, reference = lengths[:, :n], lengths[:, n:]
    return {"agent_longest": int(agent.max()), "agent_mean": float(agent.mean()),
            "agent_truncated": int(np.asarray(batch.truncated)[:, :n].sum()),
            "reference_longest": int(reference.max()) if reference.size else 0,
            "reference_mean": float(reference.mean()) if reference.size else 0.0,
            "reference_truncated": int(np.asarray(batch.truncated)[:, n:].sum())}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Moves played and seconds per call of the SAILOR collector, per arm."""

    preset: str = "gpu"
    """The `experiments/sailor.py` preset whose collector to build."""
    arms: tuple[str, ...] = ("f3878c5", "now")
    """`now`, a git revision REV or REV:MAX_LEN per arm; the first is the base."""
    train_segments: tuple[int, ...] = (0, 3)
    """PPO segments trained before each measurement (cumulative counts)."""
    rounds: int = 5
    """Calls of each arm, in turn."""
    out: str | None = None
    """Folder for `collect.jsonl.gz`."""


def main(args: Args) -> list[dict]:
    """Measure each params of `args.train_segments`; print and return one row per params."""
    cfg = sailor_cli.PRESETS[args.preset]
    fns = {}
    for arm in args.arms:
        rev, _, length = arm.partition(":")
        module = rollout if rev == "now" else _module_at(rev)
        arm_cfg = dataclasses.replace(cfg, max_len=int(length)) if length else cfg
        with mock.patch.multiple(loop, make_collect=module.make_collect,
                                 make_act_collect=module.make_act_collect):
            build = loop._seeds_collector.__wrapped__  # afresh: the patched collectors trace in
            fns[arm] = (build(*loop.collector_fields(arm_cfg)),
                        build(*loop.collector_fields(dataclasses.replace(arm_cfg, window=0))))
    init, segment = ppo.make_train(cfg.run_ppo, num_seeds=cfg.num_seeds)
    key_init, key_collect, _ = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    state = init(key_init)
    theta = np.tile(np.asarray(cfg.reward_spec().start, np.float32), (cfg.num_seeds, 1))
    rows, trained, compiled, compile_s = [], 0, {}, {}
    for target in args.train_segments:
        for _ in range(target - trained):
            state, _ = segment(state, theta)
        trained = target
        params = runner.rows(state.params, 0, cfg.num_seeds)
        keys = [np.asarray(jax.random.split(jax.random.fold_in(key_collect, t), cfg.num_seeds))
                for t in range(args.rounds)]
        base = args.arms[0]
        for name, f in fns.items():  # compiled once (every params has the same shapes)
            if name not in compiled:
                t0 = time.perf_counter()
                compiled[name] = f[0].lower(params, keys[0]).compile()
                compile_s[name] = time.perf_counter() - t0
        out = {name: jax.device_get(compiled[name](params, keys[0])) for name in fns}
        whole = {name: jax.device_get(f[1](params, keys[0])) for name, f in fns.items()}
        same = {name: _same(out[base], out[name]) for name in fns}
        same_whole = {name: _same(whole[base], whole[name]) for name in fns
                      if _same_len(whole[base], whole[name])}
        seconds = {name: [] for name in fns}
        games = []
        for t in range(args.rounds):
            for name in fns:
                t0 = time.perf_counter()
                jax.block_until_ready(compiled[name](params, keys[t]))
                seconds[name].append(time.perf_counter() - t0)
            games.append(_lengths(jax.device_get(fns[args.arms[-1]][1](params, keys[t])), cfg))
        ratios = {name: float(np.median(np.divide(seconds[base], seconds[name])))
                  for name in fns}
        row = {"preset": args.preset, "segments_trained": target,
               "env_steps_per_seed": target * cfg.ppo.steps_per_segment,
               "rows": cfg.num_seeds, "agent_games": cfg.trajectories - cfg.reference_games,
               "reference_games": cfg.reference_games, "max_len": cfg.max_len,
               "window": cfg.window, "arms": args.arms, "identical": same,
               "identical_whole_games": same_whole, "games": games,
               "seconds": seconds,
               "median_s": {k: float(np.median(v)) for k, v in seconds.items()},
               "base_over_arm": ratios, "compile_s": compile_s,
               **machine()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with gzip.open(os.path.join(args.out, "collect.jsonl.gz"), "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return rows


if __name__ == "__main__":
    main(parse_args(Args, sys.argv[1:]))
