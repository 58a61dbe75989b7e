"""Watch a trained agent play: its greedy games as an animated SVG, one frame per move.

    python experiments/watch.py runs/ppo --out game.svg
    python experiments/watch.py runs/ppo --out best.svg --games 16 --seed 3 --frame-seconds 0.05

RUN_FOLDER is the --out folder of a finished `experiments/train_ppo.py` or
`experiments/sailor.py` run (or one variant folder of `experiments/compare.py`); its newest
checkpoint is restored (`sailor_jax.run.trained.load_agent`). `--games` games are played in
parallel with the greedy policy the final evaluation plays (the argmax of the legal logits;
with the default afterstate network, of the afterstates' scores), from `--seed`. Each game's
score, largest tile and length are printed; the best game (highest score; the first of
equal ones) is drawn, the start board and then the board after every move, each frame
captioned `move K  score X` with the native game score (`sailor_lab.render`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Annotated

import numpy as np
import tyro

from sailor_jax.cli import make_console, parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.run.out_probe import check_writable
from sailor_jax.run.trained import game_frames, load_agent, play_greedy
from sailor_lab.render import animated_svg


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Render greedy games of a trained agent (a finished experiments/train_ppo.py or
    experiments/sailor.py run) as an animated SVG, one frame per move."""

    run_folder: Annotated[tyro.conf.Positional[str], tyro.conf.arg(metavar="RUN_FOLDER")]
    """The --out folder of a finished experiments/train_ppo.py or experiments/sailor.py run
    (or a variant folder of experiments/compare.py)."""
    out: str
    """The SVG file to write (missing folders are created)."""
    games: int = 1
    """Greedy games played in parallel; the best (highest score) is drawn."""
    seed: int = 0
    """PRNG seed of the games (the tile spawns)."""
    max_moves: int = 20_000
    """Move cap per game (a game still running then is drawn up to there, marked truncated)."""
    frame_seconds: float = 0.1
    """Seconds each frame (move) shows; the last one shows 2 s longer."""
    agent_seed: int = 0
    """Which of the run's vmapped seeds plays (0 .. num_seeds - 1)."""
    baseline: bool = False
    """experiments/sailor.py runs: watch the seed's baseline agent (trained on the start
    kept fixed) instead of the self-aligned one."""

    def __post_init__(self) -> None:
        if self.games <= 0 or self.max_moves <= 0:
            raise ValueError(f"games and max_moves must be positive, got {self.games}, "
                             f"{self.max_moves}")
        if not (math.isfinite(self.frame_seconds) and self.frame_seconds > 0):
            raise ValueError(f"frame_seconds must be positive, got {self.frame_seconds}")
        if self.agent_seed < 0:
            raise ValueError(f"agent_seed must be >= 0, got {self.agent_seed}")


def parse(argv: list[str]) -> Args:
    """The flags (tyro); a mistake is one `error:` line, exit 2 (`cli.parse_args`)."""
    return parse_args(Args, argv)


def check_out(path: str) -> None:
    """Raise `UserError` unless a file can be written at `path`: it is no folder, and its
    folder can be created and written (`out_probe.check_writable`: a probe written and
    removed, with any missing parents).

    Raises:
      UserError: `path` is a folder, a part of it is a file, or nothing can be written.
    """
    if os.path.isdir(path):
        raise UserError(f"--out {path} is a folder", "name the .svg file to write")
    check_writable(os.path.dirname(os.path.abspath(path)), shown=path)


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename (never half a file).

    Raises:
      UserError: the folder cannot be created or the file written.
    """
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as error:
        raise UserError(f"--out {path}: cannot write ({error.strerror or error})",
                        "choose a file in a folder you can write to") from None


def game_rows(batch) -> list[dict]:
    """One dict per game of a `play_greedy` batch: `game`, `score`, `max_tile`, `moves`,
    `truncated` (plain Python values)."""
    return [{"game": g, "score": int(round(float(batch.score[g]))),
             "max_tile": int(batch.max_tile[g]), "moves": int(batch.lengths[g]),
             "truncated": bool(batch.truncated[g])} for g in range(len(batch.score))]


def main(argv: list[str]) -> dict:
    """Restore the agent, play, print every game, write the best one's SVG.

    Returns:
      `{"games": game_rows, "best": the drawn game's row, "out", "bytes", "frames",
      "agent_row", "checkpoint_step", "restore_s", "play_s"}`.
    """
    args = parse(argv)
    console = make_console()
    check_out(args.out)
    t0 = time.perf_counter()
    agent = load_agent(args.run_folder, args.agent_seed, args.baseline)
    restore_s, t0 = time.perf_counter() - t0, time.perf_counter()
    batch = play_greedy(agent, args.games, args.max_moves, args.seed)
    play_s = time.perf_counter() - t0
    rows = game_rows(batch)
    for row in rows:
        console.print(f"game {row['game']}: score {row['score']}, max tile {row['max_tile']}, "
                      f"{row['moves']} moves" + (" (truncated at --max-moves)"
                                                 if row["truncated"] else ""), markup=False)
    best = rows[int(np.argmax(batch.score))]
    boards, scores = game_frames(batch, best["game"])
    who = "baseline agent" if args.baseline else "agent"
    title = (f"2048, greedy {who} of {args.run_folder} (seed {args.agent_seed}): score "
             f"{best['score']}, max tile {best['max_tile']}, {best['moves']} moves")
    write_text(args.out, animated_svg(boards, scores, args.frame_seconds, title=title))
    size = os.path.getsize(args.out)
    console.print(f"drew game {best['game']} (best of {args.games}): {len(boards)} frames, "
                  f"{len(boards) * args.frame_seconds + 2:.0f} s -> {args.out} "
                  f"({size / 1024:.0f} KiB); restore {restore_s:.1f} s, play {play_s:.1f} s "
                  "(compile included)", markup=False)
    return {"games": rows, "best": best, "out": args.out, "bytes": size,
            "frames": len(boards), "agent_row": agent.row,
            "checkpoint_step": agent.checkpoint_step, "restore_s": restore_s,
            "play_s": play_s}


if __name__ == "__main__":
    report_user_errors(main)
