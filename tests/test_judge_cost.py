"""The judge-cost benchmark: end to end on the tiny model, the random
Qwen2.5-1.5B config, and a mode whose judge cannot be built."""

from __future__ import annotations

import json

import pytest
from support import load_script

from sailor_lab.judge_eval import PoolArgs

REQUIRED = {"mode", "prompts_per_group", "prompt_tokens_per_group", "seconds_per_group",
            "label_mass", "skill_order_accuracy", "parse_rate", "model", "cpu"}
TINY_POOL = dict(pool=PoolArgs(epsilons=(0.0, 1.0), games_per_player=3, max_len=40,
                               pool_depth=1, m=4, groups=1),
                 expert_depth=1, batch_size=4, max_prompt_tokens=1024)


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/gpu/judge_cost.py")


def _json_lines(text: str) -> list[dict]:
    strict = {"parse_constant": lambda c: pytest.fail(f"non-JSON constant {c}")}
    return [json.loads(line, **strict) for line in text.splitlines()]  # stdout: JSON only


def test_benchmark_end_to_end_on_the_tiny_model(bench, tiny_llm_dir, capsys):
    args = bench.Args(model=tiny_llm_dir, modes=("pairwise", "pointwise"), json=True,
                      **TINY_POOL)
    bench.main(args)
    lines = _json_lines(capsys.readouterr().out)
    assert [r["mode"] for r in lines] == ["pairwise", "pointwise"]
    pairwise, pointwise = lines
    for record in lines:
        assert REQUIRED <= set(record) and record["model"] == tiny_llm_dir
        assert record["prompt_tokens_per_group"] > 10 * record["prompts_per_group"]
        assert record["seconds_per_group"] > 0 and 0.0 < record["label_mass"] < 1.0
        assert 0.0 <= record["skill_order_accuracy"] <= 1.0 and record["parse_rate"] is None
        assert record["failed_groups"] == 0
    assert pairwise["prompts_per_group"] == 2 * 6  # 4 trajectories: 6 pairs, both orders
    assert pointwise["prompts_per_group"] == 4  # one rating per trajectory


def test_a_mode_that_cannot_be_built_reports_an_error_line(bench, tiny_llm_dir, capsys,
                                                           monkeypatch):
    monkeypatch.setitem(bench.MODES, "pairwise", {"mode": "pairwise", "no_field": 1})
    args = bench.Args(model=tiny_llm_dir, modes=("pairwise", "listwise"), json=True,
                      max_new_tokens=4, **TINY_POOL)
    bench.main(args)
    broken, listwise = _json_lines(capsys.readouterr().out)
    assert broken["mode"] == "pairwise" and "no_field" in broken["error"]
    assert listwise["prompts_per_group"] == 1 and listwise["label_mass"] is None
    assert 0.0 <= listwise["parse_rate"] <= 1.0 and listwise["generated_tokens_per_group"] <= 4


def test_unknown_mode_is_refused_before_any_work(bench):
    with pytest.raises(ValueError, match="modes must be among"):
        list(bench.run(bench.Args(modes=("nope",))))
