"""benchmarks/results/judge_design/judge_design.py on the tiny offline model and a tiny pool: one
record per design with its raw prompts, resume by skipping recorded designs, and an unknown
design refused."""

from __future__ import annotations

import dataclasses
import gzip
import json

import pytest
from support import TINY_POOL, load_script

from sailor_jax.config import LLMRankerConfig
from sailor_jax.errors import UserError


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/results/judge_design/judge_design.py")


def test_each_design_is_one_record_with_its_prompts_and_reruns_skip_it(bench, tiny_llm_dir,
                                                                       tmp_path):
    out = str(tmp_path / "dev.jsonl.gz")
    args = bench.Args(llm=LLMRankerConfig(model=tiny_llm_dir, batch_size=4),
                      designs=("summary_pointwise", "summary_pairwise"), pool=TINY_POOL["pool"],
                      out=out)
    records = bench.main(args)
    with gzip.open(out, "rt") as f:
        lines = [json.loads(line) for line in f]
    assert [r["design"] for r in lines] == ["summary_pointwise", "summary_pairwise"] == [
        r["design"] for r in records]
    point, pair = lines
    assert point["mode"] == "pointwise" and pair["mode"] == "pairwise"
    assert point["groups"] == 2
    for r in lines:
        lo, hi = r["skill_order_accuracy_ci"]
        assert lo <= r["skill_order_accuracy"] <= hi and r["skill_pairs"] > 0
        assert r["distinct_prompts"] <= r["prompts"] and r["model_seconds"] > 0
    assert "rating_mean" in point and "p_first_mean" in pair
    with gzip.open(str(tmp_path / "dev.summary_pairwise.jsonl.gz"), "rt") as f:
        raw = [json.loads(line) for line in f]
    prompts = [r for r in raw if r["event"] == "pairwise_prompt"]
    assert len(prompts) == pair["distinct_prompts"] == len({r["prompt"] for r in prompts})
    assert sum(r["event"] == "group" for r in raw) == 2
    assert bench.main(args) == []  # both recorded: nothing to do
    assert bench.main(dataclasses.replace(args, designs=("summary_pairwise12",)))[0][
        "max_pairs_per_group"] == 12


def test_an_unknown_design_is_refused_before_any_work(bench, tmp_path):
    with pytest.raises(UserError, match="--designs: unknown nope"):
        bench.main(bench.Args(designs=("nope",), out=str(tmp_path / "x.jsonl")))
