"""A trained agent read back from a finished run folder, and its greedy games. Host-only.

`load_agent` reads the folder of a finished `experiments/train_ppo.py` run (a `TrainConfig`
in `config.json`) or `experiments/sailor.py` run (a `SailorConfig`; also one variant folder
of `experiments/compare.py`), rebuilds its config, and restores the newest checkpoint the
way a resumed run does: against the sharded `jax.eval_shape` of a fresh `ppo.make_train`
init of all the run's rows (`SeedLayout.abstract_checkpoint`, `Checkpointer.restore`). The
rows are the vmapped seeds; a SAILOR run with `baseline=True` holds `num_seeds` more rows
after them, the agents trained on the start kept fixed. `play_greedy` plays that agent's greedy
games move by move (`rollout.make_collect(greedy=True)`: the action evaluation plays).
Nothing in the run folder is written.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from typing import Any

import jax
import numpy as np

from sailor_jax.agents import ppo
from sailor_jax.agents.rollout import make_collect
from sailor_jax.config import NetworkConfig, SailorConfig, TrainConfig
from sailor_jax.errors import MissingFileError, UserError
from sailor_jax.run import run_dir
from sailor_jax.run.checkpoint import Checkpointer, restore_failure
from sailor_jax.scale import sharding
from sailor_jax.types import TrajectoryBatch

RUN_KINDS: dict[str, tuple[type, str]] = {
    "experiments/train_ppo.py": (TrainConfig, "total_timesteps"),
    "experiments/sailor.py": (SailorConfig, "iterations"),
}
"""The scripts whose run folders `load_agent` reads: their config class, and a config key
only that class has (how a `config.json` says which script wrote it)."""


@dataclasses.dataclass(frozen=True)
class TrainedAgent:
    """One row of a finished run: its network and parameters."""

    folder: str
    script: str
    """The script that wrote the run (a key of `RUN_KINDS`)."""
    row: int
    """Which vmapped row of the run these parameters are."""
    rows: int
    net: NetworkConfig
    params: Any
    """The row's network parameters (no seed axis)."""
    checkpoint_step: int


def config_from_json(cls: type, saved: dict, where: str = "") -> Any:
    """Rebuild the config dataclass `cls` from its `config.json` dict (`run_dir.config_json`).

    Nested dataclass fields are rebuilt recursively, JSON lists become tuples; a field the
    saved dict lacks takes its default (a run saved before the field existed ran so).

    Raises:
      UserError: a key `cls` has no field for, or a value its dataclass refuses (the line
        names the dotted field, `where` being the prefix).
    """
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(saved) - names)
    if unknown:
        raise UserError(f"config.json has fields this code does not know: "
                        f"{', '.join(where + k for k in unknown)}",
                        "was the run written by another version of sailor-jax?")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in saved.items():
        kind = hints[name]
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            kwargs[name] = config_from_json(kind, value, f"{where}{name}.")
        else:
            kwargs[name] = _tuples(value)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as error:
        raise UserError(f"config.json: {where or cls.__name__ + ': '}{error}",
                        "was the run written by another version of sailor-jax?") from None


def _tuples(value: Any) -> Any:
    """JSON lists (nested too) as tuples, as the frozen configs hold them."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def read_run(folder: str) -> tuple[str, Any]:
    """`(script, config)` of the finished run in `folder` (`RUN_KINDS`).

    Raises:
      MissingFileError: `folder` is no folder, holds no `config.json`, or its run has not
        finished (no `results.json`: the line says how `--resume` finishes it).
      UserError: `config.json` is unreadable, or written by neither script, or not a config
        this code can rebuild (`config_from_json`), or the run used a retired option
        (`run_dir.current_config`).
    """
    fix = "pass the --out folder of a finished experiments/train_ppo.py or sailor.py run"
    if not os.path.isdir(folder):
        raise MissingFileError(f"{folder}: no such folder", fix)
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise MissingFileError(f"{folder} holds no run (no config.json)", fix)
    saved = run_dir.read_config(path)
    scripts = [s for s, (_, key) in RUN_KINDS.items() if key in saved]
    if len(scripts) != 1:
        raise UserError(f"{path} is not the config of an experiments/train_ppo.py or "
                        "experiments/sailor.py run (a theta search, DQN or other run?)", fix)
    script = scripts[0]
    if not run_dir.finished(folder):
        raise run_dir.unfinished_error(folder, "run this command again", script)
    return script, config_from_json(RUN_KINDS[script][0], run_dir.current_config(saved))


def run_rows(config: Any) -> int:
    """The vmapped rows a run's checkpoints hold (`[R, ...]`): seeds, and with a SAILOR
    run's `baseline` as many fixed-reward rows after them."""
    return config.rows if isinstance(config, SailorConfig) else config.num_seeds


def load_agent(folder: str, agent_seed: int = 0, baseline: bool = False) -> TrainedAgent:
    """Restore seed `agent_seed`'s trained agent from the finished run in `folder`.

    Args:
      folder: the `--out` folder of `experiments/train_ppo.py` or `experiments/sailor.py`.
      agent_seed: which vmapped seed, `0 .. num_seeds - 1`.
      baseline: a SAILOR run's baseline agent of that seed (trained on the start kept fixed)
        instead of the self-aligned one.

    Returns:
      The `TrainedAgent`; its `params` live on the default device.

    Raises:
      MissingFileError, UserError: as `read_run`; `agent_seed` out of range; `baseline` for
        a run without baseline rows; no checkpoint, or the newest does not restore (the
        line gives the reason).
    """
    script, config = read_run(folder)
    seeds = config.num_seeds
    if not 0 <= agent_seed < seeds:
        raise UserError(f"--agent-seed {agent_seed}: {folder} trained {seeds} seed"
                        f"{'s' * (seeds != 1)}",
                        f"pick one of 0..{seeds - 1}" if seeds > 1 else "its only seed is 0")
    if baseline and not (isinstance(config, SailorConfig) and config.baseline):
        raise UserError(f"--baseline: {folder} holds no baseline agents",
                        "only experiments/sailor.py runs with baseline=True train them")
    rows = run_rows(config)
    row = agent_seed + (seeds if baseline else 0)
    state, step = _restore(folder, config, rows)
    params = jax.tree.map(lambda x: x[row], state.params)
    return TrainedAgent(folder, script, row, rows, config.ppo.network, params, step)


def _restore(folder: str, config: Any, rows: int) -> tuple[Any, int]:
    """The newest checkpoint's runner state `[rows, ...]` and its step, restored against a
    fresh init's abstract state (`SeedLayout.abstract_checkpoint`, as `runner.resume_run`)."""
    steps = run_dir.saved_steps(folder)
    directory = os.path.join(folder, "checkpoints")
    if not steps:
        raise MissingFileError(f"{folder} holds no checkpoint (nothing in {directory})",
                               "its checkpoints were removed; train it again")
    init, _ = ppo.make_train(config.run_ppo, num_seeds=rows)
    abstract = sharding.SeedLayout(rows, 1).abstract_checkpoint(
        jax.eval_shape(init, jax.random.PRNGKey(config.seed)))
    try:
        with Checkpointer(directory) as checkpointer:
            state, _ = checkpointer.restore(abstract, steps[-1])
    except Exception as error:  # orbax raises many types for a damaged or foreign step
        raise UserError(f"checkpoint {steps[-1]} in {directory} does not restore "
                        f"({restore_failure(error)})",
                        "was it written by another version of sailor-jax?") from None
    return state, steps[-1]


def play_greedy(agent: TrainedAgent, games: int, max_moves: int, seed: int = 0
                ) -> TrajectoryBatch:
    """Play `games` greedy games of `agent` in parallel, recording every board. Compiles.

    The games of `evaluation.make_evaluate(net, games, max_moves)(params, PRNGKey(seed))`:
    same key use, same greedy action.

    Returns:
      `TrajectoryBatch` as NumPy (`rollout.make_collect`): boards `int8[G, M + 1, 16]` tile
      exponents (game g's are `[: lengths[g] + 1]`, the start board first), actions
      `int8[G, M]` (-1 after the end), score gains `float32[G, M]` (native score, 0 after
      the end), lengths `int32[G]`, truncated `bool[G]` (still running after `max_moves`),
      score `float32[G]`, max tile `int32[G]`, with `G = games`, `M = max_moves`.

    Raises:
      ValueError: `games` or `max_moves` not positive.
    """
    collect = make_collect(agent.net, games, max_moves, greedy=True)
    return jax.device_get(collect(agent.params, jax.random.PRNGKey(seed)))


def game_frames(batch: TrajectoryBatch, game: int) -> tuple[np.ndarray, np.ndarray]:
    """Game `game` of a `play_greedy` batch as frames: boards `int32[L + 1, 16]` (the start
    board, then the board after each of its `L` moves) and the native score after each,
    `float64[L + 1]` (0 first)."""
    length = int(batch.lengths[game])
    boards = np.asarray(batch.boards[game, :length + 1], np.int32)
    gains = np.asarray(batch.score_gains[game, :length], np.float64)
    return boards, np.concatenate([[0.0], np.cumsum(gains)])
