"""The view's ceiling: how well the best function of what a judge is shown orders SAILOR's
windows by skill.

Host-only, NumPy and scikit-learn. A judge sees a window through a view: today's LLM judge
sees its one-sentence summary (`judges.text.summary_text`), so no judge of that view can
order windows better than the best function of the summary's numbers. Fitting functions of a
view on the development windows (`sailor_lab.sailor_windows`) and scoring them on the
confirmation windows splits what a judge loses from what its view hides: a judge far below its
view's ceiling loses in reading; a ceiling near 0.5 means the view hides the skill.

Views (`VIEWS`), each `float64[M, K]` per group of `M` windows:
- summary: the numbers the summary states (moves, points, points per move, log2 of the
  largest tile, whether it sits in a corner, empty cells at the end, whether the game ended);
- features: the window's per-move means of the 8 reward features (`Phi / length`) and its
  length: what `R_theta` reads;
- board: the first and the last board of the window, each as its tile sum, largest tile (log2),
  empty cells, and the four corner cells (log2);
- summary+board: both.

Functions (`MODELS`): `pairwise_linear`, a linear score fitted by logistic regression on the
differences of standardised views over the development (agent, reference) pairs (RankNet with
a linear scorer; Burges et al. 2005); `window_boosting`, gradient-boosted trees classifying
each window as the better player's or not, whose probability is the score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.judges.text import CORNERS
from sailor_jax.types import TrajectoryBatch
from sailor_lab import judge_eval
from sailor_lab.sailor_windows import WindowSet


def _final_boards(batch: TrajectoryBatch) -> np.ndarray:
    """`int64[M, 16]` each window's last board (`boards[i, lengths[i]]`)."""
    lengths = np.asarray(batch.lengths)
    return np.take_along_axis(np.asarray(batch.boards, np.int64), lengths[:, None, None],
                              axis=1)[:, 0]


def summary_view(batch: TrajectoryBatch) -> np.ndarray:
    """`float64[M, 7]` the numbers `summary_text` states of each window of a host group."""
    lengths = np.asarray(batch.lengths)
    final = _final_boards(batch)
    top = final.max(axis=1)
    corner = (final[:, list(CORNERS)] == top[:, None]).any(axis=1) & (top > 0)
    points = np.asarray(batch.score, np.float64)
    return np.stack([lengths, points, points / np.maximum(lengths, 1), top, corner,
                     (final == 0).sum(axis=1), ~np.asarray(batch.truncated)],
                    axis=1).astype(np.float64)


def feature_view(batch: TrajectoryBatch) -> np.ndarray:
    """`float64[M, 9]` per-move means of the reward features (`Phi / length`) and length."""
    lengths = np.maximum(np.asarray(batch.lengths, np.float64), 1)
    return np.concatenate([np.asarray(batch.Phi, np.float64) / lengths[:, None],
                           lengths[:, None]], axis=1)


def _board_stats(board: np.ndarray) -> np.ndarray:
    """`[M, 7]` tile sum, largest tile (log2), empty cells and the corner cells (log2)."""
    tiles = np.where(board > 0, 2.0 ** board, 0.0)
    return np.concatenate([tiles.sum(axis=1, keepdims=True), board.max(axis=1, keepdims=True),
                           (board == 0).sum(axis=1, keepdims=True), board[:, list(CORNERS)]],
                          axis=1).astype(np.float64)


def board_view(batch: TrajectoryBatch) -> np.ndarray:
    """`float64[M, 14]` `_board_stats` of the window's first and last board."""
    first = np.asarray(batch.boards, np.int64)[:, 0]
    return np.concatenate([_board_stats(first), _board_stats(_final_boards(batch))], axis=1)


VIEWS: dict[str, Callable[[TrajectoryBatch], np.ndarray]] = {
    "summary": summary_view,
    "features": feature_view,
    "board": board_view,
    "summary+board": lambda b: np.concatenate([summary_view(b), board_view(b)], axis=1),
}
"""View name -> `view(group) -> float64[M, K]`."""
VIEW_COLUMNS = {"summary": ("moves", "points", "points_per_move", "largest_tile_log2",
                            "largest_in_corner", "empty_at_end", "game_over"),
                "features": (*FEATURE_NAMES, "moves")}
"""Column names of the views whose columns are read one by one (`single_columns`)."""


def view_arrays(windows: WindowSet, view: str) -> np.ndarray:
    """`float64[G, M, K]` the view of every group of `windows`."""
    return np.stack([VIEWS[view](g) for g in windows.groups()])


def _cross_pairs(windows: WindowSet, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Differences `x_i - x_j` over every (agent i, reference j) pair with a truth, and the
    label (1: the agent's window is the better player's)."""
    m = x.shape[1]
    agent = np.arange(m) < m - windows.reference_games
    diffs, labels = [], []
    for g, t in enumerate(windows.truth):
        if t == 0:
            continue
        d = x[g][agent][:, None, :] - x[g][~agent][None, :, :]
        diffs.append(d.reshape(-1, x.shape[2]))
        labels.append(np.full(d.shape[0] * d.shape[1], int(t > 0)))
    return np.concatenate(diffs), np.concatenate(labels)


def _window_labels(windows: WindowSet) -> np.ndarray:
    """`int[G, M]`: 1 where the window is the better player's (agent or reference), else 0
    (groups without a truth: -1)."""
    m = int(np.shape(windows.batch.lengths)[1])
    agent = np.arange(m) < m - windows.reference_games
    better = np.where(windows.truth[:, None] > 0, agent[None, :], ~agent[None, :])
    return np.where(windows.truth[:, None] == 0, -1, better.astype(int))


def fit_pairwise_linear(windows: WindowSet, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """RankNet with a linear scorer: `score(x [.., K]) -> [..]` fitted on `windows`' pairs."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.reshape(-1, x.shape[2]).mean(0), x.reshape(-1, x.shape[2]).std(0) + 1e-9
    diffs, labels = _cross_pairs(windows, (x - mean) / scale)
    diffs, labels = np.concatenate([diffs, -diffs]), np.concatenate([labels, 1 - labels])
    w = LogisticRegression(fit_intercept=False, C=1.0, max_iter=2000).fit(diffs, labels).coef_[0]
    return lambda z: ((z - mean) / scale) @ w


def fit_window_boosting(windows: WindowSet, x: np.ndarray,
                        seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """Gradient-boosted trees: `score(x [.., K]) -> [..]`, the probability that a window is
    the better player's, fitted on `windows`' windows."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    labels = _window_labels(windows)
    keep = labels >= 0
    model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15,
                                           random_state=seed).fit(x[keep], labels[keep])
    return lambda z: model.predict_proba(z.reshape(-1, z.shape[-1]))[:, 1].reshape(z.shape[:-1])


MODELS = {"pairwise_linear": fit_pairwise_linear, "window_boosting": fit_window_boosting}
"""Model name -> `fit(windows, view [G, M, K]) -> score function`."""


def score_accuracy(windows: WindowSet, scores: np.ndarray) -> dict:
    """`accuracy` and `accuracy_ci` of ordering each group's (agent, reference) pairs by
    `scores` (`float[G, M]`, higher = better) against the set's truth; a tie counts 1/2
    (bootstrap over groups, `judge_eval.ratio_interval`)."""
    s = np.asarray(scores, np.float64)
    agent = np.arange(s.shape[1]) < s.shape[1] - windows.reference_games
    keep = windows.truth != 0
    d = s[keep][:, agent][:, :, None] - s[keep][:, ~agent][:, None, :]
    credit = (np.sign(d) * windows.truth[keep, None, None] + 1) / 2  # 1 right, 1/2 tie
    right, total = credit.sum(axis=(1, 2)), np.full(int(keep.sum()), d[0].size)
    return {"accuracy": float(right.sum() / total.sum()) if total.sum() else float("nan"),
            "accuracy_ci": list(judge_eval.ratio_interval(right, total))}


def ceilings(development: WindowSet, confirmation: WindowSet,
             views: Sequence[str] = tuple(VIEWS)) -> list[dict]:
    """Per view and model: fitted on `development`, the accuracy on `development` (in
    sample) and on `confirmation` (held out), with its interval."""
    rows = []
    for view in views:
        x_dev, x_conf = view_arrays(development, view), view_arrays(confirmation, view)
        for name, fit in MODELS.items():
            score = fit(development, x_dev)
            rows.append({"view": view, "model": name,
                         "development": score_accuracy(development, score(x_dev))["accuracy"],
                         **score_accuracy(confirmation, score(x_conf))})
    return rows


def single_columns(development: WindowSet, confirmation: WindowSet, view: str) -> list[dict]:
    """Each column of `view` alone as the score, its sign chosen on `development`: the
    development and confirmation accuracy."""
    x_dev, x_conf = view_arrays(development, view), view_arrays(confirmation, view)
    rows = []
    for k, column in enumerate(VIEW_COLUMNS[view]):
        sign = 1.0 if score_accuracy(development, x_dev[..., k])["accuracy"] >= 0.5 else -1.0
        rows.append({"view": view, "column": column, "sign": sign,
                     "development": score_accuracy(development, sign * x_dev[..., k])["accuracy"],
                     **score_accuracy(confirmation, sign * x_conf[..., k])})
    return rows
