"""benchmarks/results/warmup_destination/destination.py: an arm's mean final theta written out
as a start, on a made-up trajectory file whose means are worked out by hand."""

from __future__ import annotations

import gzip

import pytest
from support import load_script

from sailor_jax.errors import UserError
from sailor_jax.game.reward import THETA0, RewardSpec
from sailor_lab.starts import parse_start

dest = load_script("benchmarks/results/warmup_destination/destination.py")
NAMES = list(RewardSpec().names)


def _csv(rows: list[tuple[str, int, int, list[float]]]) -> str:
    lines = [",".join(["variant", "seed", "iteration", *NAMES])]
    lines += [",".join([v, str(s), str(t), *map(str, w)]) for v, s, t, w in rows]
    return "\n".join(lines) + "\n"


def _weights(**changes: float) -> list[float]:
    base = dict(zip(NAMES, THETA0, strict=True))
    return [changes.get(n, base[n]) for n in NAMES]


ROWS = [
    ("a.sailor", 0, 0, _weights(monotonicity=-1.0)),
    ("a.sailor", 1, 0, _weights(monotonicity=-1.0)),
    # the last iteration: monotonicity 0.2 and 0.5 -> mean 0.35; game_over -0.8 and -0.6 -> -0.7
    ("a.sailor", 0, 2, _weights(monotonicity=0.2, game_over=-0.8)),
    ("a.sailor", 1, 2, _weights(monotonicity=0.5, game_over=-0.6)),
    ("a.fixed", 0, 0, _weights(monotonicity=-1.0)),
]


def test_the_destination_is_the_mean_final_theta_and_parses_as_a_start(tmp_path):
    (tmp_path / "theta_trajectories.csv").write_text(_csv(ROWS))
    [spec] = dest.main(["--run", str(tmp_path), "--arms", "a.sailor"])
    start = parse_start(spec)
    assert start.name == "a_dest"
    got = dict(zip(NAMES, start.theta, strict=True))
    want = dict(zip(NAMES, _weights(monotonicity=0.35, game_over=-0.7), strict=True))
    assert got == pytest.approx(want, abs=5e-4)


def test_arms_come_back_in_the_order_named_from_a_compressed_copy(tmp_path):
    with gzip.open(tmp_path / "theta_trajectories.csv.gz", "wt", encoding="utf-8") as f:
        f.write(_csv(ROWS))
    specs = dest.main(["--run", str(tmp_path), "--arms", "a.fixed", "a.sailor",
                       "--suffix", "_end"])
    assert [s.split(":")[0] for s in specs] == ["a_end", "a_end"]
    assert "monotonicity=-1.000" in specs[0] and "monotonicity=0.350" in specs[1]


def test_bad_input_names_the_flag(tmp_path):
    with pytest.raises(UserError, match="--run: no theta_trajectories.csv"):
        dest.load_rows(str(tmp_path))
    (tmp_path / "theta_trajectories.csv").write_text("a,b\n1,2\n")
    with pytest.raises(UserError, match="--run: .* is not a theta trajectory file"):
        dest.load_rows(str(tmp_path))
    (tmp_path / "theta_trajectories.csv").write_text(_csv(ROWS))
    with pytest.raises(UserError, match="--arms: no arm 'b.sailor' in the run; it has a.fixed, "
                                        "a.sailor"):
        dest.final_theta(dest.load_rows(str(tmp_path)), "b.sailor")
