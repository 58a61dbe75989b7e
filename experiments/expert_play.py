"""Play 2048 with the expert (`sailor_jax.game.expert`): strength and speed at a depth.

    python experiments/expert_play.py --games 100 --depth 2 --json
    python experiments/expert_play.py --games 100 --depth 2 --epsilon 0.1   # a weaker player

All games run in parallel in one compiled program (`evaluation.play_out`): each
move the expert scores the four moves of every running game by expectimax and plays the best
(or, with probability `--epsilon`, a uniformly random legal move). Prints a table and, with
`--json`, one JSON line: `score_mean`, `win_rate` (games reaching 2048), `max_tile_rates`
(256..8192), `length_mean`, `moves_per_s` (moves of all games per second of play, compile
excluded; batches shrink to the games still running), `boards_per_s` (expert evaluations per
second on a batch of 4,096 boards from expert games, as the judge uses it), `depth`,
`epsilon`, `games`, `seed`, `truncated`, `compile_s`, `play_s`, `cpu`, `device`, `jax`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.agents.evaluation import play_out, summarize
from sailor_jax.agents.rollout import make_act_collect
from sailor_jax.cli import make_console, parse_args
from sailor_jax.errors import report_user_errors
from sailor_jax.game.env import GAME_2048
from sailor_jax.game.expert import expert_act, expert_action_values
from sailor_lab.report import machine


@dataclasses.dataclass(frozen=True)
class Args:
    """Expert self-play."""

    games: int = 100
    """Games played in parallel."""
    depth: int = 2
    """Expectimax depth (player moves searched; 2 = 512 leaf boards per move)."""
    epsilon: float = 0.0
    """Probability of a uniformly random legal move instead of the expert's."""
    seed: int = 0
    """PRNG seed of the games."""
    max_moves: int = 20_000
    """Move cap per game (games still running count as truncated)."""
    json: bool = False
    """Print the result as one JSON line on stdout (the summary line goes to stderr)."""

    def __post_init__(self) -> None:
        if self.games <= 0 or self.max_moves <= 0:
            raise ValueError(f"games and max_moves must be positive, got {self.games}, "
                             f"{self.max_moves}")


def boards_per_second(depth: int, batch: int = 4096, seconds: float = 3.0) -> float:
    """Expert evaluations per second on `batch` boards of depth-1 expert games (mid-game
    boards, as a judge sees them), compile excluded: repeated calls for `seconds`."""
    games = jax.device_get(make_act_collect(expert_act(1), 8, 1000)(jax.random.key(1)))
    played = np.asarray(games.actions) >= 0
    boards = jnp.asarray(np.asarray(games.boards)[:, :-1][played][:batch].astype(np.int32))
    values = jax.jit(lambda b: expert_action_values(b, depth))
    values(boards).block_until_ready()
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        values(boards).block_until_ready()
        calls += 1
    return calls * boards.shape[0] / (time.perf_counter() - t0)


def play(args: Args) -> dict:
    """Play `args.games` expert games; return the JSON record (see the module docstring)."""
    evaluate = jax.jit(functools.partial(play_out, GAME_2048, expert_act(args.depth, args.epsilon),
                                         args.games, args.max_moves))
    key = jax.random.key(args.seed)
    t0 = time.perf_counter()
    compiled = evaluate.lower(key).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    stats = jax.device_get(compiled(key))
    play_s = time.perf_counter() - t0
    summary = summarize(stats)
    moves = int(np.sum(stats.length))
    return {"depth": args.depth, "epsilon": args.epsilon, "games": args.games,
            "seed": args.seed, "score_mean": summary["score_mean"],
            "win_rate": summary["win_rate"], "max_tile_rates": summary["max_tile_rates"],
            "length_mean": summary["length_mean"], "truncated": summary["truncated"],
            "moves_per_s": moves / play_s, "boards_per_s": boards_per_second(args.depth),
            "compile_s": compile_s, "play_s": play_s, **machine()}


def parse(argv: list[str]) -> Args:
    """The flags (tyro); a mistake is one `error:` line, exit 2 (`cli.parse_args`)."""
    return parse_args(Args, argv)


def main(args: Args) -> dict:
    """Run and print a summary line (to stderr with --json, then the JSON line). Host-only."""
    record = play(args)
    rates = ", ".join(f"{t}: {r:.2f}" for t, r in record["max_tile_rates"].items())
    console = make_console(stderr=args.json)  # --json: stdout holds the JSON line only
    console.print(f"expert depth {args.depth}, epsilon {args.epsilon}: {args.games} games, "
                  f"mean score {record['score_mean']:,.0f}, 2048 in {record['win_rate']:.0%}"
                  f" (tile rates {rates}); {record['moves_per_s']:,.0f} moves/s "
                  f"({record['play_s']:.1f} s play, {record['compile_s']:.1f} s compile)")
    if args.json:
        print(json.dumps(record), flush=True)
    return record


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse(argv)))
