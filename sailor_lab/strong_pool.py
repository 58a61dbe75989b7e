"""The strong-play pool: games of players close in skill near the top, for judge benchmarks.

Host side (the games are played by compiled JAX code). SAILOR needs its judge where its agents
are: among games of agents that already play well. The graded pool (`judge_eval`) spans random
play to the expert; this pool holds PPO agents trained to different budgets or on different
rewards (and optionally epsilon-greedy experts), each of which plays well:

- a player's **skill** is its mean final score over `skill_games` games of its own, played
  apart from the pool's games (a separate key), so the truth is the player's expected score,
  not the score of the game being judged; players are ranked by it;
- the pool holds `games_per_player` games of each player (at most `max_len` moves, sampled
  from the stochastic policy as SAILOR samples), judged as **whole games** and as SAILOR's
  **windows** (`cut_windows`, `window` consecutive moves of each game);
- `groups` groups of `m` items are drawn from each view (seeded) and a judge's rankings are
  scored by `judge_eval.judge_metrics` with the players' skill ranks as the truth, plus the
  accuracy per pair of players (`pair_table`).

Players are named as `policy_groups.parse_policy` reads them: `ppo_<steps>` (the default PPO
recipe with the (64, 64) trunk, 256 envs, trained on theta0 for about `<steps>` env steps, e.g.
`ppo_1m`), `ppo_<steps>:<start>` (trained on a named start of `sailor_lab.starts.STARTS`, e.g.
`ppo_1m:ones`), `eps<e>` / `eps<e>@<depth>` (the expectimax expert at depth 2 / `<depth>` taking
a random legal move with probability e).

The played pool is cached (`cache_dir`, a `.npz` per setting) and regenerated deterministically
from `seed` when absent (seed for seed on one CPU type). Seed 1 is the development pool, seed 2
the confirmation pool.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Literal

import jax
import numpy as np
import scipy.stats

from sailor_jax.agents.rollout import cut_windows
from sailor_jax.errors import UserError
from sailor_jax.types import Ranking, TrajectoryBatch
from sailor_lab import judge_eval
from sailor_lab.policy_groups import parse_policy, policy_collect

DEFAULT_PLAYERS = ("ppo_1m:ones", "ppo_1m", "ppo_500k", "ppo_250k")
"""Four PPO agents of the `cpu` preset's budget and below: two rewards at ~1M env steps (the
decision SAILOR faces), and theta0 at a half and a quarter of it."""
VIEWS = ("games", "windows")
"""How the pool's games are judged: whole, or as one window each."""
CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "sailor_jax", "strong_pool")


@dataclasses.dataclass(frozen=True, kw_only=True)
class StrongPoolArgs:
    """The strong-play pool and its group draw (`sailor_lab.strong_pool`)."""

    players: tuple[str, ...] = DEFAULT_PLAYERS
    """Players (`ppo_<steps>[:<start>]`, `eps<e>[@<depth>]`); at least two."""
    games_per_player: int = 16
    """Pool games per player."""
    skill_games: int = 64
    """Games per player that measure its skill (mean final score), apart from the pool's."""
    max_len: int = 2000
    """Moves per game at most (SailorConfig.max_len's default)."""
    window: int = 100
    """Moves per window of the windows view (SailorConfig.window's default)."""
    m: int = 8
    """Items per group."""
    groups: int = 32
    """Groups drawn per view."""
    seed: int = 1
    """Seed of the agents' training, the games and the group draw (1 = development, 2 =
    confirmation)."""
    cache_dir: str | None = CACHE_DIR
    """Folder of played pools (`.npz` per setting); None = always play."""

    def __post_init__(self) -> None:
        if len(self.players) < 2 or len(set(self.players)) != len(self.players):
            raise UserError(f"--players: need at least two distinct players, got "
                            f"{list(self.players)}")
        for name in ("games_per_player", "skill_games", "max_len", "window", "groups"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be >= 1, "
                                f"got {getattr(self, name)}")
        size = self.games_per_player * len(self.players)
        if not 2 <= self.m <= size:
            raise UserError(f"--m must be in [2, pool size {size}], got {self.m}")
        for p in self.players:
            parse_policy(p)

    def record(self) -> dict:
        """The settings as a benchmark record's fields."""
        out = dataclasses.asdict(self)
        out.pop("cache_dir")
        return out | {"players": list(self.players), "pool": "strong"}


@dataclasses.dataclass(frozen=True)
class StrongPool:
    """Played strong-play pool (host arrays).

    `games` holds `P = players x games_per_player` whole games, `windows` one window of each;
    `player[P]` the index of each item's player in `players`; `skill[len(players)]` each
    player's mean final score over its skill games and `skill_sem` its standard error.
    """

    games: TrajectoryBatch
    windows: TrajectoryBatch
    players: tuple[str, ...]
    player: np.ndarray
    skill: np.ndarray
    skill_sem: np.ndarray

    @property
    def skill_rank(self) -> np.ndarray:
        """`int64[P]`: each item's player's rank by skill (0 = the best)."""
        order = np.argsort(-self.skill, kind="stable")
        rank = np.empty(len(self.skill), np.int64)
        rank[order] = np.arange(len(self.skill))
        return rank[self.player]

    def view(self, name: Literal["games", "windows"]) -> TrajectoryBatch:
        """The whole games or the windows (host `TrajectoryBatch` of `P` items)."""
        return self.games if name == "games" else self.windows


def _cache_path(args: StrongPoolArgs) -> str | None:
    if args.cache_dir is None:
        return None
    keys = ("players", "games_per_player", "skill_games", "max_len", "window", "seed")
    text = json.dumps({k: getattr(args, k) for k in keys}, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return os.path.join(os.path.expanduser(args.cache_dir), f"pool_{digest}.npz")


def _save(path: str, pool: StrongPool) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    arrays = {f"games.{k}": np.asarray(v) for k, v in dataclasses.asdict(pool.games).items()}
    arrays |= {f"windows.{k}": np.asarray(v) for k, v in dataclasses.asdict(pool.windows).items()}
    tmp = path + ".tmp.npz"
    np.savez_compressed(tmp, player=pool.player, skill=pool.skill, skill_sem=pool.skill_sem,
                        players=np.asarray(pool.players), **arrays)
    os.replace(tmp, path)


def _load(path: str) -> StrongPool:
    with np.load(path) as z:
        games = TrajectoryBatch(**{f.name: z[f"games.{f.name}"]
                                   for f in dataclasses.fields(TrajectoryBatch)})
        windows = TrajectoryBatch(**{f.name: z[f"windows.{f.name}"]
                                     for f in dataclasses.fields(TrajectoryBatch)})
        return StrongPool(games=games, windows=windows, players=tuple(z["players"].tolist()),
                          player=z["player"], skill=z["skill"], skill_sem=z["skill_sem"])


def build_strong_pool(args: StrongPoolArgs) -> StrongPool:
    """Play (or read from the cache) the pool of `args`. Host-only; deterministic in `seed`.

    Player k plays `skill_games + games_per_player` games in one call with key
    `fold_in(key(seed), k)`: the first `skill_games` measure its skill, the rest join the pool.
    Windows are cut from the pool's games with `fold_in(key(seed), len(players))`.
    """
    path = _cache_path(args)
    if path is not None and os.path.exists(path):
        return _load(path)
    root = jax.random.key(args.seed)
    parts, skill, sem = [], [], []
    for k, name in enumerate(args.players):
        collect = policy_collect(name, args.skill_games + args.games_per_player, args.max_len,
                                 seed=args.seed)
        batch = jax.device_get(collect(jax.random.fold_in(root, k)))
        scores = np.asarray(batch.score[: args.skill_games], np.float64)
        skill.append(scores.mean())
        sem.append(scipy.stats.sem(scores) if len(scores) > 1 else np.nan)
        parts.append(jax.tree.map(lambda x: np.asarray(x)[args.skill_games:], batch))
    games = jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
    windows = cut_windows(games, jax.random.fold_in(root, len(args.players)), args.window)
    pool = StrongPool(games=games, windows=jax.tree.map(np.asarray, jax.device_get(windows)),
                      players=tuple(args.players),
                      player=np.repeat(np.arange(len(args.players)), args.games_per_player),
                      skill=np.asarray(skill), skill_sem=np.asarray(sem))
    if path is not None:
        _save(path, pool)
    return pool


def draw_groups(pool: StrongPool, args: StrongPoolArgs, view: str
                ) -> tuple[list[TrajectoryBatch], list[np.ndarray], list[np.ndarray]]:
    """`(groups, index, truth_rank)` of one view: `args.groups` groups of `args.m` items
    (`judge_eval.sample_groups`, seeded by `seed` and the view, each group's items in a
    seeded random order, so the storage order, best player first, gives a judge that breaks
    ties by position nothing), their pool indices, and per
    group the items' skill ranks (0 = the best player; `judge_eval.skill_truth`'s input)."""
    seed = args.seed * 1000 + VIEWS.index(view)
    index = judge_eval.sample_groups(len(pool.player), args.m, args.groups, seed)
    batch = pool.view(view)
    groups = [jax.tree.map(lambda x, idx=idx: np.asarray(x)[idx], batch) for idx in index]
    rank = pool.skill_rank
    return groups, index, [rank[i].astype(np.float64) for i in index]


def pair_table(rankings: Sequence[Ranking | None], index: Sequence[np.ndarray],
               pool: StrongPool) -> list[dict]:
    """Accuracy per pair of players of different skill: over the groups' pairs of items
    with one item of each, the fraction ordered by skill (rows best pair first)."""
    k = len(pool.players)
    right, total = np.zeros((k, k)), np.zeros((k, k))
    rank = pool.skill_rank
    for ranking, idx in zip(rankings, index, strict=True):
        pos = None if ranking is None else ranking.rank
        for i in range(len(idx)):
            for j in range(len(idx)):
                if rank[idx[i]] < rank[idx[j]]:  # i's player is the better
                    a, b = pool.player[idx[i]], pool.player[idx[j]]
                    total[a, b] += 1
                    right[a, b] += pos is not None and pos[i] < pos[j]
    rows = []
    for a in range(k):
        for b in range(k):
            if total[a, b]:
                rows.append({"better": pool.players[a], "worse": pool.players[b],
                             "pairs": int(total[a, b]), "accuracy": right[a, b] / total[a, b]})
    return rows
