"""Throughput of the compiled pipeline: env steps per second (SPS), steady state.

    python benchmarks/throughput.py --json                       # defaults for this machine
    python benchmarks/throughput.py --json --num-envs 4096 --only env_features

Benchmarks (each prints one JSON object per line with --json):
- `env_random`: uniformly random legal moves on pgx 2048 with auto-reset.
- `env_features`: the same plus `phi` and the reward `theta . phi` (what PPO's rollout pays).
- `ppo_train`: full PPO training segments (rollout + GAE + epochs x minibatches).
- `ppo_train_seeds`: PPO with S seeds vmapped in one program (`--num-seeds`), SPS summed
  over seeds; the seed axis is sharded over `--devices` devices (`sharding.SeedLayout`,
  default all; on a CPU force N devices with
  `XLA_FLAGS=--xla_force_host_platform_device_count=N`).
- `ppo_train_envs`: one seed with its envs split over `--devices` devices
  (`env_sharding.make_train_env_sharded`: shard_map, gradients pmean'd).

Every row names the device kind and how many devices it used (`device_kind`, `devices`);
`ppo_*` rows also give XLA's memory need of the compiled segment (`temp_gib` scratch,
`state_gib` runner state and theta, summed over devices).

Compile time is measured separately (ahead-of-time `lower().compile()`); every timed call
ends in `jax.block_until_ready`.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
import time
from importlib.metadata import version

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.agents.ppo import make_train
from sailor_jax.cli import parse_args
from sailor_jax.config.recipes import recipe
from sailor_jax.errors import report_user_errors
from sailor_jax.game import env
from sailor_jax.game.features import phi
from sailor_jax.game.reward import THETA0, reward
from sailor_jax.scale.sharding import SeedLayout
from sailor_lab.env_sharding import make_env_mesh, make_train_env_sharded

ALL = ("env_random", "env_features", "ppo_train", "ppo_train_seeds", "ppo_train_envs")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Throughput benchmarks."""

    only: tuple[str, ...] = ALL
    """Which benchmarks to run."""
    num_envs: tuple[int, ...] | None = None
    """Env batch sizes (default: 4096 for env_*, 1024 for ppo_*)."""
    env_steps: int = 256
    """Scan length of one timed env call."""
    ppo_updates: int = 4
    """PPO updates per timed segment."""
    num_seeds: tuple[int, ...] = (1, 4, 8)
    """Seed counts for ppo_train_seeds."""
    recipe: tuple[str, ...] = ("default",)
    """PPO recipes (`sailor_jax.config.recipes`) to compare in ppo_*; num_envs and the updates
    per segment come from --num-envs and --ppo-updates (e.g. `afterstates_64 default`: the
    CPU- and GPU-sized trunks)."""
    devices: int | None = None
    """Devices the seed axis of ppo_train_seeds (the envs of ppo_train_envs) is sharded
    over (default: all)."""
    repeats: int = 3
    """Timed calls after compilation (the median is reported)."""
    json: bool = False
    """Print one JSON object per line (else a readable line)."""


def _timed(fn, *args, repeats: int):
    """Compile `fn` ahead of time, then time `repeats` calls. Returns (compile_s, [seconds])."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = compiled(*args)
    jax.block_until_ready(out)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, times


def env_fn(n: int, steps: int, with_features: bool):
    """`run(state, key) -> (state, key, reward sum)`: `steps` uniformly random legal moves of
    `n` games (`[n]` state, auto-reset), plus `phi` and the reward with `with_features`; a pure
    function to jit."""
    theta = jnp.asarray(THETA0)

    def body(carry, _):
        state, key, acc = carry
        key, key_action, key_step = jax.random.split(key, 3)
        logits = jnp.where(env.legal_action_mask(state), 0.0, -1e9)
        action = jax.random.categorical(key_action, logits)
        state, res = jax.vmap(env.step)(state, action, jax.random.split(key_step, n))
        if with_features:
            r = reward(theta, phi(res.board, res.next_board, res.score_gain, res.terminated))
        else:
            r = res.score_gain
        return (state, key, acc + jnp.sum(r)), None

    def run(state, key):
        return jax.lax.scan(body, (state, key, jnp.float32(0)), length=steps)[0]

    return run


def bench_env(name: str, n: int, args: Args) -> dict:
    state = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))
    fn = env_fn(n, args.env_steps, name == "env_features")
    compile_s, times = _timed(fn, state, jax.random.PRNGKey(1), repeats=args.repeats)
    return {"num_envs": n, "devices": 1, "compile_s": compile_s,
            "sps": n * args.env_steps / sorted(times)[len(times) // 2]}


def bench_ppo(n: int, args: Args, num_seeds: int | None = None, name: str = "default",
              env_sharded: bool = False) -> dict:
    cfg = dataclasses.replace(recipe(name), num_envs=n, updates_per_segment=args.ppo_updates)
    cfg = cfg.over_run(args.ppo_updates * (args.repeats + 1))  # the timed calls' updates
    if env_sharded:
        init, segment = make_train_env_sharded(cfg, args.devices)
    else:
        init, segment = make_train(cfg, num_seeds=num_seeds)
    runner = init(jax.random.PRNGKey(0))
    theta = jnp.asarray(THETA0)
    devices = make_env_mesh(args.devices).size if env_sharded else 1
    if num_seeds is not None:
        layout = SeedLayout(num_seeds, args.devices)
        runner = layout.put(runner)
        theta = layout.put(np.tile(THETA0, (num_seeds, 1)).astype(np.float32))
        devices = layout.num_devices
    t0 = time.perf_counter()
    compiled = segment.lower(runner, theta).compile()
    compile_s = time.perf_counter() - t0
    memory = compiled.memory_analysis()  # XLA's buffer assignment: what the segment needs
    runner, metrics = compiled(runner, theta)
    jax.block_until_ready(metrics)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        runner, metrics = compiled(runner, theta)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t0)
    steps = cfg.steps_per_segment * (num_seeds or 1)
    return {"recipe": name, "num_envs": n, "num_steps": cfg.num_steps,
            "update_epochs": cfg.update_epochs,
            "num_minibatches": cfg.num_minibatches,
            "hidden_sizes": list(cfg.network.hidden_sizes),
            "first_layer": cfg.network.first_layer, "trunk": cfg.network.trunk,
            "num_seeds": num_seeds or 1, "devices": devices,
            "compile_s": compile_s, "sps": steps / sorted(times)[len(times) // 2],
            "temp_gib": None if memory is None else memory.temp_size_in_bytes / 2**30,
            "state_gib": None if memory is None else memory.argument_size_in_bytes / 2**30,
            "segment_s": sorted(times)[len(times) // 2]}


def xla_cost(compiled) -> dict[str, float]:
    """XLA's `flops` and `bytes` accessed of a compiled program (`compiled.cost_analysis()`,
    keys "flops" and "bytes accessed"; a list of one dict in older JAX). Loop bodies are
    counted as XLA counts them: see `cost_per_env_step`."""
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost  # a list of one dict in older JAX
    return {"flops": float(cost["flops"]), "bytes": float(cost["bytes accessed"])}


def _segment_cost(cfg) -> dict[str, float]:
    """`xla_cost` of one compiled segment of `cfg`, one seed (built afresh, not from
    `make_train`'s cache: `census.py` patches what it traces)."""
    init, segment = make_train.__wrapped__(cfg)
    runner = init(jax.random.PRNGKey(0))
    return xla_cost(segment.lower(runner, jnp.asarray(THETA0)).compile())


def cost_per_env_step(cfg, loops_counted_once: bool | None = None,
                      cost: dict[str, float] | None = None) -> dict:
    """XLA's FLOPs and bytes accessed of PPO training per env step of `cfg` (a sized
    `PPOConfig` as `make_train` takes it), from XLA's counts of two or three compiled
    segments. Host-only; compiles those programs.

    XLA's cost analysis may count a loop body once whatever its trip count (it did on XLA:CPU
    with jax 0.10: one segment of 1, 2 or 4 updates counted alike). The segments with U and
    2U updates tell which: if the count doubles, loops were multiplied out and the count over
    the segment's `U n T` env steps is the answer. Else every scan (updates, rollout steps,
    epochs, minibatches) was counted once: the count is `a n + b n T / M` (one rollout step of
    `n` envs, one minibatch of `n T / M` samples), and a second count with `2 M` minibatches
    solves for `a` and `b`; one env step costs `a + E b` (E epochs over every sample). FLOPs
    and bytes are solved alike. `loops_counted_once` (what an earlier call on the same backend
    returned) skips the first check; `cost` (`xla_cost` of `cfg`'s own compiled segment, when
    the caller has it) saves compiling it again.

    Returns:
      `{"flops_per_env_step", "bytes_per_env_step", "loops_counted_once",
      "xla_flops_segment", "xla_bytes_segment", "rollout_flops_per_env_step",
      "rollout_bytes_per_env_step"}`: the rollout's part is `a` (which also holds the other
      loop bodies, GAE's, the epoch's shuffle, the update's, once each), None when loops were
      multiplied out.
    """
    n, t, m, e = cfg.num_envs, cfg.num_steps, cfg.num_minibatches, cfg.update_epochs
    one = cost or _segment_cost(cfg)
    if loops_counted_once is None:
        two = _segment_cost(dataclasses.replace(cfg,
                                                updates_per_segment=2 * cfg.updates_per_segment))
        loops_counted_once = two["flops"] < 1.5 * one["flops"]
    if loops_counted_once:
        halves = _segment_cost(dataclasses.replace(cfg, num_minibatches=2 * m))
    out = {"loops_counted_once": loops_counted_once}
    for key in ("flops", "bytes"):
        out[f"xla_{key}_segment"] = one[key]
        if loops_counted_once:
            b = 2 * (one[key] - halves[key]) * m / (n * t)
            rollout = (one[key] - b * n * t / m) / n
            out[f"{key}_per_env_step"] = rollout + e * b
            out[f"rollout_{key}_per_env_step"] = rollout
        else:
            out[f"{key}_per_env_step"] = one[key] / (cfg.updates_per_segment * n * t)
            out[f"rollout_{key}_per_env_step"] = None
    return out


def main(args: Args) -> None:
    meta = {"device": str(jax.devices()[0]), "device_kind": jax.devices()[0].device_kind,
            "platform": platform.processor() or platform.machine(),
            "jax": jax.__version__, "pgx": version("pgx"), "flax": version("flax"),
            "command": "python " + " ".join(sys.argv)}
    for name in args.only:
        if name not in ALL:
            raise ValueError(f"unknown benchmark {name!r}; choose from {ALL}")
        default = (4096,) if name.startswith("env") else (1024,)
        for n in args.num_envs or default:
            if name.startswith("env"):
                rows = [bench_env(name, n, args)]
            elif name == "ppo_train":
                rows = [bench_ppo(n, args, None, r) for r in args.recipe]
            elif name == "ppo_train_envs":
                rows = [bench_ppo(n, args, None, r, env_sharded=True) for r in args.recipe]
            else:
                rows = [bench_ppo(n, args, s, r) for s in args.num_seeds for r in args.recipe]
            for row in rows:
                row = {"name": name, **row, **meta}
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print(f"{name:16s} envs={row['num_envs']:6d} seeds={row.get('num_seeds', 1)} "
                          f"devices={row['devices']} "
                          f"{row.get('recipe', ''):12s} "
                          f"SPS={row['sps']:12,.0f} compile={row['compile_s']:.1f}s", flush=True)


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
