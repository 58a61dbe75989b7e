"""The reward the expert's move preferences point to: a linear reward fitted to judged moves.

Plays `--games` games of `--moves` moves with the epsilon-greedy expert (depth 1, `--epsilon`
random moves), takes every board it moved from, and judges all legal moves of each board by the
expert's action values (`judges.moves`, `ExpertRanker.move_values`, depth `--depth`). Every pair
of moves of one board whose values differ is a preference; a Bradley-Terry logistic regression
over the moves' features (`sailor_lab.offline_fit`) fits theta to all of them at once. Prints
how often each named start and the fit order the pairs as the expert does, and the fitted
theta scaled to a largest weight of 1, as a written-out start (`NAME:feature=w,...`) that
the repair experiment's starts option takes: trained kept fixed, it says whether the expert's
move preferences describe a good reward at all (issue 49).

    python benchmarks/move_ceiling.py
"""

from __future__ import annotations

import dataclasses
import sys

import jax
import numpy as np

from sailor_jax.alignment import move_pairs
from sailor_jax.cli import parse_args
from sailor_jax.config.starts import STARTS
from sailor_jax.errors import report_user_errors
from sailor_jax.game import env
from sailor_jax.game.expert import expert_act
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.judges import ExpertRanker
from sailor_jax.judges.moves import move_groups
from sailor_jax.types import Preferences
from sailor_lab.offline_fit import agreement, fit_bradley_terry


@dataclasses.dataclass(frozen=True)
class Args:
    """Fit a linear reward to the expert's preferences between the moves of one board."""

    games: int = 64
    """Games played by the epsilon-greedy expert."""
    moves: int = 300
    """Moves per game (a game that ends restarts, as in training)."""
    epsilon: float = 0.5
    """Random-move probability of the player (depth-1 expert otherwise)."""
    depth: int = 2
    """Depth of the expert that judges the moves."""
    seed: int = 0
    name: str = "move_fit"
    """Name of the printed start."""


def played_boards(games: int, moves: int, epsilon: float, seed: int) -> np.ndarray:
    """`int32[games * moves, 16]`: the boards the epsilon-greedy expert moved from."""
    act = expert_act(depth=1, epsilon=epsilon)

    def game(key: jax.Array) -> jax.Array:
        def step(state, k):
            k_act, k_step = jax.random.split(k)
            board = env.board_exponents(state)
            action = act(k_act, board[None], env.legal_action_mask(state)[None])[0][0]
            return env.step(state, action, k_step)[0], board
        return jax.lax.scan(step, env.reset(key), jax.random.split(key, moves))[1]

    keys = jax.random.split(jax.random.key(seed), games)
    return np.asarray(jax.jit(jax.vmap(game))(keys)).reshape(-1, 16)


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse_args(Args, sys.argv[1:] if argv is None else argv,
                      description=__doc__.splitlines()[0])
    groups = move_groups(played_boards(args.games, args.moves, args.epsilon, args.seed),
                         args.seed)
    values = ExpertRanker(depth=args.depth).move_values(groups)
    win, lose = move_pairs.judged_pairs(values, groups.legal)
    phi = move_pairs.rows(groups.phi)
    prefs = Preferences(i=win.astype(np.int32), j=lose.astype(np.int32),
                        w=np.ones(len(win), np.float32), discordant=np.zeros(len(win), bool))
    fit = fit_bradley_terry(phi, prefs)
    theta = fit.theta / np.abs(fit.theta).max()
    print(f"{len(groups):,} boards, {len(win):,} judged pairs of moves; "
          f"converged {fit.converged}")
    for name, start in STARTS.items():
        print(f"  {name:18s} orders {agreement(np.asarray(start.theta), phi, prefs):.3f} "
              f"of the pairs as the expert")
    print(f"  {'fit':18s} orders {agreement(theta, phi, prefs):.3f}")
    print(f"{args.name}:" + ",".join(f"{n}={w:.3f}" for n, w in zip(FEATURE_NAMES, theta,
                                                                      strict=True)))
    return dict(zip(FEATURE_NAMES, theta.tolist(), strict=True))


if __name__ == "__main__":
    report_user_errors(main)
