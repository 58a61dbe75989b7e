"""benchmarks/results/learning_ppo/pool_curves.py: seeds of several learning runs pooled into
one curve per recipe."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from support import curve_line, load_script

from sailor_jax.errors import UserError
from sailor_lab import report

pool_curves = load_script("benchmarks/results/learning_ppo/pool_curves.py")


def _write(path, lines):
    path.write_text("".join(json.dumps({**x, "train_s": 10.0, "sps": 100.0}) + "\n"
                            for x in lines))
    return str(path)


def test_pooled_curve_equals_the_concatenated_seeds_with_renames(tmp_path, capsys):
    rng = np.random.default_rng(3)
    score, wins = rng.normal(20_000, 2_000, size=(2, 6)), rng.uniform(0.3, 0.8, size=(2, 6))
    runs = [_write(tmp_path / f"seed{k}.jsonl",
                   [curve_line("default", steps, score[i, 3 * k:3 * k + 3],
                               wins[i, 3 * k:3 * k + 3], per_seed=k == 1)
                    for i, steps in enumerate((200, 100))])  # out of order on purpose
            for k in (0, 1)]
    png = tmp_path / "fig" / "curves.png"
    os.makedirs(png.parent)
    curves = pool_curves.main(pool_curves.Args(files=tuple(runs), rename=("default=small",),
                                               out=str(png), json=True))
    assert list(curves) == ["small"]
    points = curves["small"]
    assert [p["env_steps"] for p in points] == [100, 200]
    for p, i in zip(points, (1, 0), strict=True):
        assert p["seeds"] == 6 and p["recipe"] == "small"
        for metric, x in (("score", score[i]), ("win_rate", wins[i])):
            mean, low, high = report.mean_ci(x)
            got = (p[f"{metric}_mean"], p[f"{metric}_ci_low"], p[f"{metric}_ci_high"])
            assert got == pytest.approx((mean, low, high))
    printed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert printed == json.loads(json.dumps(points))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, match", [
    (dict(files=()), "no files given"),
    (dict(files=("/no/such/file.jsonl",)), "cannot read"),
    (dict(files=("{f}",), rename=("default",)), "expected OLD=NEW"),
    (dict(files=("{f}",), rename=("=x",)), "expected OLD=NEW"),
])
def test_bad_input_is_a_user_error(tmp_path, args, match):
    f = _write(tmp_path / "run.jsonl", [curve_line("default", 1, [1.0, 2.0], [0.0, 1.0], True)])
    args = {k: tuple(v.format(f=f) for v in vals) for k, vals in args.items()}
    with pytest.raises(UserError, match=match):
        pool_curves.main(pool_curves.Args(**args))


def test_a_group_of_one_seed_is_a_user_error(tmp_path):
    f = _write(tmp_path / "run.jsonl", [curve_line("default", 1, [1.0], [0.0], True)])
    with pytest.raises(UserError, match="one seed"):
        pool_curves.main(pool_curves.Args(files=(f,)))
