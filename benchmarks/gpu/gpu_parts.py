"""The parts of `benchmarks/gpu_check.py`, each run in a process of its own. Host-only.

`run_part(name, tiny, work, deadline_s)` runs one part and appends one JSON line per
measurement to `WORK/<name>.jsonl` as soon as it ends (the check keeps the lines of a part it
stops at the deadline). Every line carries the part's name and the machine (`report.machine`:
device, device kind, CPU, jax version). Sizes: `FULL` on a GPU, `TINY` for `--tiny`.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
REPO = os.path.dirname(BENCHMARKS)
sys.path[:0] = [HERE, BENCHMARKS]  # judge_cost.py beside this file; census.py, ... in benchmarks/

import census  # noqa: E402
import judge_cost  # noqa: E402
import phases  # noqa: E402
import throughput  # noqa: E402

from sailor_jax.config.recipes import recipe  # noqa: E402
from sailor_jax.logging import json_line  # noqa: E402
from sailor_lab import report  # noqa: E402

TRUNKS = ("afterstates_64", "default")
"""The (64, 64) afterstate trunk (`SMALL_NETWORK`) and `PPOConfig()`'s (256, 256) one."""


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What one check measures."""

    env_batches: tuple[int, ...]
    env_steps_per_call: int  # env steps per timed call, over the batch (scan length: this / batch)
    trunks: tuple[str, ...]  # recipes of the ppo part
    ppo_envs: tuple[int, ...]
    ppo_seeds: tuple[int, ...]
    ppo_updates: int  # PPO updates per timed segment
    repeats: int  # timed calls after the warm-up
    flops_envs: int  # envs per seed of the three segments XLA counts FLOPs of
    reference_envs: tuple[int, ...]
    judge_size: str  # `sailor_lab.random_model.SIZES`
    judge_batches: tuple[int, ...]
    judge_groups: int  # groups of 8 windows judged per batch size
    pool_epsilons: tuple[float, ...]  # players of the windows' pool (epsilon-greedy experts)
    pool_games: int  # games per player of that pool
    main_args: tuple[str, ...]  # after `experiments/sailor.py --preset gpu`
    census_arms: tuple[str, ...]  # `census.ARMS` profiled: each trunk as now and as before
    census_envs: int  # envs of every census arm's segment (one seed)
    decide_args: tuple[str, ...]  # after `experiments/compare.py`: the decisive comparison


FULL = Sizes(env_batches=tuple(2**k for k in (22, 20, 18, 16, 14, 12)),
             env_steps_per_call=2**26, trunks=TRUNKS, ppo_envs=(256, 2048, 16384),
             ppo_seeds=(8,), ppo_updates=2, repeats=2, flops_envs=256, reference_envs=(4096,),
             judge_size="qwen2.5-1.5b", judge_batches=(8, 16, 32, 64), judge_groups=16,
             pool_epsilons=(1.0, 0.3), pool_games=64, main_args=("--sailor.iterations", "4"),
             census_arms=("afterstates_64", "afterstates_64:gather", "default",
                          "default:gather"), census_envs=16384,
             decide_args=("--preset", "cpu", "--updates-per-segment", "20", "--num-seeds", "16",
                          "--blocks", "4", "--seed", "200"))
TINY = Sizes(env_batches=(2**6,), env_steps_per_call=2**10,
             # The (256, 256) trunk: its row (8 envs, 2 seeds, 1 update, 1 repeat) is the
             # segment program the throughput benchmark's test compiles.
             trunks=TRUNKS[1:], ppo_envs=(8,),
             ppo_seeds=(2,), ppo_updates=1, repeats=1, flops_envs=8, reference_envs=(8,),
             judge_size="tiny", judge_batches=(2, 4), judge_groups=2, pool_epsilons=(1.0,),
             pool_games=8,
             # The PPO of the CLI tests (`tests/test_experiments.TINY_PPO`): with the run's
             # baseline row, the segment program they compile (shared through the tests' cache).
             main_args=("--sailor.iterations", "1", "--sailor.num-seeds", "1",
                        "--sailor.ppo.num-envs", "16", "--sailor.ppo.updates-per-segment", "1",
                        "--sailor.ppo.num-steps", "8", "--sailor.ppo.network.hidden-sizes", "16",
                        "--sailor.ppo.lr-schedule", "constant",
                        "--sailor.eval.episodes", "2", "--sailor.eval.max-len", "300",
                        "--sailor.max-len", "300", "--sailor.ranker.llm.batch-size", "4",
                        "--sailor.reference-games", "0"),
             census_arms=("afterstates_64",), census_envs=8,
             decide_args=("--preset", "smoke", "--iterations", "1", "--updates-per-segment", "1",
                          "--num-seeds", "1", "--blocks", "2", "--seed", "200",
                          "--resamples", "500"))
WINDOW = 100
"""Moves per judged window: the `gpu` preset's (`SailorConfig().window`)."""
DECIDE_ARMS = ("theta0.fixed", "theta0.sailor")
"""The decisive comparison's arms: theta0 kept fixed and the recommended SAILOR from it."""
DECIDE_MODEL_ENV = "SAILOR_DECIDE_MODEL"
"""The 1.5B judge's folder for `decide_llm` on a GPU (default `~/.cache/sailor_jax/
qwen2.5-coder-1.5b`, where `python -m sailor_jax.judges.model_parts` installs it)."""


def part_env(sizes: Sizes, emit: Callable[[dict], None], work: str) -> None:
    """env + features steps/s per batch (largest first)."""
    for n in sizes.env_batches:
        steps = max(16, min(1024, sizes.env_steps_per_call // n))
        args = throughput.Args(env_steps=steps, repeats=sizes.repeats + 1)
        emit({"benchmark": "env_features", "scan_steps": steps,
              **throughput.bench_env("env_features", n, args)})


def _ppo_rows(sizes: Sizes, recipes: tuple[str, ...], envs: tuple[int, ...],
              emit: Callable[[dict], None]) -> None:
    args = throughput.Args(ppo_updates=sizes.ppo_updates, repeats=sizes.repeats)
    for n in envs:
        for s in sizes.ppo_seeds:
            for name in recipes:
                emit({"benchmark": "ppo_train_seeds", **throughput.bench_ppo(n, args, s, name)})


def part_ppo(sizes: Sizes, emit: Callable[[dict], None], work: str) -> None:
    """FLOPs and bytes accessed per env step of each trunk, then the PPO segment's rows (in
    `Sizes.ppo_envs` order)."""
    once = None
    for name in sizes.trunks:
        cfg = dataclasses.replace(recipe(name), num_envs=sizes.flops_envs,
                                  updates_per_segment=1).over_run(4)
        flops = throughput.cost_per_env_step(cfg, once)
        once = flops["loops_counted_once"]
        emit({"benchmark": "flops", "recipe": name, "num_envs": sizes.flops_envs, **flops})
    _ppo_rows(sizes, sizes.trunks, sizes.ppo_envs, emit)


def part_reference(sizes: Sizes, emit: Callable[[dict], None], work: str) -> None:
    """PureJaxRL's PPO function (recipe `v0`)."""
    _ppo_rows(sizes, ("v0",), sizes.reference_envs, emit)


def part_census(sizes: Sizes, emit: Callable[[dict], None], work: str) -> None:
    """`benchmarks/census.py` on this device: XLA's FLOPs and bytes per env step, ops by loop
    region, times, and one `jax.profiler` trace per arm summarised to its top ops; each trunk
    as it runs now (the embedding as the one-hot matmul off the CPU) and as it ran before
    (`:gather`)."""
    args = census.Args(arms=sizes.census_arms, num_envs=sizes.census_envs,
                       repeats=sizes.repeats + 1, profile=os.path.join(work, "census_trace"))
    for row in census.run(args):
        emit({"benchmark": "census", **row})


def part_judge(sizes: Sizes, emit: Callable[[dict], None], work: str) -> None:
    """Build and save the random judge model, load it back, time pointwise judging."""
    import torch

    from sailor_jax.config import LLMRankerConfig
    from sailor_jax.judges import LLMRanker, hf_backend
    from sailor_lab import judge_eval
    from sailor_lab.random_model import save_random_model

    cuda = torch.cuda.is_available()
    dtype, device = ("bfloat16", "cuda") if cuda else ("float32", "cpu")
    pool = judge_eval.build_pool(sizes.pool_epsilons, sizes.pool_games, WINDOW, depth=1, seed=0)
    info = save_random_model(os.path.join(work, "model"), sizes.judge_size, pool.batch,
                             dtype=dtype, device=device)
    t0 = time.perf_counter()
    backend = hf_backend.load_model(info["folder"], None, dtype, device)
    emit({"benchmark": "judge_model", **info, "load_s": time.perf_counter() - t0,
          "torch": torch.__version__, "gpu": torch.cuda.get_device_name() if cuda else None})
    groups = judge_eval.group_batches(pool, judge_eval.sample_groups(
        len(pool.epsilon), 8, sizes.judge_groups, seed=0))
    backend.next_token_logprobs(["warm-up"], [0], 1)
    for b in sizes.judge_batches:
        cfg = LLMRankerConfig(model=info["folder"], mode="pointwise", batch_size=b,
                              dtype=dtype, device=device)
        judge = LLMRanker(cfg, backend=backend, keep_records=None)
        t0 = time.perf_counter()
        judge.rank_groups(groups)
        seconds = time.perf_counter() - t0
        cost = judge_cost.cost_record(judge, len(groups), seconds)
        windows = cost["prompts_per_group"] * len(groups)
        emit({"benchmark": "judge_pointwise", "batch_size": b, "windows": windows,
              "seconds": seconds, "windows_per_s": windows / seconds,
              "prompt_tokens_per_window": cost["prompt_tokens_per_group"]
              / cost["prompts_per_group"],
              "prompt_tokens_per_s": cost["prompt_tokens_per_group"] * len(groups) / seconds,
              "model": info["size"], "dtype": dtype})


def _main_job(sizes: Sizes, emit: Callable[[dict], None], work: str, judge: list[str],
              name: str, stop_at: float) -> None:
    out = os.path.join(work, name)
    cmd = [sys.executable, "experiments/sailor.py", "--preset", "gpu", *sizes.main_args,
           *judge, "--out", out]
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(cmd, cwd=REPO, env=_subprocess_env(), stdout=subprocess.DEVNULL,
                            timeout=max(1.0, stop_at - time.time())).returncode
    except subprocess.TimeoutExpired:
        rc = None  # stopped before the part's deadline: its logged iterations still count
    row = {"benchmark": "main_job", "judge": name, "returncode": rc,
           "wall_s": time.perf_counter() - t0,
           "command": " ".join(["python", *cmd[1:-2]])}
    if os.path.exists(os.path.join(out, "metrics.jsonl")):
        row.update(phases.phase_table(out))
    emit(row)


def _subprocess_env() -> dict:
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}


def _decide_model(sizes: Sizes, work: str) -> str:
    """The decide_llm judge: with `--tiny` a random tiny model built here (the timing and
    the path are real, the verdicts not); on a GPU the real 1.5B model (`DECIDE_MODEL_ENV`)."""
    if sizes.judge_size == "tiny":
        from sailor_lab import judge_eval
        from sailor_lab.random_model import save_random_model

        folder = os.path.join(work, "decide_model")
        pool = judge_eval.build_pool((1.0,), 4, WINDOW, depth=1, seed=0)
        return save_random_model(folder, "tiny", pool.batch, dtype="float32",
                                 device="cpu")["folder"]
    return os.environ.get(DECIDE_MODEL_ENV) or os.path.expanduser(
        os.path.join("~", ".cache", "sailor_jax", "qwen2.5-coder-1.5b"))


def part_decide(sizes: Sizes, emit: Callable[[dict], None], work: str, judge: str,
                stop_at: float) -> None:
    """SAILOR from theta0 against theta0 kept fixed, as many blocks of paired seeds as finish
    before the deadline (`experiments/compare.py --blocks`): one row per finished block with
    every seed's final score per arm, then the pooled paired difference with its power and
    rliable's IQM and probability of improvement."""
    from sailor_jax.run.results import SailorResults
    from sailor_lab import seed_statistics
    from sailor_lab.comparison import score_samples

    name, args = f"decide_{judge}", ["--judge", judge]
    if judge == "llm":
        model = _decide_model(sizes, work)
        if not os.path.exists(model):
            emit({"benchmark": "decide", "judge": judge, "skipped": f"no judge model at {model}: "
                  f"the device has no network and receives at most 64 MiB; set "
                  f"{DECIDE_MODEL_ENV} to a local copy"})
            return
        args += ["--judge-model", model]
    out = os.path.join(work, name)
    cmd = [sys.executable, "experiments/compare.py", *sizes.decide_args, "--starts", "theta0",
           "--arms", "fixed", "sailor", *args, "--out", out]
    t0 = time.perf_counter()
    with open(os.path.join(work, f"{name}.compare.log"), "w", encoding="utf-8") as log:
        try:
            rc = subprocess.run(cmd, cwd=REPO, env=_subprocess_env(), stdout=log,
                                stderr=subprocess.STDOUT,
                                timeout=max(1.0, stop_at - time.time())).returncode
        except subprocess.TimeoutExpired:
            rc = None  # stopped at the deadline: the blocks that finished still count
    pooled: dict[str, list[float]] = {a: [] for a in DECIDE_ARMS}
    blocks = sorted((d for d in os.listdir(out) if d.startswith("seed")),
                    key=lambda d: int(d[4:])) if os.path.isdir(out) else []
    for block in blocks:
        paths = {a: os.path.join(out, block, "variants", a, "results.json") for a in DECIDE_ARMS}
        if not all(os.path.exists(p) for p in paths.values()):
            continue
        results = {a: SailorResults.load(p) for a, p in paths.items()}
        scores = {a: score_samples(r)["score"] for a, r in results.items()}
        for a in DECIDE_ARMS:
            pooled[a] += scores[a]
        emit({"benchmark": "decide", "judge": judge, "root_seed": int(block[4:]),
              "seeds": len(scores[DECIDE_ARMS[0]]), "scores": scores,
              "env_steps_per_seed": results[DECIDE_ARMS[0]].env_steps_per_seed})
    sailor, fixed = (pooled[a] for a in reversed(DECIDE_ARMS))
    row = {"benchmark": "decide_pooled", "judge": judge, "returncode": rc, "seeds": len(fixed),
           "wall_s": time.perf_counter() - t0, "command": " ".join(["python", *cmd[1:]])}
    if len(fixed) >= 2:
        d = report.paired_difference(sailor, fixed)
        row.update({k: d[k] for k in ("mean", "ci_low", "ci_high", "wins")},
                   **seed_statistics.power_summary(d["per_seed"]),
                   p_improvement=seed_statistics.probability_of_improvement(sailor, fixed),
                   rliable=seed_statistics.aggregate_intervals(
                       {"fixed": fixed, "sailor": sailor}))
    emit(row)


def run_part(name: str, tiny: bool, work: str, deadline_s: float | None = None) -> None:
    """Run part `name`, appending its rows to `WORK/<name>.jsonl`. Host-only.

    Raises:
      KeyError: an unknown part.
    """
    sizes = TINY if tiny else FULL
    machine = report.machine()
    path = os.path.join(work, f"{name}.jsonl")

    def emit(row: dict) -> None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json_line({"part": name, **row, **machine}) + "\n")
        print(json_line(row)[:300], flush=True)

    stop_at = time.time() + (deadline_s or 1e9) - 15  # the main job's margin to log its row
    if name == "main_llm":
        _main_job(sizes, emit, work, ["--sailor.ranker.llm.model", os.path.join(work, "model")],
                  name, stop_at)
    elif name == "main_expert":
        _main_job(sizes, emit, work, ["--sailor.ranker.kind", "expert"], name, stop_at)
    elif name.startswith("decide_"):
        part_decide(sizes, emit, work, name.removeprefix("decide_"), stop_at)
    else:
        {"env": part_env, "ppo": part_ppo, "reference": part_reference, "census": part_census,
         "judge": part_judge}[name](sizes, emit, work)
