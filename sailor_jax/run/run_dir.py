"""A run's output folder: check it, write `config.json`, refuse to mix runs. Host-only.

A folder holds a run when it has `config.json`; the run has *started* once it has saved a
checkpoint (`checkpoints/<step>/`) or `results.json`. A folder whose run never saved a
checkpoint is reused by a new run only when its logs hold no judge records (`llm.jsonl`,
`refine.jsonl`: the costly part), and `--resume` into it only when its logs hold no records
at all: nothing a user may want is removed without asking. Every refusal is a `UserError`:
one line saying what is wrong and how to fix it, raised before anything is written.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any

from sailor_jax.config.judge import unread_fields
from sailor_jax.config.llm import ENDPOINT_TRANSPORT_FIELDS
from sailor_jax.errors import MissingFileError, UserError
from sailor_jax.logging import stored_path, to_jsonable
from sailor_jax.run.out_probe import check_writable
from sailor_jax.scale import sharding

RUN_LOGS = ("metrics.jsonl", "llm.jsonl", "refine.jsonl", "tb")
"""What a run writes besides config.json, checkpoints/ and results.json (removed when an
unstarted folder is reused)."""
JUDGE_LOGS = ("llm.jsonl", "refine.jsonl")
"""The logs of the judge and the refinement advisor: a folder holding records in them is
never reused without asking."""


RESUMABLE_CHANGES = tuple(f"ranker.llm.{name}:" for name in ENDPOINT_TRANSPORT_FIELDS)
"""Config fields a `--resume` may change (how to reach an endpoint judge, its token budget);
`config.json` then holds the new values."""


def config_json(config: Any) -> str:
    """The canonical `config.json` text of a run config dataclass (sorted keys)."""
    return json.dumps(to_jsonable(dataclasses.asdict(config)), indent=2, sort_keys=True)


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        flat: dict[str, Any] = {}
        for key, value in tree.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: tree}


ABSENT_MEANS = {"warmup_updates": 0, "alignment.heldout": 0.0,
                "alignment.survival_guard": False, "alignment.survival_floor": None,
                "alignment.mcmc_trust_region": 0.2}
"""Fields added with a behaviour other than their default's, and the value a saved config that
lacks one ran at: `config_json` writes every field, so only a config saved before the field
existed lacks it, and it ran as the code did then (`warmup_updates`: no warm-up; the
alignment fields: the paper's update, whose values were their defaults then)."""


RENAMED = {"theta0": "start"}
"""Fields renamed since runs were saved: `{old dotted name: new name}`. A saved config's old
field is read under its new name (`renamed_fields`), so the run resumes, is reused and is
reported as under today's code (`theta0`: the start reward, now `start`; theta0 names the
baseline reward alone)."""


def renamed_fields(saved: dict) -> dict:
    """A saved config (a `config.json` dict, or `results.json`'s `config`) with its `RENAMED`
    fields under their new names (a copy; a config holding both names keeps the new one's
    value)."""
    out = json.loads(json.dumps(saved))
    for dotted, new in RENAMED.items():
        node, name = _parent(out, dotted), dotted.rsplit(".", 1)[-1]
        if isinstance(node, dict) and name in node:
            value = node.pop(name)
            node.setdefault(new, value)
    return out


ANY = object()
"""A `RETIRED` value: the saved run ran as the code runs now whatever the field held (it was
read only with the retired option on, or only for logging or transport)."""
RETIRED = {"judged": "windows", "move_boards": ANY, "alignment.keep_iterations": 0,
           "alignment.keep_decay": ANY, "alignment.heldout_tau_z": 0, "warmup_tau_z": 0,
           "end_windows": 0, "reference_policy": "expert",
           "ranker.llm.view": "summary", "ranker.llm.snapshot_every": ANY,
           "ranker.llm.pointwise_variants": 1, "ranker.llm.pointwise_temperature": 1.0,
           "ranker.llm.reuse_prefix": True, "ranker.llm.bt_l2": 0.01,
           "ranker.llm.top_logprobs": 20, "ranker.llm.log_path": ANY,
           "ranker.llm.max_records": ANY, "ranker.llm.api_key_env": ANY,
           "ranker.llm.timeout_s": ANY, "ranker.llm.max_retries": ANY,
           "refine.model": None, "refine.gguf_file": None, "refine.device": "auto",
           "refine.dtype": "auto", "refine.max_new_tokens": 40,
           "alignment.bo_acq_optimizer": "sampling", "alignment.bo_points": 1000,
           "alignment.bo_gp_restarts": 0, "alignment.bo_gp_fit_maxiter": 10,
           "preferences.tie_tol": 1e-6, "ppo.network.line_features": ANY,
           "ppo.network.tuple_features": ANY, "alignment.acq_func": "gp_hedge",
           "alignment.mcmc_chains": 4, "alignment.mcmc_step": 0.05,
           "alignment.heldout_z": 1.0, "eval.greedy": True, "reference_epsilon": 0.5,
           "ranker.llm.concurrency": ANY, "ranker.llm.seed": 0,
           "ranker.temperature": 0.0}
"""Fields of options and settings that were measured, not adopted and removed, or became
constants (CHANGELOG.md, "Removed"), and the value at which a saved config ran as
the code runs now (`ANY`: any value). A field the saved run's judge never read
(`config.judge.unread_fields`: the LLM's under another judge), or a refinement field of a run
without refinement, is not checked."""
RETIRED_ABSENT = {"ranker.llm.view": ("snapshot_every", "boards")}
"""Retired fields added with a behaviour other than their off value's: `(sibling, value)`, a
saved config that holds the sibling field (which every config held until the field was
retired) but lacks this one was saved before the field existed and ran at `value` (the LLM
judge was shown the boards); today's configs hold neither."""
RETIRED_VALUES = {"ppo.network.first_layer": ("lines", "ntuple")}
"""Values of kept fields that named a retired option: a saved config holding one is refused."""
RETIRED_IN = "3263411"
"""The last commit of sailor-jax that has the `RETIRED` options."""


def _unread(saved: dict) -> list[str]:
    """Dotted prefixes of `saved` (a config.json dict) its run never read: the judge's
    `unread_fields`, and `refine` when refinement was off."""
    ranker, refine = saved.get("ranker"), saved.get("refine")
    unread = [f"ranker.{name}" for name in unread_fields(ranker["kind"])] \
        if isinstance(ranker, dict) and "kind" in ranker else []
    return unread + (["refine"] if isinstance(refine, dict) and not refine.get("enabled")
                     else [])


def _parent(tree: Any, dotted: str) -> Any:
    """The dict that holds field `dotted` in the nested dict `tree` (None where a parent is
    missing or not a dict)."""
    for parent in dotted.split(".")[:-1]:
        tree = tree.get(parent) if isinstance(tree, dict) else None
    return tree


def _retired_error(flag: str, what: str) -> UserError:
    """The one line that refuses a saved run which used a retired option."""
    return UserError(f"{flag}the run was saved with {what}, an option that was retired "
                     "(CHANGELOG.md, Removed)",
                     f"use sailor-jax at commit {RETIRED_IN}, which has that option")


def current_config(saved: dict, flag: str = "") -> dict:
    """A saved config (a `config.json` dict) without its `RETIRED` fields and with its
    `RENAMED` ones under their new names (a copy).

    Raises:
      UserError: a retired field its run read holds a value other than its off one (a field
        of `RETIRED_ABSENT` a config saved before it existed lacks holds the value given
        there), or a kept field holds one of its `RETIRED_VALUES`: the run used an option
        this code no longer has (the line starts with `flag`, e.g. `--resume: `).
    """
    out = renamed_fields(saved)
    unread = _unread(out)
    for dotted, off in RETIRED.items():
        name = dotted.rsplit(".", 1)[-1]
        node, before = _parent(out, dotted), _parent(saved, dotted)
        sibling, absent_value = RETIRED_ABSENT.get(dotted, (None, None))
        absent = isinstance(before, dict) and name not in before and sibling in before
        if not isinstance(node, dict) or (name not in node and not absent):
            continue
        value = absent_value if absent else node.pop(name)
        if off is ANY or value == off or any(dotted.startswith(f"{u}.") for u in unread):
            continue
        raise _retired_error(flag, f"{dotted}={value!r}" + (
            " (the field absent: saved before it existed)" if absent else ""))
    for dotted, values in RETIRED_VALUES.items():
        node, name = _parent(out, dotted), dotted.rsplit(".", 1)[-1]
        if isinstance(node, dict) and node.get(name) in values:
            raise _retired_error(flag, f"{dotted}={node[name]!r}")
    return out


def _default_json(config: Any, dotted: str) -> Any:
    """The JSON of the dataclass default of field `dotted` of `config` (`ABSENT_MEANS` for a
    field whose default changed since it was added); a sentinel if the path leaves the
    dataclasses or the field has no default."""
    if dotted in ABSENT_MEANS:
        return ABSENT_MEANS[dotted]
    *parents, name = dotted.split(".")
    for parent in parents:
        config = getattr(config, parent, None)
    fields = {f.name: f for f in dataclasses.fields(config)} \
        if dataclasses.is_dataclass(config) else {}
    field = fields.get(name)
    if field is None or field.default is dataclasses.MISSING:
        return _NO_DEFAULT
    return json.loads(json.dumps(to_jsonable(field.default)))


_NO_DEFAULT = object()


def config_differences(saved: dict, given: dict, config: Any = None) -> list[str]:
    """`"field: saved X, given Y"` for every dotted field where two configs differ.

    A `RETIRED` field the saved config holds at its off value is no difference (the saved
    run ran as this code does); at another value it raises (`current_config`). With `config`
    (the dataclass `given` was written from), a field the saved config lacks and `config`
    holds at its default is no difference: a run saved before that field existed ran as its
    default says (or as `ABSENT_MEANS` says, for a default changed since), so it resumes under
    newer code. Nor is a field its judge never reads (`RankerConfig.unread_fields`: the
    expert's verdict under an LLM judge), nor a comparison that resolves the same under
    `config`'s judge (`preferences.compare` "auto" and "sum" under an LLM judge:
    `RankerConfig.aggregate`).

    Raises:
      UserError: `saved` used a retired option (`current_config`).
    """
    a, b = _flatten(current_config(saved)), _flatten(given)
    missing = object()
    ranker = getattr(config, "ranker", None)
    unread = {f"ranker.{name}" for name in getattr(ranker, "unread_fields", tuple)()}
    compare = "preferences.compare"
    if (hasattr(ranker, "aggregate") and compare in a and compare in b
            and {a[compare], b[compare]} - {"auto"} == {ranker.aggregate}):
        unread.add(compare)  # "auto" resolves to the other side's comparison under this judge
    return [f"{key}: saved {a.get(key, missing)!r}, given {b.get(key, missing)!r}"
            .replace(repr(missing), "(absent)")
            for key in sorted(set(a) | set(b)) if a.get(key, missing) != b.get(key, missing)
            and not any(key == u or key.startswith(f"{u}.") for u in unread)
            and not (key not in a and config is not None
                     and _default_json(config, key) == b[key])]


def read_config(path: str, flag: str = "") -> dict:
    """The saved `config.json` at `path`, as a dict.

    Raises:
      UserError: it cannot be read, is not JSON in UTF-8 (garbled bytes) or not an object;
        the line starts with `flag` (e.g. `--resume: `).
    """
    try:
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError) as error:  # ValueError: JSONDecodeError, UnicodeDecodeError
        raise UserError(f"{flag}cannot read {path} ({error})", "choose another --out") from None
    if not isinstance(saved, dict):
        raise UserError(f"{flag}cannot read {path} (not a JSON object)", "choose another --out")
    return saved


def saved_steps(out_dir: str) -> list[int]:
    """Checkpoint steps saved under `out_dir/checkpoints` (numeric folder names), sorted."""
    folder = os.path.join(out_dir, "checkpoints")
    if not os.path.isdir(folder):
        return []
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit())


def run_started(out_dir: str) -> bool:
    """True if the run in `out_dir` saved a checkpoint or its results."""
    return bool(saved_steps(out_dir)) or os.path.exists(os.path.join(out_dir, "results.json"))


def finished(out_dir: str) -> bool:
    """True if the run in `out_dir` wrote its `results.json` (or holds it compressed)."""
    return os.path.exists(stored_path(os.path.join(out_dir, "results.json")))


def unfinished_error(out_dir: str, then: str, script: str = "experiments/sailor.py"
                     ) -> MissingFileError:
    """The one-line error for a run folder (of `script`, default a SAILOR run) that holds a
    run with no results yet: its newest checkpoint, and that `script ... --resume` finishes
    it, then `then`."""
    steps = saved_steps(out_dir)
    state = f"checkpoint of segment {steps[-1]}" if steps else "no checkpoint yet"
    return MissingFileError(
        f"{out_dir} holds a run that has not finished (no results.json; {state})",
        f"--resume finishes it: python {script} with the flags that started "
        f"it, then --out {out_dir} --resume; then {then}")


def log_records(out_dir: str) -> dict[str, int]:
    """`{log name: non-empty lines}` of every `*.jsonl` log of `RUN_LOGS` in `out_dir` that
    holds any."""
    counts = {}
    for name in RUN_LOGS:
        path = os.path.join(out_dir, name)
        if name.endswith(".jsonl") and os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                count = sum(1 for line in f if line.strip())
            if count:
                counts[name] = count
    return counts


def _describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{name}: {n} record{'s' * (n != 1)}" for name, n in counts.items())


def restart_advice(out_dir: str) -> str:
    """How to go on after a run in `out_dir` stopped before its first checkpoint (nothing to
    continue from): run the same command again without `--resume`, which starts over there,
    unless its judge logs hold records (`check_out_dir` keeps those): then with another
    `--out`, or once those logs are moved away."""
    judged = [name for name in log_records(out_dir) if name in JUDGE_LOGS]
    if judged:
        return (f"run the same command again with another --out, or move {' and '.join(judged)}"
                f" out of {out_dir} first (nothing was saved to continue from)")
    return "run the same command again without --resume: it starts over there"


def _check_unstarted(out_dir: str, resume: bool) -> None:
    """Refuse to reuse a folder without a checkpoint whose logs a user may want."""
    counts = log_records(out_dir)
    judged = {name: n for name, n in counts.items() if name in JUDGE_LOGS}
    if resume and counts:
        fix = ("move those logs away (or choose another --out) to start over there"
               if judged else "drop --resume to start over there (its logs are replaced), "
               "or choose another --out")
        raise UserError(f"--resume: {out_dir} holds logs ({_describe(counts)}) but no "
                        "checkpoint to continue from", fix)
    if judged:
        raise UserError(f"{out_dir} holds judge records of a run that saved no checkpoint "
                        f"({_describe(judged)})",
                        "choose another --out, or move those logs away to start over there")


def check_out_dir(out_dir: str, config: Any, resume: bool) -> None:
    """Raise `UserError` if running `config` into `out_dir` would mix or lose runs.

    Raises:
      UserError: `resume` and `out_dir` holds no run; `out_dir` holds a started run and
        not `resume`; `resume` and the saved config differs in a field other than
        `RESUMABLE_CHANGES` (every differing field named), or the saved run used a retired
        option (`current_config`);
        the run saved no checkpoint and its logs hold judge records, or any records when
        `resume`; `out_dir` cannot be written.
    """
    path = os.path.join(out_dir, "config.json")
    if not os.path.exists(path):
        if resume:
            raise UserError(f"--resume: {out_dir} holds no run (no config.json)",
                            "check --out, or drop --resume to start a new run there")
        check_writable(out_dir)
        return
    if not resume and run_started(out_dir):
        state = "finished" if os.path.exists(os.path.join(out_dir, "results.json")) \
            else f"checkpoint of segment {saved_steps(out_dir)[-1]}"
        raise UserError(f"{out_dir} already holds a run ({state})",
                        "pass --resume to continue it, or choose another --out")
    if resume:
        saved = current_config(read_config(path, "--resume: "), "--resume: ")
        differences = [d for d in config_differences(saved, json.loads(config_json(config)),
                                                      config)
                       if not d.startswith(RESUMABLE_CHANGES)]
        if differences:
            raise UserError(f"--resume: the config differs from {path}: "
                            + "; ".join(differences),
                            "rerun with the original flags, or choose another --out")
    if not run_started(out_dir):
        _check_unstarted(out_dir, resume)
    check_writable(out_dir)


def _write(out_dir: str, text: str) -> None:
    """Create `out_dir`, remove an unstarted run's logs, write config.json (process 0)."""
    try:
        os.makedirs(out_dir, exist_ok=True)
        for name in RUN_LOGS:
            target = os.path.join(out_dir, name)
            if os.path.isdir(target):
                shutil.rmtree(target)
            elif os.path.exists(target):
                os.remove(target)
        with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as error:
        raise UserError(f"--out {out_dir}: cannot write ({error.strerror or error})",
                        "choose a folder you can write to") from None


def prepare_out_dir(out_dir: str, config: Any, resume: bool) -> dict:
    """Check `out_dir` (`check_out_dir`), write `config.json`; return the config as JSON.

    A folder whose run never started (and holds no judge records, see `check_out_dir`) is
    reused: its config.json is rewritten and its logs removed. The caller holds the folder's
    lock (`run_guard.claim_out_dir`). In a multi-process run every process checks the
    folder as it was before this run (a barrier first: otherwise a slower process would
    find process 0's fresh config.json), then process 0 alone writes.

    Raises:
      UserError: as `check_out_dir`, or the folder cannot be written.
    """
    text = config_json(config)
    sharding.barrier("prepare_out_dir: check")
    check_out_dir(out_dir, config, resume)
    if sharding.is_main_process() and not run_started(out_dir):
        _write(out_dir, text)
    elif sharding.is_main_process() and resume:  # a changed RESUMABLE_CHANGES field is kept
        path = os.path.join(out_dir, "config.json")
        with open(path, encoding="utf-8") as f:
            changed = f.read() != text
        if changed:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    sharding.barrier("prepare_out_dir: written")
    return json.loads(text)
