"""SAILOR whose theta update is judged by the agents it trains: candidate selection.

Host orchestration over the package's compiled segment. Each seed keeps K candidates
(`SailorConfig.candidates`), trained side by side as K vmapped rows from the same agent state:
candidate 0 on the incumbent theta, candidates 1..K-1 on proposals. Every `select_every`
segments each candidate plays its `trajectories - reference_games` windows from the same
game keys (common random numbers), the judge ranks all of a seed's candidates' windows with
the reference games in one group, and the candidate whose windows it ranks best on average
wins: its theta becomes the incumbent and its network, optimiser and games are copied to every
candidate row (ties go to the incumbent). The incumbent's proposals for the next segment come
from the recommended update (`theta_update.align_step`) fitted on the whole group, with the
held-out acceptance test left out (the selection is the test); with `tunable=()` theta never
moves and the selection only picks among networks (the equal-compute theta-frozen control).
After Eureka (Ma et al., ICLR 2024: reward candidates kept by the fitness of the policy they
train) and population-based training (Jaderberg et al. 2017: exploit, then explore).

Rows are candidate-major: row `k * S + s` is candidate k of seed s, so rows `0..S-1` are the
incumbents (the evaluated agents). Every candidate's env steps count: a run trains
`K * iterations * steps_per_segment` env steps per seed.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.agents import ppo
from sailor_jax.config import SailorConfig
from sailor_jax.judges.base import Ranker
from sailor_jax.judges.factory import check_judges, make_ranker, ranker_description
from sailor_jax.run import loop, phases, run_dir, run_guard, runner, warmup
from sailor_jax.run.hooks import SailorHooks, evaluate_seeds, progress_line
from sailor_jax.run.results import LoopState, SailorResults, SeedUpdate
from sailor_jax.run.theta_update import align_step, segment_scores, update_stall

__all__ = ["SelectHooks", "merge_groups", "run", "select_winners"]


def merge_groups(batch: Any, num_seeds: int, candidates: int, reference: int) -> Any:
    """One judged group per seed from the candidates' collected games (host NumPy).

    `batch`: `TrajectoryBatch [K * S, M, ...]` (rows candidate-major, the last `reference`
    games of each row the reference player's). Returns `[S, K * (M - reference) + reference,
    ...]`: candidate 0's agent games, then candidate 1's, ..., then candidate 0's reference
    games.
    """
    agents = batch.lengths.shape[1] - reference

    def merge(x):
        x = np.asarray(x).reshape(candidates, num_seeds, *np.shape(x)[1:])
        parts = [x[k, :, :agents] for k in range(candidates)] + [x[0, :, agents:]]
        return np.concatenate(parts, axis=1)

    return jax.tree.map(merge, batch)


def select_winners(rankings: list, candidates: int, per_candidate: int) -> np.ndarray:
    """`int[S]`: per seed the candidate whose games the judge ranks best on average.

    A game's rank is its position in `Ranking.order` (0 = best); candidate k's games are
    group items `k * per_candidate .. (k + 1) * per_candidate - 1`. Ties, and a seed the judge
    gave no ranking (None), go to candidate 0 (the incumbent).
    """
    winners = np.zeros(len(rankings), np.int64)
    for s, ranking in enumerate(rankings):
        if ranking is None:
            continue
        position = np.empty(len(ranking.order), np.float64)
        position[np.asarray(ranking.order)] = np.arange(len(ranking.order))
        mean = position[:candidates * per_candidate].reshape(candidates, per_candidate).mean(1)
        winners[s] = int(np.argmin(mean))  # argmin takes the first: ties to the incumbent
    return winners


@jax.jit
def _copy_rows(state: Any, source: jax.Array, fold: jax.Array) -> Any:
    """Every row r of the runner state becomes row `source[r]`; then where `fold[r]`, row
    r's PRNG key is folded with r, so copied candidates train on different samples."""
    state = jax.tree.map(lambda x: x[source], state)
    rows = jnp.arange(source.shape[0])
    keys = jnp.where(fold[:, None], jax.vmap(jax.random.fold_in)(state.key, rows), state.key)
    return state.replace(key=keys)


class SelectHooks(SailorHooks):
    """`runner.SegmentHooks` of candidate selection (host-only): `SailorHooks` with K
    candidate rows per seed. `proposals` is `float32[K, S, F]`, row 0 the incumbent
    (`state.thetas`)."""

    def __init__(self, ctx: phases.Context, state: LoopState, candidates: int):
        super().__init__(ctx, state)
        self.k = candidates
        self.proposals = np.tile(state.thetas[None], (candidates, 1, 1))

    def thetas(self) -> np.ndarray:
        """`float32[R, F]`: the K candidates' rows (candidate-major), then the baseline's."""
        cfg = self.ctx.cfg
        rows = self.proposals.reshape(-1, self.proposals.shape[-1])
        if cfg.baseline:
            rows = np.concatenate([rows, np.tile(self.ctx.theta0, (cfg.num_seeds, 1))])
        return rows.astype(np.float32)

    def step(self, segment: int, run: runner.Segments) -> str:
        """One iteration: train every candidate, collect, judge one group per seed, keep the
        winners (theta and network), propose the next candidates, record, checkpoint."""
        ctx, state, cfg, s = self.ctx, self.state, self.ctx.cfg, self.ctx.cfg.num_seeds
        if segment == 0:
            self.before_segment(segment, run.state)  # the warm-up moves the incumbents
            self.proposals[:] = state.thetas[None]
            run.state = self._copy(run.state, np.zeros(s, int))
        metrics, seconds = run.train(segment, self.thetas())
        t = state.iteration
        train_score = segment_scores(metrics, s)  # the incumbents' rows
        update_stall(state, train_score, cfg.refine.min_improvement)
        phase_seconds = {"train": seconds}
        if (segment + 1) % cfg.select_every and segment + 1 < cfg.iterations:
            updates = [SeedUpdate(message="trained; no selection") for _ in range(s)]
            record = phases.record_iteration(ctx, state, t, train_score, phase_seconds, None,
                                             self.proposals[0], updates, run.logger, metrics)
            self.record(record, self.periodic_evaluation(segment, run.state), run.logger)
            run.checkpoint(segment)
            return progress_line(state, record)
        t0 = time.perf_counter()
        keys = np.asarray(jax.random.split(jax.random.fold_in(ctx.key_collect, t), s))
        params = runner.rows(run.state.params, 0, s * self.k)
        batch = jax.device_get(ctx.collect(params, np.tile(keys, (self.k, 1))))
        group = merge_groups(batch, s, self.k, cfg.reference_games)
        phase_seconds["collect"] = time.perf_counter() - t0
        rankings, phase_seconds["rank"] = phases.rank(ctx, state, group, t)
        agents = cfg.trajectories - cfg.reference_games
        winners = select_winners(rankings, self.k, agents)
        incumbents = self.proposals[winners, np.arange(s)]
        t0 = time.perf_counter()
        new_thetas, updates = self._propose(incumbents, group, rankings, t, winners)
        phase_seconds["update"] = time.perf_counter() - t0
        run.state = self._copy(run.state, winners)
        record = phases.record_iteration(ctx, state, t, train_score, phase_seconds, group,
                                         incumbents, updates, run.logger, metrics)
        self.proposals = np.concatenate([incumbents[None], new_thetas], 0)
        self.record(record, self.periodic_evaluation(segment, run.state), run.logger)
        run.checkpoint(segment)
        return progress_line(state, record)

    def _copy(self, runner_state: Any, winners: np.ndarray) -> Any:
        """Every candidate row of seed s becomes a copy of the winner's row (`winners`:
        `int[S]`); the copies other than candidate 0 get new PRNG keys, so that candidate 0
        keeps the winner's and trains as an agent alone would. Baseline rows stay."""
        cfg, s = self.ctx.cfg, self.ctx.cfg.num_seeds
        source = np.tile(winners * s + np.arange(s), self.k)
        fold = np.arange(s * self.k) >= s
        if cfg.baseline:
            source = np.concatenate([source, s * self.k + np.arange(s)])
            fold = np.concatenate([fold, np.zeros(s, bool)])
        return _copy_rows(runner_state, jnp.asarray(source), jnp.asarray(fold))

    def _propose(self, incumbents: np.ndarray, group: Any, rankings: list, t: int,
                 winners: np.ndarray) -> tuple[np.ndarray, list[SeedUpdate]]:
        """`(float32[K-1, S, F] proposals, S SeedUpdate)`: the recommended update from the
        winners' thetas on the judged group, without the held-out test (a proposal is
        tested by the agent it trains); K-1 proposals from K-1 update seeds."""
        cfg, s = self.ctx.cfg, self.ctx.cfg.num_seeds
        if rankings is None or not len(self.ctx.spec.tunable_index):
            proposals = np.tile(incumbents[None], (self.k - 1, 1, 1))
            updates = [SeedUpdate(message="theta frozen") for _ in range(s)]
        else:
            fit = dataclasses.replace(cfg, alignment=dataclasses.replace(cfg.alignment,
                                                                         heldout=0.0))
            out = [align_step(incumbents, group, rankings, self.ctx.spec, fit,
                              t * self.k + j, aggregate=getattr(self.ctx.ranker, "aggregate",
                                                                 "sum"))
                   for j in range(self.k - 1)]
            proposals, updates = np.stack([o[0] for o in out]), out[0][1]
        for k, update in enumerate(updates):
            update.message = f"winner candidate {int(winners[k])}; {update.message}"
        return proposals.astype(np.float32), updates

    def to_json(self) -> dict:
        return {**self.state.to_json(), "proposals": self.proposals.tolist()}

    def load_json(self, state: dict) -> None:
        state = dict(state)
        self.proposals = np.asarray(state.pop("proposals"), np.float32)
        super().load_json(state)


def run(cfg: SailorConfig, out_dir: str, resume: bool = False, progress=None,
        ranker: Ranker | None = None) -> SailorResults:
    """Run candidate selection (`cfg.candidates` rows per seed), checkpointing every
    iteration; write `results.json`. Host-only; one process.

    `ranker`: a judge to use instead of building one from `cfg.ranker` (tests). Returns the
    `SailorResults` of the incumbents (rows `0..S-1`); `env_steps_per_seed` is
    one agent's, the run trained `cfg.candidates` times that per seed.

    Raises:
      UserError: as `loop.run` (the folder, the judge's model).
    """
    if resume and run_dir.finished(out_dir):
        run_dir.check_out_dir(out_dir, cfg, resume)
        return SailorResults.load(out_dir)
    run_dir.check_writable(out_dir)
    check_judges(cfg, ranker is not None)
    with run_guard.claim_out_dir(out_dir, cfg, resume) as config:
        spec = cfg.reward_spec()
        theta0 = spec.validate(spec.theta0)
        init = ppo.make_train(cfg.run_ppo, num_seeds=cfg.num_seeds)[0]
        segment = ppo.make_train(cfg.run_ppo, num_seeds=cfg.rows)[1]
        collect = jax.jit(jax.vmap(loop._collector(cfg)))
        key_init, key_collect, key_eval = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
        ranker = ranker or make_ranker(cfg.ranker, os.path.join(out_dir, "llm.jsonl"))
        ctx = phases.Context(cfg, spec, theta0, collect, ranker, None, key_collect, key_eval,
                             warm_up=warmup.warm_up if cfg.warmup_updates else None)
        hooks = SelectHooks(ctx, LoopState.start(theta0, cfg.num_seeds), cfg.candidates)
        copies = cfg.candidates + cfg.baseline  # seed s's rows start as the same agent
        start = jax.tree.map(lambda x: jnp.concatenate([x] * copies), init(key_init))
        state = runner.run_segments(out_dir, start, segment, hooks, resume=resume,
                                    tensorboard=cfg.tensorboard, progress=progress,
                                    label="SAILOR", hparams=config, devices=1)
        loop_state = hooks.state
        t0 = time.perf_counter()
        evaluation = evaluate_seeds(cfg, state, 0, key_eval)
        baseline = evaluate_seeds(cfg, state, cfg.num_seeds * cfg.candidates, key_eval) \
            if cfg.baseline else None
        loop_state.timings["eval"] += time.perf_counter() - t0
        results = SailorResults(
            config=config, ranker=ranker_description(cfg.ranker, ranker),
            feature_names=list(spec.names), theta_history=loop_state.theta_history,
            iterations=loop_state.iterations,
            env_steps_per_seed=cfg.iterations * cfg.ppo.steps_per_segment,
            evaluation=evaluation, baseline_evaluation=baseline, timings=loop_state.timings,
            warmup=loop_state.warmup)
        results.write(out_dir)
        return results
