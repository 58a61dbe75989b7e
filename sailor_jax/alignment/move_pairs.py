"""Preference pairs from judged moves: the moves of one board, ordered by a judge (issue 49).

Host-only NumPy. The items compared are the rows of a `judges.moves.MoveGroups`' features,
`phi.reshape(B * 4, F)` (row `4 b + a`: move `a` from board `b`); the judge gives action values
`float[B, 4]` (higher is better, `-inf` or NaN = not judged). Only moves of the same board are
compared: a pair is two legal moves of one board whose values differ, the higher one
preferred. Discordant and concordant pairs are then selected as for windows
(`preferences.select_pairs`); the held-out part is a set of whole boards.
"""

from __future__ import annotations

import numpy as np

from sailor_jax.alignment.preferences import _theta_sign, select_pairs
from sailor_jax.config import PreferenceConfig
from sailor_jax.types import Preferences

__all__ = ["judged_pairs", "move_preferences", "pair_tau", "rows"]


def rows(phi: np.ndarray) -> np.ndarray:
    """`float64[B * 4, F]`: the moves' features as comparable items (row `4 b + a`)."""
    phi = np.asarray(phi, np.float64)
    return phi.reshape(-1, phi.shape[-1])


def judged_pairs(values: np.ndarray, legal: np.ndarray, boards: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of legal moves of one board that the judge orders, as rows `4 b + a`.

    Args:
      values: `float[B, 4]` the judge's action values (higher is better; non-finite = not
        judged).
      legal: `bool[B, 4]` legal moves.
      boards: `int[K]` the boards to take pairs from (None: all).

    Returns:
      `(win, lose)` `int64[P]`, the preferred move first, ordered by board, then by the
      (first, second) action of the pair.

    Raises:
      ValueError: `values` and `legal` not both `[B, 4]`.
    """
    values, legal = np.asarray(values, np.float64), np.asarray(legal, bool)
    if values.ndim != 2 or values.shape != legal.shape or values.shape[1] != 4:
        raise ValueError(f"values and legal must both be [B, 4], got {values.shape}, "
                         f"{legal.shape}")
    judged = legal & np.isfinite(values)
    b = np.arange(len(values)) if boards is None else np.sort(np.asarray(boards, np.int64))
    a1, a2 = np.triu_indices(4, k=1)
    bb, x, y = np.repeat(b, len(a1)), np.tile(a1, len(b)), np.tile(a2, len(b))
    ok = judged[bb, x] & judged[bb, y] & (values[bb, x] != values[bb, y])
    bb, x, y = bb[ok], x[ok], y[ok]
    x_wins = values[bb, x] > values[bb, y]
    win, lose = np.where(x_wins, x, y), np.where(x_wins, y, x)
    return 4 * bb + win, 4 * bb + lose


def move_preferences(r_theta: np.ndarray, win: np.ndarray, lose: np.ndarray,
                     rng: np.random.Generator | int, cfg: PreferenceConfig) -> Preferences:
    """Discordant pairs and as many sampled concordant ones, from judged move pairs.

    Args:
      r_theta: `float[B * 4]` `R_theta` of each move (`rows(phi) @ theta`).
      win, lose: the judged pairs (`judged_pairs`).
      rng: samples the concordant pairs.
      cfg: selection (`concordant_ratio`, `tie_tol`); every pair weighs 1.

    Returns:
      `Preferences` over the rows, discordant first.

    Raises:
      ValueError: `cfg.weighting` other than "none" (a move's value carries no confidence).
    """
    if cfg.weighting != "none":
        raise ValueError(f"judged moves weigh every pair 1; weighting {cfg.weighting!r} "
                         f"is for windows")
    keep, num_discordant = select_pairs(np.asarray(r_theta, np.float64), win, lose, rng, cfg)
    return Preferences(i=win[keep].astype(np.int32), j=lose[keep].astype(np.int32),
                       w=np.ones(len(keep), np.float32),
                       discordant=np.arange(len(keep)) < num_discordant)


def pair_tau(r_theta: np.ndarray, win: np.ndarray, lose: np.ndarray,
             tie_tol: float = 1e-6) -> float:
    """`2 agreement - 1` of `R_theta` with the judge over judged pairs (ties count 1/2): the
    moves' counterpart of a group's Kendall tau. NaN without pairs."""
    if len(win) == 0:
        return float("nan")
    sign = _theta_sign(np.asarray(r_theta, np.float64), win, lose, tie_tol)
    return float(np.mean(sign))
