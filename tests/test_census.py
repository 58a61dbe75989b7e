"""`benchmarks/census.py`: the HLO reader puts each op in the loop it runs in, with the loop's
trip count; at toy sizes the census gives every arm finite positive costs and integer op
counts in every PPO loop region, times every arm and the env, and the first layer's stopped
gradient takes scatters and bytes out of the minibatch and nothing out of the rollout."""

from __future__ import annotations

import gzip
import json
import math

import jax
import jax.numpy as jnp
import pytest
from support import load_script

REGIONS = {"segment", "update", "rollout_step", "gae_step", "epoch", "minibatch"}


FUSION_EMITTERS = {"xla_cpu_use_fusion_emitters": True}
"""Compiler options of the programs whose ops these tests count: XLA:CPU's fusion emitters, as
users' runs compile. The suite turns them off to compile fast (`conftest.FAST_COMPILE_FLAGS`),
and without them XLA expands scatters into loops."""


@pytest.fixture
def census(monkeypatch):
    """`benchmarks/census.py`, each arm's segment (the program the census reads) compiled with
    `FUSION_EMITTERS`; the programs that only count FLOPs and bytes compile as the suite's do."""
    module = load_script("benchmarks/census.py")
    compile_arm, compile_ = module.compile_arm, jax.stages.Lowered.compile

    def with_fusion_emitters(arm, cfg):
        with monkeypatch.context() as patch:
            patch.setattr(jax.stages.Lowered, "compile",
                          lambda self, **kwargs: compile_(self, FUSION_EMITTERS, **kwargs))
            return compile_arm(arm, cfg)

    monkeypatch.setattr(module, "compile_arm", with_fusion_emitters)
    return module


def test_loop_tree_puts_ops_in_their_loops():
    census = load_script("benchmarks/census.py")

    def f(x, idx):
        def inner(c, _):
            return c.at[idx].add(c[:4]), None

        def outer(c, _):
            c, _ = jax.lax.scan(inner, c, length=3)
            return jnp.sort(c) * 2, None
        return jax.lax.scan(outer, x, length=5)[0]

    compiled = jax.jit(f).lower(jnp.zeros(8), jnp.arange(4)).compile(FUSION_EMITTERS)
    root = census.loop_tree(compiled.as_text())
    (outer,) = root.children
    (inner,) = outer.children
    assert (root.trip, outer.trip, inner.trip) == (1, 5, 3)
    assert root.top["while"] == 1 and outer.top["while"] == 1
    assert outer.top["sort"] + outer.fused["sort"] == 1
    assert inner.top["scatter"] + inner.fused["scatter"] == 1
    assert "scatter" not in outer.top and "scatter" not in outer.fused


@pytest.mark.slow
def test_census_at_toy_sizes(tmp_path, capsys, census):
    census.main(census.parse_args(census.Args, [
        "--json", "--out", str(tmp_path), "--arms", "afterstates_64:first_layer_grad_stopped",
        "--num-envs", "16", "--num-steps", "8", "--update-epochs", "2",
        "--num-minibatches", "4", "--updates", "2", "--repeats", "1",
        "--profile", str(tmp_path / "trace")]))
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    with gzip.open(tmp_path / "census.jsonl.gz", "rt") as f:
        assert [json.loads(line) for line in f] == rows
    assert "| afterstates_64:first_layer_grad_stopped |" in (tmp_path / "census.md").read_text()
    full, stopped, env_row = rows
    assert [r["arm"] for r in rows] == ["afterstates_64", "afterstates_64:first_layer_grad_stopped",
                                        "env_features"]
    for row in (full, stopped):
        assert row["loops_counted_once"] is full["loops_counted_once"]
        for key in ("flops_per_env_step", "bytes_per_env_step", "sps", "segment_s"):
            assert math.isfinite(row[key]) and row[key] > 0, (row["arm"], key)
        if row["loops_counted_once"]:  # XLA:CPU: the rollout's part solved apart
            assert 0 < row["rollout_bytes_per_env_step"] < row["bytes_per_env_step"]
            assert 0 < row["rollout_flops_per_env_step"] < row["flops_per_env_step"]
        assert set(row["ops"]) == REGIONS
        for region in row["ops"].values():
            assert region["runs_per_env_step"] > 0
            for key in ("static", "static_fused", "run", "run_fused"):
                assert all(isinstance(c, int) and c > 0 for c in region[key].values())
        assert row["cpu"] and row["jax"] == jax.__version__
        profile = row["profile"]  # one traced call: the CPU's ops run on the runtime's threads
        assert profile["where"] == "host threads" and profile["traced_s"] > 0
        assert profile["op_time_s"] > 0 and profile["top_ops"]
        assert all(0 < share <= 1 and seconds > 0 for _, seconds, share in profile["top_ops"])
    assert full["time_vs_base"] == 1.0 and stopped["time_vs_base"] > 0
    assert env_row["sps"] > 0 and 0 < env_row["share_of"]["afterstates_64"]

    def scatters(row, region):
        ops = row["ops"][region]
        return ops["static"].get("scatter", 0) + ops["static_fused"].get("scatter", 0)

    assert scatters(stopped, "minibatch") < scatters(full, "minibatch")
    assert stopped["bytes_per_env_step"] < full["bytes_per_env_step"]
    assert stopped["ops"]["rollout_step"] == full["ops"]["rollout_step"]


def test_top_ops_count_self_time_on_the_device(tmp_path):
    """A hand-made trace: a device thread whose `while` holds two kernels, a host thread."""
    from sailor_lab import trace_summary
    meta = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
            {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}}]
    spans = [{"ph": "X", "pid": 1, "tid": 7, "name": "while", "ts": 0, "dur": 100},
             {"ph": "X", "pid": 1, "tid": 7, "name": "gemm", "ts": 10, "dur": 50},
             {"ph": "X", "pid": 1, "tid": 7, "name": "scatter", "ts": 70, "dur": 20},
             {"ph": "X", "pid": 1, "tid": 8, "name": "gemm", "ts": 0, "dur": 30},
             {"ph": "X", "pid": 2, "tid": 9, "name": "host_work", "ts": 0, "dur": 999}]
    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": meta + spans}, f)
    out = trace_summary.top_ops(str(path))
    assert out["where"] == "device" and out["op_time_s"] == pytest.approx(130e-6)
    assert [(n, round(s * 1e6), round(sh, 3)) for n, s, sh in out["top_ops"]] == [
        ("gemm", 80, round(80 / 130, 3)), ("while", 30, round(30 / 130, 3)),
        ("scatter", 20, round(20 / 130, 3))]


def test_the_gather_arm_runs_the_recipes_program_on_the_cpu_and_the_gather_elsewhere(monkeypatch):
    """The program each arm traces (lowered, not compiled: which op the embedding is, is decided
    when the segment is traced, by the backend `reads_one_hot` is told of)."""
    census = load_script("benchmarks/census.py")
    from sailor_jax.agents import board_layers, ppo
    args = census.Args(num_envs=8, num_steps=4, update_epochs=1, num_minibatches=2, updates=1)
    texts = {}
    for backend in ("cpu", "gpu"):  # the backend reads_one_hot is asked about
        monkeypatch.setattr(board_layers.jax, "default_backend", lambda b=backend: b)
        for name in ("afterstates_64", "afterstates_64:gather"):
            arm = census.ARMS[name]
            with census.arm_changes(arm):
                init, segment = ppo.make_train.__wrapped__(census.arm_config(arm, args))
                runner = jax.eval_shape(init, jax.random.PRNGKey(0))
                lowered = segment.lower(runner, jnp.zeros(8, jnp.float32)).as_text()
            texts[backend, name] = lowered.count("stablehlo.gather")
    assert texts["cpu", "afterstates_64"] == texts["cpu", "afterstates_64:gather"] > 0
    assert texts["gpu", "afterstates_64:gather"] == texts["cpu", "afterstates_64"]
    assert texts["gpu", "afterstates_64"] < texts["gpu", "afterstates_64:gather"]


def test_unknown_arm_is_refused():
    census = load_script("benchmarks/census.py")
    with pytest.raises(census.UserError, match="afterstates_64:nothing") as refused:
        census.run(census.Args(arms=("afterstates_64:nothing",)))
    assert "afterstates_64:one_hot" in str(refused.value)
