"""SAILOR's own windows, with each window's player skill: what the judge benchmark's windows
setting judges (`benchmarks/judge_quality.py --setting windows`).

Host orchestration. A window set is recorded from real SAILOR runs at the `cpu` sizes
(`compare.py --preset cpu`: 32 iterations of 4 PPO updates x 256 envs, the (64, 64) afterstate
trunk, 16 windows of 100 moves per seed and iteration, the last 8 played by the reference
player), judged by the presets' judge (the embedded SmolLM2, today's design), one run from
theta0 and one from `pays_for_dying`. A recording judge (`RecordingRanker`) keeps every group
the loop asks it to rank, as it was shown, with the loop's own verdict. Each training
iteration's group then gets its truth, as the judge curve scores a run
(`sailor_lab.judge_curve.window_accuracy`): the agent's windows are the better play when the
agent's mean score on that segment's training games (`IterationRecord.train_score`) is above
the reference player's skill (its mean score over games of its own, `reference_skill`), the
worse when below. Only (agent, reference) pairs carry a truth; the warm-up's groups (no
training score) are not kept.

A set is stored once as one compressed `.npz` (`WindowSet.save` / `load`), so that scoring a
judge design needs no SAILOR run.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import tempfile
from collections.abc import Sequence

import jax
import numpy as np

from sailor_jax.agents.evaluation import play_out
from sailor_jax.config import (
    SMALL_NETWORK,
    EvalConfig,
    LLMRankerConfig,
    PPOConfig,
    RankerConfig,
    SailorConfig,
)
from sailor_jax.config.run import REFERENCE_EPSILON
from sailor_jax.errors import UserError
from sailor_jax.game.env import GAME_2048
from sailor_jax.game.expert import expert_act
from sailor_jax.judges.base import Ranker
from sailor_jax.types import Ranking, TrajectoryBatch
from sailor_lab.starts import STARTS

FIELDS = ("boards", "actions", "score_gains", "lengths", "truncated", "score", "max_tile", "Phi")
"""The `TrajectoryBatch` fields a set stores, each with leading `[G, M]` axes."""
STARTS_RECORDED = ("theta0", "pays_for_dying")
"""The starts a set's runs begin from (`sailor_lab.starts.STARTS`; theta0 = the baseline)."""
REFERENCE_SKILL_GAMES = 256
"""Games the reference player plays to measure its skill (`reference_skill`)."""


def collection_config(seed: int, start: str, num_seeds: int = 4,
                      iterations: int = 32) -> SailorConfig:
    """The SAILOR run whose windows a set records: the `cpu` sizes of the repair table, the
    presets' LLM judge (SmolLM2 rating each window's summary, batches of 32), no kept-fixed
    twins (their agents are never judged), no TensorBoard.

    Raises:
      UserError: an unknown start.
    """
    if start not in STARTS_RECORDED:
        raise UserError(f"unknown start {start!r}", f"known: {', '.join(STARTS_RECORDED)}")
    return SailorConfig(
        iterations=iterations, num_seeds=num_seeds, seed=seed, baseline=False,
        tensorboard=False, start=None if start == "theta0" else STARTS[start].theta,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32, updates_per_segment=4),
        ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(batch_size=32,
                                                            max_prompt_tokens=1536)),
        eval=EvalConfig(episodes=8, max_len=50_000))


class RecordingRanker(Ranker):
    """A judge that ranks with `inner` and keeps every call's groups and rankings. Host-only.

    The loop reads `log_context`, `token_usage` and `aggregate` of its judge; they are the
    inner judge's.

    Attributes:
      calls: per `rank_groups` call, `(groups, rankings)` as given and returned.
    """

    def __init__(self, inner: Ranker) -> None:
        self.inner = inner
        self.name = inner.name
        self.aggregate = getattr(inner, "aggregate", "sum")
        self.calls: list[tuple[list[TrajectoryBatch], list[Ranking | None]]] = []

    @property
    def log_context(self) -> dict:
        return getattr(self.inner, "log_context", {})

    @log_context.setter
    def log_context(self, context: dict) -> None:
        if hasattr(self.inner, "log_context"):
            self.inner.log_context = context

    @property
    def token_usage(self):
        return getattr(self.inner, "token_usage", None)

    def reseed(self, seed: int) -> None:
        self.inner.reseed(seed)

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        out = self.inner.rank_groups(groups)
        self.calls.append((list(groups), list(out)))
        return out


@dataclasses.dataclass(frozen=True)
class WindowSet:
    """Groups of SAILOR windows with their players' skill (host NumPy arrays).

    Attributes:
      batch: `TrajectoryBatch` of `[G, M, ...]` arrays: group g's windows, the agent's first
        (`M - reference_games`), then the reference player's.
      reference_games: the reference player's windows per group (the last ones).
      truth: `int8[G]`: +1 where the agent's windows are the better play (its segment's
        training score above `reference_skill`), -1 where worse, 0 where equal.
      train_score: `float64[G]` the agent's mean score on the segment's training games.
      reference_skill: the reference player's mean score on `REFERENCE_SKILL_GAMES` games.
      start: `str[G]` the run's start; iteration: `int32[G]`; seed: `int32[G]` the seed
        within the run; root: `int32[G]` the run's root seed.
      loop_scores: `float32[G, M]` the loop judge's score of each window (NaN where it gave
        none).
      loop_seconds_per_window: the loop's judge wall-clock seconds per window judged (rank
        phase over the windows it ranked, warm-up included).
    """

    batch: TrajectoryBatch
    reference_games: int
    truth: np.ndarray
    train_score: np.ndarray
    reference_skill: float
    start: np.ndarray
    iteration: np.ndarray
    seed: np.ndarray
    root: np.ndarray
    loop_scores: np.ndarray
    loop_seconds_per_window: float

    @property
    def num_groups(self) -> int:
        return int(self.truth.shape[0])

    def groups(self) -> list[TrajectoryBatch]:
        """Each group as a host `TrajectoryBatch` of `M` windows."""
        return [jax.tree.map(lambda x, g=g: x[g], self.batch) for g in range(self.num_groups)]

    def cross_pairs(self) -> np.ndarray:
        """`int64[M, M]`: 1 where one of windows i, j is the agent's and the other the
        reference player's (the pairs with a truth), 0 elsewhere."""
        m = int(np.shape(self.batch.lengths)[1])
        agent = np.arange(m) < m - self.reference_games
        return (agent[:, None] != agent[None, :]).astype(np.int64)

    def calls(self) -> dict[tuple, list[int]]:
        """The judge calls the runs made: `(root, start, iteration)` -> the indices of its
        groups (every seed's group of that iteration), in the set's order."""
        calls: dict[tuple, list[int]] = {}
        for g, key in enumerate(zip(self.root.tolist(), self.start.tolist(),
                                    self.iteration.tolist(), strict=True)):
            calls.setdefault(key, []).append(g)
        return calls

    def pair_truth(self) -> list[np.ndarray]:
        """Per group, `int64[M, M]` +1 where window i should rank before j, -1 after, 0 where
        no truth (two windows of one player, or a group whose agent scored exactly the
        reference's skill): `judge_eval.pair_counts`' truth."""
        m = int(np.shape(self.batch.lengths)[1])
        agent = (np.arange(m) < m - self.reference_games).astype(np.int64)
        sign = agent[:, None] - agent[None, :]  # +1: i the agent's, j the reference's
        return [int(t) * sign for t in self.truth]

    def select(self, keep: np.ndarray) -> WindowSet:
        """The set restricted to the groups where `keep` (bool `[G]` or indices) holds."""
        take = functools.partial(np.take, indices=np.flatnonzero(np.asarray(keep))
                                 if np.asarray(keep).dtype == bool else np.asarray(keep), axis=0)
        return dataclasses.replace(
            self, batch=jax.tree.map(take, self.batch), truth=take(self.truth),
            train_score=take(self.train_score), start=take(self.start),
            iteration=take(self.iteration), seed=take(self.seed), root=take(self.root),
            loop_scores=take(self.loop_scores))

    def save(self, path: str) -> None:
        """Write the set as one compressed `.npz` (atomically: a temporary file, then a
        rename)."""
        arrays = {f"batch_{k}": np.asarray(getattr(self.batch, k)) for k in FIELDS}
        arrays |= {k: np.asarray(getattr(self, k)) for k in
                   ("truth", "train_score", "start", "iteration", "seed", "root", "loop_scores")}
        arrays |= {"reference_games": np.int64(self.reference_games),
                   "reference_skill": np.float64(self.reference_skill),
                   "loop_seconds_per_window": np.float64(self.loop_seconds_per_window)}
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".npz", delete=False) as f:
            np.savez_compressed(f, **arrays)
        os.replace(f.name, path)

    @classmethod
    def load(cls, path: str) -> WindowSet:
        """Read a set `save` wrote.

        Raises:
          UserError: no such file, or not a window set.
        """
        if not os.path.isfile(path):
            raise UserError(f"--windows: no window set at {path!r}",
                            "give a .npz that judge_quality.py --windows-seed wrote")
        try:
            with np.load(path, allow_pickle=False) as data:
                batch = TrajectoryBatch(**{k: data[f"batch_{k}"] for k in FIELDS})
                return cls(batch=batch, reference_games=int(data["reference_games"]),
                           truth=data["truth"], train_score=data["train_score"],
                           reference_skill=float(data["reference_skill"]),
                           start=data["start"], iteration=data["iteration"],
                           seed=data["seed"], root=data["root"],
                           loop_scores=data["loop_scores"],
                           loop_seconds_per_window=float(data["loop_seconds_per_window"]))
        except (KeyError, ValueError, OSError) as error:
            raise UserError(f"--windows: {path!r} is not a window set ({error})",
                            "give a .npz that judge_quality.py --windows-seed wrote") from None

    @classmethod
    def concatenate(cls, sets: Sequence[WindowSet]) -> WindowSet:
        """One set of the groups of `sets` in order (their reference skill and games must
        agree; the loop's seconds per window are averaged over their groups)."""
        first = sets[0]
        if any(s.reference_games != first.reference_games
               or s.reference_skill != first.reference_skill for s in sets):
            raise ValueError("window sets of other reference players cannot be joined")
        cat = functools.partial(np.concatenate, axis=0)
        return dataclasses.replace(
            first, batch=jax.tree.map(lambda *xs: cat(xs), *[s.batch for s in sets]),
            **{k: cat([getattr(s, k) for s in sets]) for k in
               ("truth", "train_score", "start", "iteration", "seed", "root", "loop_scores")},
            loop_seconds_per_window=float(np.average(
                [s.loop_seconds_per_window for s in sets],
                weights=[s.num_groups for s in sets])))


def reference_skill(seed: int = 7, games: int = REFERENCE_SKILL_GAMES) -> float:
    """The reference player's mean game score: `games` games of the depth-1 expert taking a
    random legal move with probability `REFERENCE_EPSILON` (as `experiments/expert_play.py
    --depth 1 --epsilon 0.5` plays them), played to the end."""
    play = jax.jit(functools.partial(play_out, GAME_2048, expert_act(1, REFERENCE_EPSILON),
                                     games, 50_000))
    return float(np.mean(jax.device_get(play(jax.random.key(seed)).score)))


def recorded_groups(recorder: RecordingRanker, results, cfg: SailorConfig, skill: float,
                    start: str, seconds_per_window: float) -> WindowSet:
    """The training iterations' groups a `RecordingRanker` kept in one run, with their truth
    (`results`: the run's `SailorResults`; its warm-up calls come first and are left out)."""
    calls = recorder.calls[cfg.warmup_updates:]
    if len(calls) != len(results.iterations):
        raise RuntimeError(f"recorded {len(calls)} judge calls for "
                           f"{len(results.iterations)} iterations")
    groups, scores, truth, train, iteration, seed = [], [], [], [], [], []
    for record, (batches, rankings) in zip(results.iterations, calls, strict=True):
        for s, (group, ranking) in enumerate(zip(batches, rankings, strict=True)):
            score = record.train_score[s]
            if score is None or not np.isfinite(score):
                continue
            m = int(np.shape(group.lengths)[0])
            groups.append(group)
            scores.append(np.full(m, np.nan, np.float32) if ranking is None or
                          ranking.scores is None else np.asarray(ranking.scores, np.float32))
            truth.append(int(np.sign(score - skill)))
            train.append(float(score))
            iteration.append(record.iteration)
            seed.append(s)
    g = len(groups)
    return WindowSet(
        batch=jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *groups),
        reference_games=cfg.reference_games, truth=np.asarray(truth, np.int8),
        train_score=np.asarray(train), reference_skill=skill,
        start=np.asarray([start] * g), iteration=np.asarray(iteration, np.int32),
        seed=np.asarray(seed, np.int32), root=np.full(g, cfg.seed, np.int32),
        loop_scores=np.stack(scores), loop_seconds_per_window=seconds_per_window)


def collect(seed: int, out_dir: str, num_seeds: int = 4, iterations: int = 32,
            starts: Sequence[str] = STARTS_RECORDED, progress=None) -> WindowSet:
    """Run SAILOR from each of `starts` (`collection_config`, root `seed`) into
    `out_dir/<start>/` and return their training iterations' windows as one set. Slow: about
    as long as `starts` runs of the `cpu` preset without their twins.

    A start whose run finished in `out_dir` before is not run again: its windows come from
    `out_dir/<start>.npz`, written when its run ended. A start's run killed on the way starts
    over (the judge calls before the kill were not recorded). The joined set is written to
    `out_dir/windows.npz`.
    """
    from sailor_jax.judges.factory import make_ranker
    from sailor_jax.run import loop

    skill = functools.cache(reference_skill)  # played only if a start must run
    sets = []
    for start in starts:
        path = os.path.join(out_dir, f"{start}.npz")
        if os.path.isfile(path):
            sets.append(WindowSet.load(path))
            continue
        cfg = collection_config(seed, start, num_seeds, iterations)
        folder = os.path.join(out_dir, start)
        shutil.rmtree(folder, ignore_errors=True)  # a killed run's calls were not recorded
        recorder = RecordingRanker(make_ranker(cfg.ranker, os.path.join(folder, "llm.jsonl")))
        results = loop.run(cfg, folder, ranker=recorder, progress=progress,
                           label=f"windows {start}")
        judged = sum(int(np.shape(g.lengths)[0]) for batches, _ in recorder.calls
                     for g in batches)
        rank_s = results.timings.get("rank", float("nan"))
        windows = recorded_groups(recorder, results, cfg, skill(), start,
                                  rank_s / max(judged, 1))
        windows.save(path)
        sets.append(windows)
    windows = WindowSet.concatenate(sets)
    windows.save(os.path.join(out_dir, "windows.npz"))
    return windows
