"""The theta search: generations, resume after a kill, config checks, and the
retrain stage's paired difference, on the CLI's `tiny` preset (3 generations of 3 x 2 rows)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil

import numpy as np
import pytest
import scipy.stats
from support import load_script

from sailor_jax.errors import UserError
from sailor_jax.game.reward import RewardSpec
from sailor_jax.run import fixed_reward
from sailor_lab import theta_search
from sailor_lab.search_config import ThetaSearchConfig

CLI = load_script("experiments/theta_search.py")
TINY: ThetaSearchConfig = CLI.PRESETS["tiny"][1].search
KEYS = ("x", "thetas", "scores", "score_mean", "cma")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[str, list[dict]]:
    """The tiny preset's 3 generations, run once without interruption."""
    out = str(tmp_path_factory.mktemp("search") / "run")
    records, _ = theta_search.search(TINY, out)
    return out, records


def test_a_generation_writes_candidates_scores_and_cma_state(uninterrupted):
    out, records = uninterrupted
    assert [r["generation"] for r in records] == [0, 1, 2]
    first = theta_search.make_strategy(TINY).ask()  # a fresh strategy asks the same
    np.testing.assert_array_equal(np.asarray(records[0]["x"]), np.asarray(first))
    spec = RewardSpec()
    for g, r in enumerate(records):
        saved = theta_search.load_generation(out, g)
        assert {k: saved[k] for k in KEYS} == {k: r[k] for k in KEYS}
        thetas = np.asarray(r["thetas"])
        assert thetas.shape == (TINY.population, spec.num_features)
        assert np.all(thetas >= -1) and np.all(thetas <= 1)
        assert np.asarray(r["scores"]).shape == (TINY.population, TINY.seeds_per_candidate)
        assert r["score_mean"] == [float(np.mean(s)) for s in r["scores"]]
        assert all(s > 0 for s in r["score_mean"])  # native game score of finished games
        assert len(r["cma"]["mean"]) == 8 and r["cma"]["sigma"] > 0
        folder = theta_search.generation_dir(out, g)
        assert sorted(os.listdir(os.path.join(folder, "checkpoints"))) == ["1", "2"]
        rows = json.load(open(os.path.join(folder, "config.json")))["thetas"]
        assert np.allclose(rows, np.repeat(thetas, TINY.seeds_per_candidate, axis=0))
    assert records[1]["x"] != records[0]["x"]  # CMA moved on


def test_resume_after_a_kill_mid_generation_equals_the_uninterrupted_run(
        uninterrupted, tmp_path, monkeypatch):
    out = str(tmp_path / "run")
    calls = []
    original = fixed_reward.FixedReward.after_segment

    def killed_in_generation_1(self, segment, *args):
        calls.append(segment)
        if len(calls) == 4:  # generation 1's second (last) segment: after its first checkpoint
            raise KeyboardInterrupt
        return original(self, segment, *args)

    monkeypatch.setattr(fixed_reward.FixedReward, "after_segment", killed_in_generation_1)
    with pytest.raises(KeyboardInterrupt):
        theta_search.search(TINY, out)
    monkeypatch.undo()
    assert theta_search.load_generation(out, 0) is not None
    assert theta_search.load_generation(out, 1) is None
    assert os.listdir(os.path.join(theta_search.generation_dir(out, 1), "checkpoints")) == ["1"]
    seen = []
    records, _ = theta_search.search(TINY, out, on_generation=seen.append)
    assert [r["resumed"] for r in seen] == [True, False, False]
    for resumed, full in zip(records, uninterrupted[1], strict=True):
        assert {k: resumed[k] for k in KEYS} == {k: full[k] for k in KEYS}
    again = []
    theta_search.search(TINY, out, on_generation=again.append)  # finished: replay only
    assert [r["resumed"] for r in again] == [True, True, True]


def test_replay_refuses_other_candidates_and_another_config(uninterrupted, tmp_path):
    out = str(tmp_path / "copy")
    shutil.copytree(uninterrupted[0], out)
    with pytest.raises(UserError, match="sigma0: saved 0.25, given 0.3"):
        theta_search.search(dataclasses.replace(TINY, sigma0=0.3), out)
    path = os.path.join(theta_search.generation_dir(out, 0), "generation.json")
    record = json.load(open(path))
    record["x"][0][0] += 1e-9
    json.dump(record, open(path, "w"))
    with pytest.raises(UserError, match="generation 0 .* other candidates"):
        theta_search.search(TINY, out)


@pytest.mark.parametrize(("change", "message"), [
    ({"population": 1}, "population must be >= 2, got 1"),
    ({"generations": 0}, "generations must be >= 1, got 0"),
    ({"seeds_per_candidate": 0}, "seeds_per_candidate must be >= 1, got 0"),
    ({"retrain_seeds": 1}, "retrain_seeds must be >= 2, got 1"),
    ({"total_timesteps": 0}, "total_timesteps must be >= 1, got 0"),
    ({"sigma0": 0.0}, r"sigma0 must be in \(0, 1.0\].*got 0.0"),
    ({"sigma0": 1.5}, r"sigma0 must be in \(0, 1.0\].*got 1.5"),
    ({"pick": "worst"}, "pick must be 'best' or 'mean', got 'worst'"),
    ({"tunable": ()}, "at least one"),
    ({"tunable": ("nope",)}, "unknown feature name"),
    ({"start": (2.0,) + (0.0,) * 7}, "outside its bounds"),
])
def test_bad_config_values_raise(change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(TINY, **change)


def test_candidates_keep_theta0_outside_the_tunable_features():
    spec = RewardSpec().with_tunable(("empty_cells", "monotonicity"))
    thetas = theta_search.candidate_thetas(spec, np.array([[0.5, -0.25], [1.0, -1.0]]))
    assert thetas.dtype == np.float32 and thetas.shape == (2, 8)
    expected = np.tile(np.asarray(spec.start, np.float32), (2, 1))
    expected[:, [1, 3]] = [[0.5, -0.25], [1.0, -1.0]]
    np.testing.assert_array_equal(thetas, expected)
    cfg = dataclasses.replace(TINY, tunable=("empty_cells", "monotonicity"))
    assert np.asarray(theta_search.make_strategy(cfg).ask()).shape == (TINY.population, 2)


def test_cli_retrains_and_reports_the_paired_difference(uninterrupted, tmp_path, capsys):
    out = str(tmp_path / "cli")
    shutil.copytree(uninterrupted[0], out)  # the search is read back; the retrain trains
    result = CLI.main(["--preset", "tiny", "--out", out, "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["event"] for line in lines] == ["generation"] * 3 + ["result"]
    assert all(line["resumed"] for line in lines[:3])
    best = max((s, g, c) for g, r in enumerate(uninterrupted[1])
               for c, s in enumerate(r["score_mean"]))
    assert result["picked"]["theta"] == uninterrupted[1][best[1]]["thetas"][best[2]]
    picked, base = (result["retrain"][arm]["per_seed"] for arm in ("picked", "theta0"))
    assert len(picked) == len(base) == TINY.retrain_seeds
    d = np.subtract(picked, base)
    half = scipy.stats.t.ppf(0.975, len(d) - 1) * np.std(d, ddof=1) / math.sqrt(len(d))
    expected = {"per_seed": d.tolist(), "mean": float(np.mean(d)), "wins": int(np.sum(d > 0))}
    assert {k: lines[-1]["difference"][k] for k in expected} == expected
    assert lines[-1]["difference"]["ci_low"] == pytest.approx(np.mean(d) - half)
    assert lines[-1]["difference"]["ci_high"] == pytest.approx(np.mean(d) + half)
    saved = json.load(open(os.path.join(out, "theta_search.json")))
    assert saved["difference"] == lines[-1]["difference"]
    assert "Paired difference picked - theta0 over 2 seeds" in open(
        os.path.join(out, "theta_search.md")).read()
    again = CLI.main(["--preset", "tiny", "--out", out, "--json"])  # everything read back
    assert again["difference"] == result["difference"]


def test_help_derives_each_presets_segment_from_its_numbers(capsys, monkeypatch):
    """`--help` once said 'a segment is 131,072 env steps' for the tiny preset (16 envs
    x 8 steps x 1 update = 128)."""
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        CLI.parse(["--help"])
    text = capsys.readouterr().out
    for name, (_, args) in CLI.PRESETS.items():
        ppo = args.search.ppo
        segment = ppo.num_envs * ppo.num_steps * ppo.updates_per_segment
        assert f"{name}  " in text
        line = next(line for line in text.splitlines() if line.strip().startswith(name + " "))
        assert (f"{ppo.num_envs} envs, a segment is {segment:,} env steps, "
                f"{args.search.num_segments} per row") in line, line
    assert "a segment is 128 env steps" in text  # tiny's own options (the help's default)
    assert text.count("131,072") == 2  # only the two budget presets' lines say it


def test_a_garbled_saved_config_is_one_line(tmp_path):
    """A search folder whose config.json holds bytes that are not UTF-8 raised
    UnicodeDecodeError; now it is the one `cannot read` line, and nothing is written."""
    out = tmp_path / "search"
    out.mkdir()
    (out / "config.json").write_bytes(b'{"population": 3, "x": "\xff\xfe')
    with pytest.raises(UserError, match=r"cannot read .*config\.json \('utf-8' codec"):
        theta_search.prepare_search_dir(str(out), TINY)
    assert os.listdir(out) == ["config.json"]
