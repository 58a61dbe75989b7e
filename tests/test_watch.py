"""`experiments/watch.py`: a trained agent's greedy games as an animated SVG.

One tiny run of the real `experiments/train_ppo.py` (in-process, module-scoped) is watched;
the SVG is read back with `xml.etree` and checked against the NumPy reference game
(`tests/reference/numpy_2048.py`): one frame per move plus the start, each frame's board the
board played, its caption `move K  score X` with X the sum of the reference's merge points,
and every move the argmax of the network's legal logits (the greedy policy).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.numpy_2048 import legal_mask, move
from support import TINY_TRAIN_PPO, load_script

from sailor_jax import errors
from sailor_jax.agents import ppo
from sailor_jax.agents.networks import make_network
from sailor_jax.agents.policy import actor_logits
from sailor_jax.config import PPOConfig, SailorConfig
from sailor_jax.run import run_dir, trained
from sailor_jax.run.checkpoint import Checkpointer
from sailor_lab import render

SVG = "{http://www.w3.org/2000/svg}"
TRAIN_ARGV = ["--train.total-timesteps", "200", "--train.num-seeds", "2", *TINY_TRAIN_PPO,
              "--train.eval.episodes", "4", "--train.eval.max-len", "300"]
"""The run of `test_experiments.test_train_ppo_cli_runs_and_resumes` (today's default network,
afterstates, at width 16; 2 seeds x 2 segments of 128 env steps): in the full suite, whichever
of the two runs second finds its programs in the persistent compilation cache (conftest)."""


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> str:
    """A finished train_ppo.py run (`TRAIN_ARGV`)."""
    out = str(tmp_path_factory.mktemp("watch") / "ppo")
    train_ppo = load_script("experiments/train_ppo.py")
    train_ppo.main(train_ppo.parse(["--out", out, *TRAIN_ARGV, "--train.no-tensorboard",
                                   "--train.no-evaluate-random"]))
    return out


@pytest.fixture(scope="module")
def watch():
    return load_script("experiments/watch.py")


def _frames(svg_text: str) -> tuple[list[np.ndarray], list[str]]:
    """The boards (`int[16]` exponents, from each frame's `<use href="#tK" x y>`) and the
    text lines of the frames of a `render.animated_svg` document."""
    root = ET.fromstring(svg_text)
    assert root.tag == f"{SVG}svg"
    boards, texts = [], []
    for i, frame in enumerate(root.iter(f"{SVG}g")):
        if frame.get("class") != "frame":
            continue
        assert frame.get("id") == f"f{len(boards):x}", i
        board = np.zeros(16, np.int64)
        for use in frame.iter(f"{SVG}use"):
            col = (int(use.get("x")) - render.MARGIN) // render.CELL
            row = (int(use.get("y")) - render.MARGIN) // render.CELL
            board[4 * row + col] = int(use.get("href").removeprefix("#t"))
        boards.append(board)
        texts.append("".join(frame.find(f"{SVG}text").itertext()))
    return boards, texts


def test_watch_draws_every_move_of_the_best_greedy_game(run_folder, watch, tmp_path,
                                                        monkeypatch, capsys):
    played = []

    def spy(agent, games, max_moves, seed):
        batch = trained.play_greedy(agent, games, max_moves, seed)
        played.append((agent, batch))
        return batch

    monkeypatch.setattr(watch, "play_greedy", spy)
    out = str(tmp_path / "new" / "game.svg")
    result = watch.main([run_folder, "--out", out, "--games", "3", "--max-moves", "60",
                         "--agent-seed", "1", "--frame-seconds", "0.05"])
    (agent, batch), = played
    assert agent.row == 1 and agent.rows == 2 and agent.checkpoint_step == 2
    best = int(np.argmax(batch.score))
    assert result["best"]["game"] == best and result["frames"] == batch.lengths[best] + 1
    printed = capsys.readouterr().out
    for g in range(3):  # every game's score, max tile and length
        assert (f"game {g}: score {int(batch.score[g])}, max tile {int(batch.max_tile[g])}, "
                f"{int(batch.lengths[g])} moves") in printed
    boards, texts = _frames(open(out, encoding="utf-8").read())
    length = int(batch.lengths[best])
    assert len(boards) == len(texts) == length + 1  # the start board and one per move
    np.testing.assert_array_equal(np.stack(boards), batch.boards[best, :length + 1])
    actions = np.asarray(batch.actions[best, :length])
    score = 0
    for k, board in enumerate(boards):
        assert texts[k] == f"move {k}  score {score}"
        if k == length:
            break
        assert legal_mask(board)[actions[k]]
        after, points = move(board, int(actions[k]))  # the reference game, then one spawn
        spawned = np.flatnonzero(boards[k + 1] != after)
        assert len(spawned) == 1 and after[spawned[0]] == 0 and boards[k + 1][spawned[0]] in (1, 2)
        score += points
    assert score == batch.score[best]
    if not batch.truncated[best]:
        assert not legal_mask(boards[-1]).any()  # the game ended
    _, apply = make_network(agent.net)  # greedy: every move the argmax of the legal logits
    legal = np.stack([legal_mask(b) for b in boards[:length]])
    logits = actor_logits(apply, agent.params, jnp.asarray(np.stack(boards[:length])),
                          jnp.asarray(legal))
    # The replay is another compiled program than the play's, so a near-tie may round the
    # other way: each played move's logit is the largest legal one up to float rounding.
    logits = np.asarray(logits)
    np.testing.assert_allclose(logits[np.arange(length), actions], logits.max(-1),
                               rtol=1e-5, atol=1e-5)


def test_render_frames_captions_and_timing():
    boards = np.array([[1] + [0] * 15, [0, 1] + [0] * 13 + [2], [17] * 16])
    svg = render.animated_svg(boards, [0, 4, 123456.0], frame_seconds=0.5, hold_seconds=3,
                              title="a <game>")
    drawn, texts = _frames(svg)
    np.testing.assert_array_equal(np.stack(drawn), boards)
    assert texts == ["move 0  score 0", "move 1  score 4", "move 2  score 123456"]
    root = ET.fromstring(svg)
    assert root.find(f"{SVG}title").text == "a <game>"
    style = root.find(f"{SVG}defs/{SVG}style").text
    assert "animation:4.5s linear k infinite" in style  # 3 frames x 0.5 s + 3 s on the last
    assert re.findall(r"#f(\w+)\{animation-delay:([\d.]+)s\}", style) == [("1", "0.5"),
                                                                         ("2", "1")]
    assert "#f2{animation-name:kl}" in style
    one = render.animated_svg(boards[:1], [0])  # a single frame: shown, no animation
    assert "animation" not in ET.fromstring(one).find(f"{SVG}defs/{SVG}style").text


@pytest.mark.parametrize(("boards", "scores", "kwargs", "match"), [
    (np.zeros((0, 16), int), [], {}, "N >= 1"),
    (np.zeros((2, 15), int), [0, 0], {}, r"\[N, 16\]"),
    (np.full((1, 16), 18), [0], {}, "exponents 0..17"),
    (np.zeros((2, 16)), [0, 0], {}, "integer"),
    (np.zeros((2, 16), int), [0], {}, "one per board"),
    (np.zeros((1, 16), int), [0], {"frame_seconds": 0}, "frame_seconds"),
    (np.zeros((1, 16), int), [0], {"hold_seconds": float("nan")}, "hold_seconds"),
])
def test_render_rejects_bad_input(boards, scores, kwargs, match):
    with pytest.raises(ValueError, match=match):
        render.animated_svg(boards, scores, **kwargs)


def _copy(run_folder: str, target, *names: str) -> str:
    os.makedirs(target)
    for name in names:
        source = os.path.join(run_folder, name)
        (shutil.copytree if os.path.isdir(source) else shutil.copy)(
            source, os.path.join(target, name))
    return str(target)


CASES = {
    "no folder": (["nothere"], r"^error: nothere: no such folder \(pass the --out folder"),
    "no run": (["empty"], r"^error: empty holds no run \(no config.json\)"),
    "another run": (["dqn"], r"dqn/config.json is not the config of an "
                             r"experiments/train_ppo.py or experiments/sailor.py run"),
    "unfinished": (["unfinished"], re.escape(
        "unfinished holds a run that has not finished (no results.json; checkpoint of "
        "segment 2) (--resume finishes it: python experiments/train_ppo.py with the flags "
        "that started it, then --out unfinished --resume; then run this command again)")),
    "no checkpoint": (["nockpt"], r"nockpt holds no checkpoint"),
    "bad --games": (["run", "--games", "0"], r"^error: .*games.* must be positive"),
    "bad --frame-seconds": (["run", "--frame-seconds", "-1"], "frame.seconds must be positive"),
    "--agent-seed": (["run", "--agent-seed", "2"],
                     re.escape("--agent-seed 2: run trained 2 seeds (pick one of 0..1)")),
    "--baseline": (["run", "--baseline"], "--baseline: run holds no baseline agents"),
    "out unwritable": (["run", "--out", "/proc/x/game.svg"], r"^error: --out /proc/x/game.svg:"
                                                             r" cannot create /proc/x \("),
    "out a folder": (["run", "--out", "empty"], r"--out empty is a folder"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_user_mistakes_are_one_line(case, run_folder, watch, tmp_path, monkeypatch, capsys):
    argv, match = CASES[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    (tmp_path / "empty").mkdir()
    (tmp_path / "dqn").mkdir()
    (tmp_path / "dqn" / "config.json").write_text(json.dumps({"dqn": {}, "seed": 0}))
    _copy(run_folder, tmp_path / "unfinished", "config.json", "checkpoints")
    _copy(run_folder, tmp_path / "nockpt", "config.json", "results.json")
    _copy(run_folder, tmp_path / "run", "config.json", "results.json")
    os.makedirs(tmp_path / "run" / "checkpoints" / "2")  # never read: the error comes first
    if "--out" not in argv:
        argv = [*argv, "--out", "game.svg"]
    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(watch.main, argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert re.search(match, err), err
    assert not (tmp_path / "game.svg").exists()


def test_sailor_run_rows_agents_then_baselines(tmp_path):
    """A SAILOR run's checkpoint holds S agent rows, then S baseline rows (`loop.run`):
    `load_agent` picks the right one (params made distinct per row, no training)."""
    cfg = SailorConfig(num_seeds=2, ppo=PPOConfig(num_envs=2, num_steps=2, num_minibatches=1))
    folder = str(tmp_path / "sailor")
    run_dir.prepare_out_dir(folder, cfg, resume=False)
    with pytest.raises(errors.MissingFileError, match="python experiments/sailor.py"):
        trained.read_run(folder)  # not finished yet
    init, _ = ppo.make_train(cfg.run_ppo, num_seeds=4)
    state = jax.tree.map(lambda x: np.zeros(x.shape, x.dtype),
                         jax.eval_shape(init, jax.random.PRNGKey(0)))
    state = state.replace(params=jax.tree.map(
        lambda x: np.broadcast_to(np.arange(4, dtype=x.dtype).reshape(-1, *[1] * (x.ndim - 1)),
                                  x.shape).copy(), state.params))
    with Checkpointer(os.path.join(folder, "checkpoints")) as ckpt:
        ckpt.save(3, state, {"segment": 3})
    open(os.path.join(folder, "results.json"), "w").write("{}")
    for seed, baseline, row in ((0, False, 0), (1, False, 1), (0, True, 2), (1, True, 3)):
        agent = trained.load_agent(folder, seed, baseline)
        assert agent.script == "experiments/sailor.py" and agent.row == row
        assert agent.rows == 4 and agent.checkpoint_step == 3
        assert all(np.all(np.asarray(x) == row) for x in jax.tree.leaves(agent.params))


def test_a_run_saved_with_retired_options_off_is_read_and_one_that_used_one_is_refused(
        tmp_path):
    """`trained.read_run` drops the retired options' fields at their off values
    (`run_dir.RETIRED`) and refuses, naming the field, a run that used one."""
    cfg = SailorConfig(num_seeds=2)
    folder = str(tmp_path / "sailor")
    run_dir.prepare_out_dir(folder, cfg, resume=False)
    open(os.path.join(folder, "results.json"), "w").write("{}")
    path = os.path.join(folder, "config.json")
    saved = json.load(open(path))
    json.dump(saved | {"judged": "windows", "move_boards": 256, "end_windows": 0.0},
              open(path, "w"))
    assert trained.read_run(folder) == ("experiments/sailor.py", cfg)
    json.dump(saved | {"end_windows": 0.25}, open(path, "w"))
    with pytest.raises(errors.UserError, match="end_windows=0.25, an option that was retired"):
        trained.read_run(folder)
