"""Host metric sinks: JSONL (always) and TensorBoard (tensorboardX, optional). Host-only.

Tags follow CleanRL's group/name form: `charts/episodic_return`, `losses/value_loss`,
`sailor/alignment`, `sailor/theta_<name>`.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np


def to_jsonable(x: Any) -> Any:
    """Convert NumPy/JAX scalars and arrays (nested in dicts/lists) to plain JSON values.

    Non-finite floats become None (strict JSON has no NaN).
    """
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if hasattr(x, "tolist"):
        return to_jsonable(np.asarray(x).tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


class MetricLogger:
    """Append metric records to `<out_dir>/<name>.jsonl` and, optionally, TensorBoard.

    Args:
      out_dir: folder for the JSONL file and the `tb/` event files (created if missing).
      name: JSONL file stem.
      tensorboard: also write scalars with tensorboardX.
    """

    def __init__(self, out_dir: str, name: str = "metrics", tensorboard: bool = True):
        os.makedirs(out_dir, exist_ok=True)
        self.path = os.path.join(out_dir, f"{name}.jsonl")
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(os.path.join(out_dir, "tb"))

    def log(self, step: int, record: dict[str, Any]) -> None:
        """Write one record (flat or nested dict); numeric scalars also go to TensorBoard."""
        record = to_jsonable(record)
        self._file.write(json.dumps({"step": int(step), **record}) + "\n")
        self._file.flush()
        if self._tb is not None:
            for tag, value in _flatten(record):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._tb.add_scalar(tag, value, int(step))

    def log_text(self, tag: str, text: str, step: int = 0) -> None:
        """Record a text blob (e.g. the hyperparameter table) in TensorBoard."""
        if self._tb is not None:
            self._tb.add_text(tag, text, step)

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()

    def __enter__(self) -> MetricLogger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _flatten(record: dict, prefix: str = ""):
    for key, value in record.items():
        tag = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            yield from _flatten(value, tag)
        else:
            yield tag, value


def read_jsonl(path: str) -> list[dict]:
    """Read a JSONL file written by `MetricLogger` (skips a torn last line)."""
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return records
