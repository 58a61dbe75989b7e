"""Host log sinks: to_jsonable, JsonlSink, MetricLogger (JSONL rows and TensorBoard events)."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import struct

import jax.numpy as jnp
import numpy as np
import pytest
from tensorboardX.proto import event_pb2

from sailor_jax.logging import (
    JsonlSink,
    MetricLogger,
    cut_lines,
    json_line,
    rewind_jsonl,
    rewind_logs,
    to_jsonable,
)


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_events(folder: str) -> list[event_pb2.Event]:
    """Every event in the TFRecord files of `folder` (length, crc, data, crc per record)."""
    events = []
    for path in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        data, i = open(path, "rb").read(), 0
        while i < len(data):
            (n,) = struct.unpack("<Q", data[i : i + 8])
            events.append(event_pb2.Event.FromString(data[i + 12 : i + 12 + n]))
            i += 12 + n + 4
    return events


@dataclasses.dataclass
class Inner:
    x: float
    shape: tuple


@dataclasses.dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    theta: np.ndarray


def test_to_jsonable_numpy_nan_and_dataclasses():
    value = {
        "f64": np.float64(2.5), "i32": np.int32(7), "b": np.bool_(True), "nan": float("nan"),
        "inf": np.float32(np.inf), "arr": np.array([[1, 2], [3, 4]], np.int8),
        "mixed": np.array([1.0, np.nan, -np.inf]), "jax": jnp.arange(3, dtype=jnp.float32),
        "tuple": (1, (2.0, float("-inf"))), 3: "int key",
        "dc": Outer("a", Inner(float("nan"), (2, 3)), np.array([0.5, 1.5], np.float32)),
    }
    out = to_jsonable(value)
    assert out == {
        "f64": 2.5, "i32": 7, "b": True, "nan": None, "inf": None, "arr": [[1, 2], [3, 4]],
        "mixed": [1.0, None, None], "jax": [0.0, 1.0, 2.0], "tuple": [1, [2.0, None]],
        "3": "int key", "dc": {"name": "a", "inner": {"x": None, "shape": [2, 3]},
                               "theta": [0.5, 1.5]},
    }
    assert type(out["f64"]) is float and type(out["i32"]) is int and type(out["b"]) is bool
    json.dumps(out, allow_nan=False)  # plain, strict JSON
    assert to_jsonable(Inner) is Inner  # a dataclass type is not an instance: passed through


def test_log_lines_are_strict_json():
    line = json_line({"a": float("nan"), "b": [1.0, float("-inf")], "c": {"d": np.float64(2)}})
    assert line == '{"a": null, "b": [1.0, null], "c": {"d": 2.0}}'


def test_jsonl_sink_appends_flushes_and_keeps_the_newest(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"old": 1}\n')
    sink = JsonlSink(str(path), keep=2)
    sink.write({"k": 0, "v": np.float32(np.nan)})
    assert read_jsonl(path) == [{"old": 1}, {"k": 0, "v": None}]  # on disk after each write
    for k in (1, 2):
        sink.write({"k": k})
    JsonlSink(str(path)).write({"k": 3})  # a second sink on the same file appends too
    assert [r.get("k") for r in read_jsonl(path)] == [None, 0, 1, 2, 3]
    assert sink.records == [{"k": 1}, {"k": 2}]  # the newest `keep`, as given


def test_jsonl_sink_keep_modes_and_no_file(tmp_path):
    everything, memory_only = JsonlSink(str(tmp_path / "a.jsonl"), keep=None), JsonlSink(None, 1)
    for k in range(3):
        everything.write({"k": k})
        memory_only.write({"k": k})
    assert len(everything.records) == 3 and memory_only.records == [{"k": 2}]
    assert os.listdir(tmp_path) == ["a.jsonl"]
    assert JsonlSink(str(tmp_path / "a.jsonl")).records == []
    with pytest.raises(ValueError, match="keep"):
        JsonlSink(None, keep=-1)


def test_metric_logger_writes_jsonl_rows_and_tensorboard(tmp_path):
    out = str(tmp_path / "run")
    config = {"seed": 1, "ppo": {"num_envs": 16, "lr": 3e-4}, "theta0": [1.0, 0.0]}
    with MetricLogger(out) as logger:
        logger.log_hparams(config)
        logger.log(10, {"charts/score": np.float32(1.5), "losses/kl": float("nan")})
        logger.log(20, {"sailor": {"alignment": 0.25, "accepted": True}, "note": "x"})
    assert read_jsonl(os.path.join(out, "metrics.jsonl")) == [
        {"step": 10, "charts/score": 1.5, "losses/kl": None},
        {"step": 20, "sailor": {"alignment": 0.25, "accepted": True}, "note": "x"},
    ]
    events = read_events(os.path.join(out, "tb"))
    scalars = {(v.tag, e.step): v.simple_value for e in events for v in e.summary.value
               if v.HasField("simple_value")}
    # NaN is null in JSON and so not a number for TensorBoard; booleans and text are skipped.
    assert scalars == {("charts/score", 10): 1.5, ("sailor/alignment", 20): 0.25}
    texts = [v.tensor.string_val[0].decode() for e in events for v in e.summary.value
             if v.tag == "hyperparameters/text_summary"]
    assert texts == ["|param|value|\n|-|-|\n|seed|1|\n|ppo.num_envs|16|\n|ppo.lr|0.0003|\n"
                     "|theta0|[1.0, 0.0]|"]


def test_metric_logger_without_tensorboard_writes_only_jsonl(tmp_path):
    with MetricLogger(str(tmp_path), name="m", tensorboard=False) as logger:
        logger.log_hparams({"a": {"b": 1}})  # a no-op
        logger.log(0, {"x": 1})
    assert os.listdir(tmp_path) == ["m.jsonl"]
    assert read_jsonl(tmp_path / "m.jsonl") == [{"step": 0, "x": 1}]


def test_jsonl_sink_context_goes_first_and_the_records_own_fields_win(tmp_path):
    sink = JsonlSink(str(tmp_path / "llm.jsonl"), keep=None, context={"iteration": 3})
    sink.write({"event": "group", "g": 0})
    sink.write({"iteration": 9, "event": "own"})
    sink.context = {}
    sink.write({"event": "plain"})
    expected = [{"iteration": 3, "event": "group", "g": 0}, {"iteration": 9, "event": "own"},
                {"event": "plain"}]
    assert read_jsonl(sink.path) == sink.records == expected
    assert list(sink.records[0]) == ["iteration", "event", "g"]


def test_metric_logger_context_follows_the_step(tmp_path):
    with MetricLogger(str(tmp_path), tensorboard=False) as logger:
        logger.log(5, {"x": 1})
        logger.context = {"segment": 2}
        logger.log(6, {"x": 2})
    records = read_jsonl(tmp_path / "metrics.jsonl")
    assert records == [{"step": 5, "x": 1}, {"step": 6, "segment": 2, "x": 2}]
    assert list(records[1]) == ["step", "segment", "x"]


def test_rewind_jsonl_keeps_what_the_predicate_accepts(tmp_path):
    path = str(tmp_path / "log.jsonl")
    assert rewind_jsonl(path, lambda r: True) == 0  # no file: nothing to drop
    with open(path, "w") as f:
        f.write('{"i": 0}\n{"i": 1}\n[1, 2]\n{"i": 2}\n{"i": 3, "cut sho')  # a killed write
    assert rewind_jsonl(path, lambda r: r["i"] < 2) == 3
    assert read_jsonl(path) == [{"i": 0}, {"i": 1}]
    before = os.stat(path)
    assert rewind_jsonl(path, lambda r: True) == 0
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # untouched
    assert rewind_jsonl(path, lambda r: False) == 2 and read_jsonl(path) == []
    assert os.listdir(tmp_path) == ["log.jsonl"]  # no temporary file left


def test_garbled_bytes_are_dropped_as_cut_lines(tmp_path):
    """A killed run's log may end in bytes that are not UTF-8 (strict decoding
    raised UnicodeDecodeError); they are dropped like a cut line, and the kept lines are
    written back byte for byte."""
    path = str(tmp_path / "log.jsonl")
    good = '{"i": 0, "text": "caf\u00e9 \u2192 2048"}\n'.encode() + b'{"i": 1}\n'
    with open(path, "wb") as f:
        f.write(good + b'{"i": 2, "text": "caf\xc3' + b"\n\xff\xfe\x80\x00 garbled")
    assert cut_lines(path) == [3, 4]
    assert rewind_jsonl(path, lambda r: True) == 2
    with open(path, "rb") as f:
        assert f.read() == good
    assert cut_lines(path) == []


def test_rewind_logs_drops_the_records_a_resume_writes_again(tmp_path):
    logs = {
        "metrics.jsonl": [{"step": 8, "segment": 0}, {"step": 8, "segment": 0, "iteration": 0},
                          {"step": 16, "segment": 1}, {"step": 16, "segment": 2,
                                                       "iteration": 1}, {"step": 1}],
        "llm.jsonl": [{"iteration": 0, "event": "group"}, {"iteration": 1, "event": "group"}],
        "refine.jsonl": [{"iteration": 1, "answer": "raise"}],
    }
    for name, records in logs.items():
        with open(tmp_path / name, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
    (tmp_path / "results.json").write_text("{}")
    # Checkpoint of segment 2 with iteration 1 in flight (pipelined): iteration 1 is redone.
    assert rewind_logs(str(tmp_path), 2, 1) == {"llm.jsonl": 1, "metrics.jsonl": 1,
                                                       "refine.jsonl": 1}
    metrics = [json.loads(line) for line in open(tmp_path / "metrics.jsonl")]
    assert metrics == logs["metrics.jsonl"][:3] + [{"step": 1}]  # untagged records stay
    assert (tmp_path / "refine.jsonl").read_text() == ""
    assert rewind_logs(str(tmp_path), 0, 0) == {"llm.jsonl": 1, "metrics.jsonl": 3,
                                                       "refine.jsonl": 0}
    assert (tmp_path / "results.json").read_text() == "{}"
