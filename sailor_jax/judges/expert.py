"""The expert judge: ranks trajectories by how expert-like their moves were.

Host side of `sailor_jax.game.expert` (the expectimax player, device code). Per move of a
trajectory, the expert scores every legal action of the board that move was played on; the
move's verdict is

- `regret` (default): `1 - (Q_best - Q_played) / (Q_best - Q_worst)` over the legal actions,
  in [0, 1]: 1 for the expert's move, 0 for the worst legal move. Normalised per board, so
  boards whose heuristic values are large (late, full boards) weigh no more than early ones,
  and a near-miss between two almost equal moves loses little, where agreement would count
  it a full miss.
- `agreement`: 1 if the played move is the expert's best move, else 0.

Boards with a single legal move (no choice) are skipped. A trajectory's score is the mean
verdict over its scored moves, so the spawns' luck and the game's length count for little:
a short game played well outranks a long game played badly.

- `value`, a verdict on the whole trajectory that tracks the game's goal: the
  score the play gained plus the change in the expert's value of the position it leaves,
  `sum(score_gains) + V(last board) - V(first board)`, with `V(b) = max_a Q_depth(b, a)` over
  the legal moves (`expert_action_values`: nneonneo's heuristic after `depth` moves), 0 on a
  board with no legal move. On a window of a game it values what was earned and what was
  built; a window that ends the game loses its first board's whole value (~1.6M heuristic
  points against a few thousand for play), so dying ranks below any surviving window. On a
  whole finished game it is the final score minus the start's value: the outcome judge.
  A sum, not a mean (`aggregate = "sum"`): the preference builder compares `R_theta` sums.

Ranking sorts by score; for `regret` and `agreement` the pairwise probability that
trajectory `i` played better than `j` is `Phi((s_i - s_j) / sqrt(se_i^2 + se_j^2))` (normal
CDF of the difference of the two means over its standard error), so it is confident only
when the difference is large against the per-move noise: the weighted-preference options
read it as the judge's confidence.

A judge of dialled quality: with `noise = sigma > 0`, a group's verdicts are
replaced by their normal scores (`Phi^-1((rank - 1/2) / M)`, ties sharing their mean rank: the
expert's order on a scale with spread ~1 whatever the verdict's units and outliers) plus
independent `N(0, sigma^2)` noise each, and the group is ranked by those (a Thurstone judge
over the expert's order). Sigma thus means the same for every verdict and group: 0 is the
expert, and as sigma grows the order tends to a uniformly random one. Its pairwise probability
is `Phi((z_i - z_j) / (sigma sqrt 2))`. The draws come from the judge's generator, which the loop
reseeds per iteration (`Ranker.reseed`), so a resumed run sees the same noise.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.config.judge import EXPERT_VERDICTS as VERDICTS
from sailor_jax.config.judge import verdict_aggregate
from sailor_jax.game.expert import expert_action_values
from sailor_jax.judges.base import Ranker
from sailor_jax.judges.oracles import order_by_scores
from sailor_jax.types import Ranking, TrajectoryBatch


@functools.lru_cache(maxsize=8)
def _values_fn(depth: int):
    return jax.jit(lambda boards: expert_action_values(boards, depth))


def call_in_chunks(fn, chunk: int, *arrays) -> tuple[np.ndarray, ...]:
    """`fn(*arrays)` over their leading axis of `B` rows, `chunk` rows a call. Host-only.

    The last chunk is padded with copies of its first row, so a compiled `fn` sees one shape
    (one compile); `fn` must treat rows independently (a batched or vmapped function), and
    the padding rows' outputs are dropped. Returns `fn`'s outputs (a tuple, one entry per
    output) as host arrays with the `B` real rows (empty when `B` is 0, `fn` not called).
    """
    b = int(np.shape(arrays[0])[0])
    shapes = jax.eval_shape(fn, *(jax.ShapeDtypeStruct((chunk, *np.shape(a)[1:]), a.dtype)
                                  for a in arrays))
    shapes = shapes if isinstance(shapes, tuple) else (shapes,)
    outs = tuple(np.empty((b, *s.shape[1:]), s.dtype) for s in shapes)
    for start in range(0, b, chunk):
        parts = [jnp.asarray(a[start:start + chunk]) for a in arrays]
        n = len(parts[0])
        got = fn(*(jnp.concatenate([p, jnp.repeat(p[:1], chunk - n, axis=0)]) for p in parts))
        for whole, part in zip(outs, got if isinstance(got, tuple) else (got,), strict=True):
            whole[start:start + n] = np.asarray(part)[:n]
    return outs


def expert_values(boards: np.ndarray, depth: int, chunk: int = 1024) -> np.ndarray:
    """Expert action values of many boards, in fixed-size chunks (one compile per depth).

    Host-only. Args: `boards [B, 16]` integer exponents. Returns `float32 [B, 4]` (`-inf` for
    illegal moves); see `expert.expert_action_values`.
    """
    boards = np.asarray(boards, np.int32).reshape(-1, 16)
    return call_in_chunks(_values_fn(int(depth)), chunk, boards)[0]


def move_verdicts(values: np.ndarray, actions: np.ndarray, verdict: str = "regret"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per-move verdicts from the expert's action values. Host-only.

    Args:
      values: `float32 [B, 4]` expert values of the boards moved on (`-inf` = illegal).
      actions: `int [B]` the moves played (legal ones).
      verdict: "regret" or "agreement" (see the module docstring).

    Returns:
      `(verdict float64 [B] in [0, 1], scored bool [B])`: `scored` is False where the board
      had fewer than two legal moves (no choice to judge).
    """
    values = np.asarray(values, np.float64)
    legal = np.isfinite(values)
    played = np.take_along_axis(values, np.asarray(actions, np.int64)[:, None], 1)[:, 0]
    best = np.max(np.where(legal, values, -np.inf), axis=1)
    scored = legal.sum(axis=1) >= 2
    if verdict == "agreement":
        return np.where(scored, (played >= best).astype(np.float64), np.nan), scored
    worst = np.min(np.where(legal, values, np.inf), axis=1)
    spread = best - worst
    with np.errstate(invalid="ignore", divide="ignore"):
        regret = np.where(spread > 0, (best - played) / spread, 0.0)
    return np.where(scored, 1.0 - regret, np.nan), scored


def board_values(boards: np.ndarray, depth: int, chunk: int = 1024) -> np.ndarray:
    """The expert's value of boards: `V(b) = max` over legal moves of `Q_depth(b, a)`. Host-only.

    Args:
      boards: `[B, 16]` integer exponents.
      depth: expectimax depth (>= 1; 1 = the heuristic of the best afterstate).

    Returns:
      `float64 [B]` in heuristic points; 0 for a board with no legal move (a lost game).
    """
    values = expert_values(boards, depth, chunk).astype(np.float64)
    legal = np.isfinite(values)
    return np.where(legal.any(axis=1), np.max(np.where(legal, values, -np.inf), axis=1), 0.0)


def value_verdicts(batch: TrajectoryBatch, depth: int, chunk: int = 1024) -> np.ndarray:
    """Per trajectory, `score gained + V(last board) - V(first board)` (the `value` verdict).

    Host-only. Args: a host `TrajectoryBatch` of `M` trajectories (whole games or windows).
    Returns `float64 [M]`, score points plus heuristic points (see the module docstring).
    """
    boards = np.asarray(batch.boards)
    lengths = np.asarray(batch.lengths, np.int64)
    m = np.arange(boards.shape[0])
    ends = np.concatenate([boards[:, 0], boards[m, lengths]])
    v = board_values(ends, depth, chunk)
    gained = np.asarray(batch.score_gains, np.float64).sum(axis=1)
    return gained + v[len(m):] - v[:len(m)]


class ExpertRanker(Ranker):
    """Rank trajectories by the expert's verdict, best first. Host-only.

    For `regret` / `agreement`, `Ranking.scores` holds the mean per-move verdicts (NaN for a
    trajectory with no scored move, which sorts last) and `Ranking.pairwise_prob` the
    probabilities of the module docstring; `aggregate` is "mean". For `value`, the scores are
    `value_verdicts` (no pairwise probabilities) and `aggregate` is "sum".

    Args:
      depth: expectimax depth of the expert (player moves searched, >= 1).
      verdict: "regret", "agreement" or "value".
      chunk: boards per compiled call.
      noise: sigma of the judge of dialled quality (module docstring; in units of the normal
        scores of the expert's order); 0 = the expert.
      seed: seed of the noise generator (the loop reseeds it per iteration).

    Raises:
      ValueError: unknown verdict, depth / chunk not positive ints, or noise not finite >= 0.
    """

    def __init__(self, depth: int = 2,
                 verdict: Literal["regret", "agreement", "value"] = "regret",
                 chunk: int = 1024, noise: float = 0.0, seed: int = 0) -> None:
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
        if isinstance(depth, bool) or int(depth) != depth or depth < 1 or chunk < 1:
            raise ValueError(f"depth and chunk must be positive ints, got {depth}, {chunk}")
        if not (np.isfinite(noise) and noise >= 0):
            raise ValueError(f"noise must be finite and >= 0, got {noise}")
        self.depth, self.verdict, self.chunk = int(depth), verdict, int(chunk)
        self.noise = float(noise)
        self._rng = np.random.default_rng(seed)
        self.name = (f"expert-d{self.depth}" + ("-value" if verdict == "value" else "")
                     + (f"-noise{self.noise:g}" if self.noise > 0 else ""))
        self.aggregate = verdict_aggregate(verdict)

    def trajectory_scores(self, groups: Sequence[TrajectoryBatch]
                          ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per group, `(mean verdict [M], standard error [M])`; one expert call for all
        groups' moves. Host-only."""
        played = [(np.asarray(b.boards)[:, :-1], np.asarray(b.actions)) for b in groups]
        moves = [actions >= 0 for _, actions in played]
        boards = np.concatenate([bd[m] for (bd, _), m in zip(played, moves, strict=True)])
        actions = np.concatenate([a[m] for (_, a), m in zip(played, moves, strict=True)])
        verdicts, _ = move_verdicts(expert_values(boards, self.depth, self.chunk), actions,
                                    self.verdict)  # NaN where the board offered no choice
        out, start = [], 0
        for move in moves:
            per_move = np.full(move.shape, np.nan)
            per_move[move] = verdicts[start:start + int(move.sum())]
            start += int(move.sum())
            out.append(_mean_and_stderr(per_move))
        return out

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        """Rank each group by mean verdict; never fails. Host-only."""
        if not groups:
            return []
        scored = ([(value_verdicts(b, self.depth, self.chunk), None) for b in groups]
                  if self.verdict == "value" else self.trajectory_scores(groups))
        out: list[Ranking | None] = []
        for verdicts, stderr in scored:  # the value verdict has no pairwise probabilities
            if self.noise > 0:
                out.append(self.noisy_ranking(verdicts))
            else:
                out.append(Ranking(order=order_by_scores(verdicts),
                                   scores=verdicts.astype(np.float32),
                                   pairwise_prob=None if stderr is None else
                                   pairwise_probabilities(verdicts, stderr)))
        return out

    def noisy_ranking(self, verdicts: np.ndarray) -> Ranking:
        """The dialled-quality judge's ranking of one group's verdicts `float64 [M]` (module
        docstring): normal scores plus `noise` x N(0, 1), one draw per trajectory from the
        judge's generator; a NaN verdict stays NaN (ranked last)."""
        import scipy.stats  # deferred: with scikit-optimize, a third of a script's start

        draws = self._rng.standard_normal(verdicts.shape)
        finite = np.isfinite(verdicts)
        scores = np.full(verdicts.shape, np.nan)
        if finite.any():
            ranks = scipy.stats.rankdata(verdicts[finite])  # 1..n, ties share their mean
            scores[finite] = scipy.stats.norm.ppf((ranks - 0.5) / finite.sum())
            scores[finite] += self.noise * draws[finite]
        stderr = np.full(verdicts.shape, self.noise)
        return Ranking(order=order_by_scores(scores), scores=scores.astype(np.float32),
                       pairwise_prob=pairwise_probabilities(scores, stderr))


def _mean_and_stderr(per_move: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`[M, T]` verdicts (NaN = not scored) -> mean `[M]` and its standard error `[M]`."""
    n = np.sum(~np.isnan(per_move), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(per_move, axis=1) / n
        sd = np.sqrt(np.nansum((per_move - mean[:, None]) ** 2, axis=1) / np.maximum(n - 1, 1))
    stderr = np.where(n >= 2, sd / np.sqrt(np.maximum(n, 1)), 0.5)  # 0.5: the widest verdict sd
    return np.where(n > 0, mean, np.nan), stderr


def pairwise_probabilities(mean: np.ndarray, stderr: np.ndarray) -> np.ndarray:
    """`float32 [M, M]`: `P[i, j] = Phi((mean_i - mean_j) / sqrt(se_i^2 + se_j^2))`, 0.5 on the
    diagonal and where either mean is NaN. Host-only."""
    import scipy.stats  # deferred: with scikit-optimize, a third of a script's start

    diff = mean[:, None] - mean[None, :]
    scale = np.sqrt(stderr[:, None] ** 2 + stderr[None, :] ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0),
                     np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    prob = scipy.stats.norm.cdf(z)
    prob = np.where(np.isnan(diff), 0.5, prob)
    np.fill_diagonal(prob, 0.5)
    return prob.astype(np.float32)
