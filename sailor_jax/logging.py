"""Host log sinks: one JSONL writer, one JSON sanitiser, and TensorBoard metrics. Host-only.

`JsonlSink` is the only JSONL writer of the package (metrics, the LLM judge's `llm.jsonl`, the
refinement advisor's `refine.jsonl`) and `rewind_jsonl` the only rewriter (a resume drops what
it writes again); `to_jsonable` is the only JSON sanitiser. TensorBoard tags follow CleanRL's
group/name form: `charts/episodic_return`, `losses/value_loss`, `sailor/alignment`,
`sailor/theta_<name>`. `open_text` is the one reader of record files that may be stored
gzip-compressed (`name.json.gz`, as the committed raw results under `benchmarks/results/` are).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import os
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np


def to_jsonable(x: Any) -> Any:
    """Convert a value to plain JSON values (dicts, lists, str, int, float, bool, None).

    Dataclass instances become dicts, tuples become lists, NumPy/JAX scalars and arrays
    become Python numbers and nested lists, dict keys become strings; non-finite floats
    become None (strict JSON has no NaN or Infinity). Other values pass through unchanged.
    """
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return to_jsonable(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if hasattr(x, "tolist"):
        return to_jsonable(np.asarray(x).tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def stored_path(path: str) -> str:
    """`path` if it exists, else `path + ".gz"` if that exists, else `path`. Host-only.

    A record file (`results.json`, `metrics.jsonl`, a table's `.csv`) may be kept compressed as
    `name.json.gz`; callers that test for a file's presence ask for the plain name here."""
    if os.path.exists(path) or not os.path.exists(path + ".gz"):
        return path
    return path + ".gz"


def open_text(path: str, newline: str | None = None) -> IO[str]:
    """Open a UTF-8 text file for reading, or its gzip-compressed copy. Host-only.

    `path` names the plain file (`results.json`) or the compressed one (`results.json.gz`);
    when the plain file is missing, `path + ".gz"` is read (`stored_path`). A `.gz` file is
    decompressed on the fly (`gzip.open`), so a reader handles both the same way.

    Raises:
      FileNotFoundError: neither `path` nor `path + ".gz"` exists.
      gzip.BadGzipFile, EOFError: a `.gz` file that is not gzip data, or is cut short (on read).
    """
    path = stored_path(path)
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline=newline)
    return open(path, encoding="utf-8", newline=newline)


def json_line(record: Any) -> str:
    """Serialise `to_jsonable(record)` as one line of strict JSON (no trailing newline)."""
    return json.dumps(to_jsonable(record), allow_nan=False)


class JsonlSink:
    """Append records to a JSONL file, one strict JSON line each; keep the newest in memory.

    Host-only. Each `write` opens `path` in append mode, writes one line and closes it, so
    every record is on disk (flushed) when `write` returns and a long-lived owner (an LLM
    judge) holds no open file. The parent folder must exist.

    Args:
      path: JSONL file to append to; None writes no file (only `records`).
      keep: how many of the newest records to keep in `records`; None keeps all, 0 none.
      context: fields put first in every record (a record's own fields win), e.g. the SAILOR
        `iteration` the LLM judge is ranking for; the owner may replace it between writes.

    Attributes:
      records: the kept records (as given plus `context`, not sanitised), newest last.
      context: see Args.
    """

    def __init__(self, path: str | None, keep: int | None = 0,
                 context: dict[str, Any] | None = None) -> None:
        if keep is not None and keep < 0:
            raise ValueError(f"keep must be >= 0 or None, got {keep}")
        self.path, self.keep = path, keep
        self.context: dict[str, Any] = dict(context or {})
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        """Append `{**context, **record}` (sanitised by `to_jsonable`) to the file and keep it
        in memory."""
        if self.context:
            record = {**self.context, **record}
        if self.keep != 0:
            self.records.append(record)
            if self.keep is not None:
                del self.records[: -self.keep]
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json_line(record) + "\n")


def rewind_jsonl(path: str, keep: Callable[[dict[str, Any]], bool]) -> int:
    """Rewrite the JSONL file `path` with only the records `keep` accepts; return how many
    were dropped. Host-only.

    Lines that are not a JSON object in UTF-8 (a record cut short by a kill, or garbled bytes
    a crash left at the end) are dropped too. The file is replaced atomically (`os.replace`
    of a sibling `.tmp`) and left untouched when nothing is dropped; a missing file drops
    nothing. Kept lines are written back byte for byte.

    Raises:
      OSError: the file cannot be read or replaced.
    """
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        lines = f.readlines()
    kept = [line for line in lines if _keep_line(line, keep)]
    if len(kept) < len(lines):
        with open(path + ".tmp", "wb") as f:
            f.writelines(line if line.endswith(b"\n") else line + b"\n" for line in kept)
        os.replace(path + ".tmp", path)
    return len(lines) - len(kept)


def cut_lines(path: str) -> list[int]:
    """1-based numbers of the lines of the JSONL file `path` that are not a JSON object in
    UTF-8 (a record cut short by a kill or a full disk, or garbled bytes); [] for a missing
    file. Host-only: the lines `rewind_jsonl` drops whatever `keep` says."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        return [n for n, line in enumerate(f, 1) if not _keep_line(line, lambda r: True)]


def _keep_line(line: bytes, keep: Callable[[dict[str, Any]], bool]) -> bool:
    """True if `line` is a JSON object in strict UTF-8 that `keep` accepts."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(record, dict) and bool(keep(record))


def rewind_logs(out_dir: str, segment: int, iteration: int) -> dict[str, int]:
    """Drop from every `*.jsonl` in `out_dir` the records a run resumed at `segment` writes
    again; return `{file name: records dropped}`. Host-only.

    Dropped: records tagged `"segment" >= segment` (the runner's `metrics.jsonl` tag) or
    `"iteration" >= iteration` (SAILOR: the judge's `llm.jsonl` and `refine.jsonl` records and
    the iteration records; `iteration` is the first iteration the resumed run judges again,
    `hooks.next_iteration`), and lines cut short by a kill. Untagged records stay.
    """
    def keep(record: dict) -> bool:
        return record.get("segment", -1) < segment and record.get("iteration", -1) < iteration

    return {name: rewind_jsonl(os.path.join(out_dir, name), keep)
            for name in sorted(os.listdir(out_dir)) if name.endswith(".jsonl")}


class MetricLogger:
    """Append metric records to `<out_dir>/<name>.jsonl` and, optionally, TensorBoard.

    Args:
      out_dir: folder for the JSONL file and the `tb/` event files (created if missing);
        None writes nothing (the processes other than 0 of a multi-process run).
      name: JSONL file stem.
      tensorboard: also write scalars with tensorboardX.

    Attributes:
      context: fields written after `step` in every JSONL record (not to TensorBoard); the
        segment runner sets `{"segment": k}` while segment k's records are written.
      step: the step of the newest record (0 before any).
    """

    def __init__(self, out_dir: str | None, name: str = "metrics", tensorboard: bool = True):
        self.path = None if out_dir is None else os.path.join(out_dir, f"{name}.jsonl")
        self.context: dict[str, Any] = {}
        self.step = 0
        self._sink = JsonlSink(self.path, keep=0)
        self._tb = None
        if out_dir is not None:
            os.makedirs(out_dir, exist_ok=True)
        if tensorboard and out_dir is not None:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(os.path.join(out_dir, "tb"))

    def log(self, step: int, record: dict[str, Any]) -> None:
        """Write `{"step": step, **context, **record}` to the JSONL file (NaN -> null); numeric
        leaves of a nested `record` also go to TensorBoard, tagged by their '/'-joined keys."""
        record, self.step = to_jsonable(record), int(step)
        self._sink.write({"step": self.step, **self.context, **record})
        if self._tb is not None:
            for tag, value in _flatten(record, "/"):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._tb.add_scalar(tag, value, int(step))

    def log_hparams(self, config: dict[str, Any]) -> None:
        """Write the hyperparameter table (CleanRL's `|param|value|` markdown) to TensorBoard.

        Nested dicts are flattened with dotted keys (`ppo.num_envs`). A no-op without
        TensorBoard (the JSON config is saved by the runner as `config.json`).
        """
        if self._tb is None:
            return
        rows = "\n".join(f"|{key}|{value}|" for key, value in _flatten(config, "."))
        self._tb.add_text("hyperparameters", "|param|value|\n|-|-|\n" + rows)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()

    def __enter__(self) -> MetricLogger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _flatten(record: dict, sep: str, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield `(joined key, leaf)` for every non-dict value of a nested dict."""
    for key, value in record.items():
        tag = f"{prefix}{sep}{key}" if prefix else str(key)
        if isinstance(value, dict):
            yield from _flatten(value, sep, tag)
        else:
            yield tag, value
