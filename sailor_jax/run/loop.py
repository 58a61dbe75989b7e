"""The SAILOR loop: build a run, pick its hooks, run the segments, evaluate, write results.

Host orchestration. For t = 0..T-1 the runner trains PPO on `R_theta` for one compiled
segment (S seeds vmapped); then the hooks (`hooks.SailorHooks`, or `pipeline.PipelinedHooks`
with `cfg.pipeline`) sample M games per seed with the current stochastic policy, rank them by
`R_theta = Phi @ theta` and by the judge, turn every discordant pair plus as many sampled
concordant pairs into preference data, update theta so `R_theta` agrees with the judge (and ask
the refinement advisor where a seed agrees but stalls), and log; the runner checkpoints. After
Zeng et al. 2024, "Learning Reward for Robot Skills Using Large Language Models via
Self-Alignment".

With `baseline=True` the same compiled program also trains S agents on the fixed initial
reward (extra rows of the vmapped seed axis), so the final table compares like with like;
with `self_align=False` the judge phases are skipped (a fixed-reward variant).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable

import jax
import numpy as np

from sailor_jax.agents import ppo
from sailor_jax.agents.rollout import cut_windows, make_act_collect, make_collect
from sailor_jax.alignment import refinement
from sailor_jax.config import NetworkConfig, SailorConfig
from sailor_jax.config.run import REFERENCE_EPSILON
from sailor_jax.game.expert import expert_act
from sailor_jax.judges.base import Ranker
from sailor_jax.judges.factory import check_judges, make_ranker, ranker_description
from sailor_jax.run import run_dir, run_guard, runner, warmup
from sailor_jax.run.hooks import SailorHooks, evaluate_seeds
from sailor_jax.run.phases import Context
from sailor_jax.run.pipeline import PipelinedHooks
from sailor_jax.run.results import PHASES, LoopState, SailorResults
from sailor_jax.scale import memory, sharding

__all__ = ["PHASES", "run"]


def collector_fields(cfg: SailorConfig) -> tuple:
    """What `_collector` reads of `cfg`: `(network, agent games, reference games, max_len,
    window)`."""
    return (cfg.ppo.network, cfg.trajectories - cfg.reference_games, cfg.reference_games,
            cfg.max_len, cfg.window)


def _collector(network: NetworkConfig, agent_games: int, reference_games: int, max_len: int,
               window: int) -> Callable:
    """`collect(params, key) -> TrajectoryBatch` of one seed: `agent_games` games of the
    agent (`params`), then `reference_games` of the epsilon-greedy expert (key folded with 2);
    whole games of at most `max_len` moves, or one window of `window` moves per game (window
    starts drawn from a key folded off the game key with 1)."""
    agent = make_collect(network, agent_games, max_len)
    reference = make_act_collect(expert_act(1, REFERENCE_EPSILON), reference_games,
                                 max_len) if reference_games else None

    def collect(params, key):
        batch = agent(params, key)
        if reference is not None:
            batch = jax.tree.map(lambda a, b: jax.numpy.concatenate([a, b]), batch,
                                 reference(jax.random.fold_in(key, 2)))
        return cut_windows(batch, jax.random.fold_in(key, 1), window) if window else batch

    return collect


@functools.lru_cache(maxsize=16)
def _seeds_collector(*fields) -> Callable:
    """`jit(vmap(_collector(*fields)))` over the seed axis, cached: runs whose configs differ
    elsewhere (iterations, judge, seeds) share one compiled collector."""
    return jax.jit(jax.vmap(_collector(*fields)))


def run(cfg: SailorConfig, out_dir: str, resume: bool = False, ranker: Ranker | None = None,
        progress=None, advisor: refinement.Advisor | None = None,
        devices: int | None = None, label: str = "SAILOR") -> SailorResults:
    """Run SAILOR, checkpointing every iteration; write `results.json`. Host-only.

    Args:
      cfg: the run configuration.
      out_dir: output folder (config.json, metrics.jsonl, llm.jsonl, checkpoints/, results.json).
      resume: continue the run in `out_dir` from its latest checkpoint (config must match);
        the resumed run ends with the same theta history as an uninterrupted one. A finished
        run is read back from its `results.json` at once.
      ranker: judge to use instead of building one from `cfg.ranker` (tests).
      progress: optional `rich.progress.Progress`.
      label: what the progress bar calls the run (a comparison names its arm).
      advisor: refinement advisor to use instead of building one from `cfg.refine` (tests).
      devices: devices the seed rows are sharded over (`sharding.SeedLayout`; None: all).
        In a multi-process run (`sharding.initialize_distributed`) only process 0 builds
        the judge, ranks and writes files; theta reaches the others by broadcast.

    Returns:
      The `SailorResults` written to `results.json`.

    Raises:
      UserError: `out_dir` holds a started run and `resume` is False, or the saved config
        differs, or there is no run to resume, or the judge's model cannot be found
        (`run_dir.check_out_dir`, `check_judges`), or another process runs in `out_dir`
        (`run_guard.claim_out_dir`), or the training rows will not fit in memory
        (`memory.check_fits`), or `out_dir` cannot be created or written
        (`run_dir.check_writable`, first); all before anything is written. While running: the
        disk is full or the folder became unwritable (the last checkpoint stays).
      Interrupted: Ctrl-C or SIGTERM while running (continue with `resume=True`).
    """
    if resume and run_dir.finished(out_dir):  # nothing to do: read it back at once
        run_dir.check_out_dir(out_dir, cfg, resume)
        return SailorResults.load(out_dir)
    run_dir.check_writable(out_dir)  # before any work: --out can be created and written
    if cfg.self_align and sharding.is_main_process():  # before the folder is written
        check_judges(cfg, ranker is not None, advisor is not None)
    rows = cfg.rows
    memory.check_fits(ppo.make_train(cfg.run_ppo)[0], jax.random.PRNGKey(cfg.seed), rows,
                      ppo.make_train(cfg.run_ppo, num_seeds=rows)[1],
                      np.zeros((rows, len(cfg.reward_spec().names)), np.float32),
                      len(sharding.resolve_devices(devices)),
                      "lower --sailor.ppo.num-envs (or --sailor.ppo.num-steps) or "
                      "--sailor.num-seeds")
    with run_guard.claim_out_dir(out_dir, cfg, resume) as config:
        return _run_claimed(cfg, out_dir, config, resume, ranker, progress, advisor, devices,
                            label)


def _run_claimed(cfg: SailorConfig, out_dir: str, config: dict, resume: bool,
                 ranker: Ranker | None, progress, advisor: refinement.Advisor | None,
                 devices: int | None, label: str) -> SailorResults:
    """`run` in the folder it holds (`run_guard.claim_out_dir`, `config.json` written)."""
    main = sharding.is_main_process()
    spec = cfg.reward_spec()
    start = spec.validate(spec.start)
    rows = cfg.rows
    init, segment = ppo.make_train(cfg.run_ppo, num_seeds=rows)
    collect = _seeds_collector(*collector_fields(cfg))
    key_init, key_collect, key_eval = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    if cfg.self_align and ranker is None and main:
        ranker = make_ranker(cfg.ranker, os.path.join(out_dir, "llm.jsonl"))
    if cfg.self_align and cfg.refine.enabled and advisor is None and main:
        advisor = refinement.make_advisor(cfg.ranker.llm, ranker,
                                          os.path.join(out_dir, "refine.jsonl"))
    ctx = Context(cfg, spec, start, collect, ranker, advisor, key_collect, key_eval,
                  warm_up=warmup.warm_up if cfg.self_align and cfg.warmup_updates else None)
    hooks_class = PipelinedHooks if cfg.pipeline and cfg.self_align else SailorHooks
    hooks = hooks_class(ctx, LoopState.start(start, cfg.num_seeds))
    hooks.label = label
    runner_state = runner.run_segments(out_dir, init(key_init), segment, hooks, resume=resume,
                                       tensorboard=cfg.tensorboard, progress=progress,
                                       label=label, hparams=config, devices=devices)
    state = hooks.state
    t0 = time.perf_counter()
    evaluation = evaluate_seeds(cfg, runner_state, 0, key_eval)
    baseline = evaluate_seeds(cfg, runner_state, cfg.num_seeds, key_eval) if cfg.baseline else None
    state.timings["eval"] += time.perf_counter() - t0
    results = SailorResults(
        config=config, ranker=ranker_description(cfg.ranker, ranker),
        feature_names=list(spec.names),
        theta_history=state.theta_history, iterations=state.iterations,
        env_steps_per_seed=cfg.iterations * cfg.ppo.steps_per_segment, evaluation=evaluation,
        baseline_evaluation=baseline, timings=state.timings, warmup=state.warmup)
    if main:
        results.write(out_dir)
    return results
