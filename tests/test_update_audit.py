"""benchmarks/update_audit.py on made-up blocks whose counts are worked out by hand."""

from __future__ import annotations

import json
import os

import pytest
from scipy.stats import norm
from support import load_script

from sailor_jax.errors import UserError

audit_mod = load_script("benchmarks/update_audit.py")


def _write(folder, arm: str, seeds: list[list[dict]], warmup: int = 1) -> None:
    """A results.json whose seed s made the updates `seeds[s]`, the first `warmup` of them in
    the warm-up."""
    path = folder / "variants" / arm
    os.makedirs(path)
    records = [{"seeds": [seed[k] for seed in seeds]} for k in range(len(seeds[0]))]
    with open(path / "results.json", "w", encoding="utf-8") as f:
        json.dump({"warmup": records[:warmup], "iterations": records[warmup:]}, f)


def test_outcomes_gate_and_sampler_over_blocks(tmp_path, capsys):
    strong, null = norm.sf(2.0), 0.5  # z 2 per update: Stouffer 2 sqrt(k) >= 3 from k = 3
    opening = [{"outcome": "no evidence", "heldout_p": strong, "mcmc": {"rhat": 1.0, "ess": 90}},
               {"outcome": "no evidence", "heldout_p": strong, "mcmc": {"rhat": 1.2, "ess": 10}},
               {"outcome": "moved", "heldout_p": strong, "mcmc": {"rhat": 3.0, "ess": 2}}]
    shut = [{"outcome": "held out", "heldout_p": null}, {"outcome": "no gain", "heldout_p": null},
            {"outcome": "no evidence", "heldout_p": None}]
    _write(tmp_path / "seed1", "theta0.arm", [opening, shut])
    _write(tmp_path / "seed2", "theta0.arm", [shut])
    os.makedirs(tmp_path / "seed2" / "variants" / "theta0.fixed")
    audit_mod.main(["--run", str(tmp_path), "--json", str(tmp_path / "a.json")])
    with open(tmp_path / "a.json", encoding="utf-8") as f:
        a = json.load(f)["theta0.arm"]
    assert (a["seeds"], a["updates"]) == (3, 9)
    assert a["outcomes"] == {"moved": 1, "held out": 2, "no evidence": 4, "no gain": 2}
    gate = a["gate"]
    assert gate["opened_after"] == [3, None, None] and gate["seeds_opened"] == 1
    assert gate["final_z"][0] == pytest.approx(2.0 * 3 ** 0.5)
    assert gate["final_z"][1] == pytest.approx(0.0, abs=1e-12)
    assert gate["share_p_below_0.05"] == pytest.approx(3 / 7)
    assert a["mcmc"] == {"updates": 3, "rhat_median": 1.2, "rhat_p90": pytest.approx(2.64),
                         "share_rhat_above_1.1": pytest.approx(2 / 3), "ess_median": 10.0}
    printed = capsys.readouterr().out
    assert "| theta0.arm | 3 | 9 |" in printed and "1/3" in printed
    assert "judge" not in a  # no agent_preferred recorded


def test_the_judges_accuracy_on_the_windows(tmp_path):
    """Agent preferred 0.75 where the agent outscored the reference (right 0.75), 0.25 where it
    scored below (right 0.75); the warm-up has no score: left out of the accuracy."""
    seeds = [[{"outcome": "moved", "agent_preferred": 0.5},  # the warm-up update
              {"outcome": "moved", "agent_preferred": 0.75},
              {"outcome": "moved", "agent_preferred": 0.25}]]
    _write(tmp_path, "theta0.arm", seeds)
    path = tmp_path / "variants" / "theta0.arm" / "results.json"
    results = json.loads(path.read_text())
    for record, score in zip(results["iterations"], (900.0, 100.0), strict=True):
        record["train_score"] = [score]
    path.write_text(json.dumps(results))
    audit_mod.main(["--run", str(tmp_path), "--reference-skill", "500",
                    "--json", str(tmp_path / "a.json")])
    judge = json.loads((tmp_path / "a.json").read_text())["theta0.arm"]["judge"]
    assert judge == {"agent_preferred": 0.5, "window_accuracy": 0.75, "updates": 2}


def test_bad_run_folder_and_arm(tmp_path):
    with pytest.raises(UserError, match="no variants/ folder"):
        audit_mod.main(["--run", str(tmp_path)])
    _write(tmp_path, "theta0.arm", [[{"outcome": "moved"}]])
    with pytest.raises(UserError, match="no finished 'theta0.other'"):
        audit_mod.main(["--run", str(tmp_path), "--arms", "theta0.other"])
