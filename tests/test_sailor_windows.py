"""SAILOR's stored windows: the set's truth, storage and recording; the windows setting of
the judge benchmark and the view's ceiling on hand-made sets."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from sailor_jax.errors import UserError
from sailor_jax.judges import OutcomeRanker
from sailor_jax.types import TrajectoryBatch
from sailor_lab import judge_eval, sailor_windows, view_ceiling
from sailor_lab.sailor_windows import RecordingRanker, WindowSet

M, REF, L = 4, 2, 6


def _group(rng: np.random.Generator, agent_points: float, reference_points: float):
    """A host group of M windows of L moves: the agent's (first M - REF) score
    `agent_points`, the reference player's `reference_points` (plus a little noise)."""
    points = np.array([agent_points] * (M - REF) + [reference_points] * REF, np.float32)
    points = points + rng.uniform(0, 1, M).astype(np.float32)
    boards = rng.integers(0, 8, (M, L + 1, 16)).astype(np.int8)
    return TrajectoryBatch(boards=boards, actions=np.zeros((M, L), np.int8),
                           score_gains=np.zeros((M, L), np.float32),
                           lengths=np.full(M, L, np.int32), truncated=np.ones(M, bool),
                           score=points, max_tile=np.full(M, 8, np.int32),
                           Phi=rng.normal(size=(M, 8)).astype(np.float32))


def _set(truth, agent_points, reference_points, seed=0) -> WindowSet:
    """A set of one group per entry of `truth`, with the given points per group."""
    rng = np.random.default_rng(seed)
    groups = [_group(rng, a, r) for a, r in zip(agent_points, reference_points, strict=True)]
    g = len(groups)
    stack = lambda *xs: np.stack(xs)  # noqa: E731
    import jax
    return WindowSet(batch=jax.tree.map(stack, *groups), reference_games=REF,
                     truth=np.asarray(truth, np.int8), train_score=np.zeros(g),
                     reference_skill=100.0, start=np.array(["theta0"] * g),
                     iteration=np.arange(g, dtype=np.int32), seed=np.zeros(g, np.int32),
                     root=np.ones(g, np.int32), loop_scores=np.zeros((g, M), np.float32),
                     loop_seconds_per_window=0.25)


def test_pair_truth_marks_only_agent_against_reference_pairs():
    windows = _set([1, -1, 0], [10, 10, 10], [0, 0, 0])
    up, down, none = windows.pair_truth()
    expected = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [-1, -1, 0, 0], [-1, -1, 0, 0]])
    assert np.array_equal(up, expected) and np.array_equal(down, -expected)
    assert not none.any()
    assert np.array_equal(windows.cross_pairs(), np.abs(expected))


def test_outcome_judge_is_right_exactly_where_points_follow_the_truth():
    # Group 0: the agent is better and scores more (4 pairs right); group 1: the agent is
    # better but scores less (4 wrong); group 2: the reference is better and scores more.
    windows = _set([1, 1, -1], [10, 0, 0], [0, 10, 10])
    rankings = OutcomeRanker().rank_groups(windows.groups())
    right, total = judge_eval.pair_counts(rankings, windows.pair_truth())
    assert right.tolist() == [4, 0, 4] and total.tolist() == [4, 4, 4]
    scores = np.stack([g.score for g in windows.groups()])
    assert view_ceiling.score_accuracy(windows, scores)["accuracy"] == pytest.approx(8 / 12)
    tied = view_ceiling.score_accuracy(windows, np.zeros((3, M)))  # ties count 1/2
    assert tied["accuracy"] == 0.5


def test_set_survives_save_load_select_and_concatenate(tmp_path):
    windows = _set([1, -1, 1], [10, 0, 5], [0, 10, 1])
    path = str(tmp_path / "w.npz")
    windows.save(path)
    back = WindowSet.load(path)
    assert np.array_equal(back.batch.boards, windows.batch.boards)
    assert back.batch.boards.dtype == np.int8 and back.reference_games == REF
    assert back.start.tolist() == ["theta0"] * 3 and back.loop_seconds_per_window == 0.25
    picked = back.select(np.array([2, 0]))
    assert picked.truth.tolist() == [1, 1] and picked.iteration.tolist() == [2, 0]
    both = WindowSet.concatenate([picked, back])
    assert both.num_groups == 5 and both.batch.score.shape == (5, M)
    with pytest.raises(UserError, match="no window set"):
        WindowSet.load(str(tmp_path / "none.npz"))
    (tmp_path / "bad.npz").write_bytes(b"not a set")
    with pytest.raises(UserError, match="not a window set"):
        WindowSet.load(str(tmp_path / "bad.npz"))


def test_recorded_groups_keep_training_iterations_with_their_truth():
    windows = _set([1, 1, 1, 1], [10, 0, 5, 5], [0, 10, 1, 1])
    recorder = RecordingRanker(OutcomeRanker())
    groups = windows.groups()
    recorder.rank_groups(groups[:1])  # the warm-up's call: left out
    recorder.rank_groups(groups[1:3])  # iteration 0, seeds 0 and 1
    recorder.rank_groups(groups[3:])  # iteration 1, seed 0
    cfg = types.SimpleNamespace(warmup_updates=1, reference_games=REF, seed=5)
    iterations = [types.SimpleNamespace(iteration=0, train_score=[150.0, 50.0]),
                  types.SimpleNamespace(iteration=1, train_score=[None])]
    out = sailor_windows.recorded_groups(recorder, types.SimpleNamespace(
        iterations=iterations), cfg, 100.0, "pays_for_dying", 0.5)
    assert out.truth.tolist() == [1, -1] and out.iteration.tolist() == [0, 0]
    assert out.seed.tolist() == [0, 1] and out.root.tolist() == [5, 5]
    assert np.array_equal(out.batch.score, windows.batch.score[1:3])
    assert np.allclose(out.loop_scores, windows.batch.score[1:3])  # the outcome's scores
    with pytest.raises(RuntimeError, match="judge calls"):
        sailor_windows.recorded_groups(recorder, types.SimpleNamespace(
            iterations=iterations[:1]), cfg, 100.0, "theta0", 0.5)


def test_collection_config_is_the_cpu_sizes_from_each_start():
    cfg = sailor_windows.collection_config(3, "pays_for_dying")
    assert cfg.seed == 3 and not cfg.baseline and cfg.trajectories == 16
    assert cfg.reference_games == 8 and cfg.window == 100 and cfg.ranker.kind == "llm"
    assert cfg.ppo.num_envs * cfg.ppo.num_steps * cfg.ppo.updates_per_segment * 32 == 1_048_576
    assert sailor_windows.collection_config(3, "theta0").start is None
    with pytest.raises(UserError, match="unknown start"):
        sailor_windows.collection_config(3, "ones")


def test_windows_setting_scores_a_stored_set_end_to_end(bench, tmp_path, capsys):
    windows = _set([1, 1, -1, -1], [10, 0, 0, 10], [0, 10, 10, 0])
    path = str(tmp_path / "w.npz")
    windows.save(path)
    record = bench.main(bench.Args(setting="windows", windows=path, judge="outcome", json=True))
    (line,) = map(json.loads, capsys.readouterr().out.splitlines())
    assert line["accuracy"] == pytest.approx(0.5) and line["pairs"] == 16
    assert line["windows_judged"] == 16 and line["seconds_per_window"] > 0
    assert line["evidence_per_second"] == pytest.approx(0.0)
    assert record["by_start"]["theta0"]["groups"] == 4
    two = bench.run_windows(bench.Args(setting="windows", windows=path, judge="outcome",
                                       window_groups=2))
    assert two["groups"] == 2  # each hand-made group is a call of its own
    with pytest.raises(UserError, match="--window-groups"):
        bench.run_windows(bench.Args(setting="windows", windows=path, judge="outcome",
                                     window_groups=9))


def test_a_view_that_holds_the_skill_reaches_it_and_noise_does_not():
    rng = np.random.default_rng(1)
    truth = rng.choice([-1, 1], 40)
    agent = np.where(truth > 0, 20.0, 0.0)  # the points carry the truth ...
    windows = _set(truth, agent, 10.0 - agent / 2, seed=2)
    held = _set(truth, agent, 10.0 - agent / 2, seed=3)
    rows = {(r["view"], r["model"]): r for r in view_ceiling.ceilings(windows, held,
                                                                      ("summary", "features"))}
    assert rows[("summary", "pairwise_linear")]["accuracy"] == 1.0
    assert rows[("summary", "window_boosting")]["accuracy"] == 1.0
    assert abs(rows[("features", "pairwise_linear")]["accuracy"] - 0.5) < 0.15  # noise only
    columns = view_ceiling.single_columns(windows, held, "summary")
    assert {r["column"]: r["accuracy"] for r in columns}["points"] == 1.0
    assert view_ceiling.summary_view(windows.groups()[0]).shape == (M, 7)
