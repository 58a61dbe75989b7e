"""`benchmarks/results/agreement_ceiling/agreement_ceiling.py` end to end on a tiny pool: the
record's parts, and `--json` meaning stdout is JSON lines only (the rule for every script with
--json)."""

from __future__ import annotations

import json

from support import load_script


def test_tiny_pool_end_to_end_json_stdout_only(capsys):
    bench = load_script("benchmarks/results/agreement_ceiling/agreement_ceiling.py")
    args = bench.Args(policies=("eps0.6", "ppo_init"), groups_per_policy=4, m=4, max_len=100,
                      pool_depth=1, expert_depth=1, iterations=2, replay_seeds=2, json=True)
    record = bench.main(args)
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert len(lines) == 1 and lines[0]["games"] == record["games"] == 2 * 4 * 4
    assert set(record["ceiling"]) == {"theta0", "fit"}
    assert "| theta | held-out pair accuracy" in captured.err
