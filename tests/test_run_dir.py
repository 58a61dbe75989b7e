"""Tests for `sailor_jax.run.run_dir`: which folders a run may use, and the one-line refusals."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading

import pytest

from sailor_jax.errors import UserError
from sailor_jax.run import run_dir


@dataclasses.dataclass(frozen=True)
class _Inner:
    lr: float = 0.1


@dataclasses.dataclass(frozen=True)
class _Cfg:
    a: int = 1
    b: tuple[float, ...] = (0.5, float("nan"))
    inner: _Inner = _Inner()


def _listing(folder) -> dict[str, bytes]:
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            files[os.path.relpath(path, folder)] = open(path, "rb").read()
    return files


def _start(out: str, step: int = 1) -> None:
    os.makedirs(os.path.join(out, "checkpoints", str(step)))


def test_fresh_folder_gets_config_json(tmp_path):
    out = str(tmp_path / "a" / "run")
    config = run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    assert config == {"a": 1, "b": [0.5, None], "inner": {"lr": 0.1}}  # NaN -> null
    assert json.load(open(os.path.join(out, "config.json"))) == config


def test_unstarted_folder_without_judge_records_is_reused_and_its_logs_removed(tmp_path):
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    open(os.path.join(out, "metrics.jsonl"), "w").write("{}\n")
    open(os.path.join(out, "llm.jsonl"), "w").write("")  # created, nothing judged yet
    os.makedirs(os.path.join(out, "tb"))
    open(os.path.join(out, "notes.txt"), "w").write("mine")  # not the run's: kept
    config = run_dir.prepare_out_dir(out, _Cfg(a=5), resume=False)  # another config is fine
    assert config["a"] == 5 and json.load(open(os.path.join(out, "config.json")))["a"] == 5
    assert sorted(os.listdir(out)) == ["config.json", "notes.txt"]
    assert run_dir.prepare_out_dir(out, _Cfg(a=5), resume=True) == config  # resume from nothing


@pytest.mark.parametrize("resume", [False, True])
def test_unstarted_folder_with_judge_records_is_refused_and_kept(tmp_path, resume):
    """A run killed before its first checkpoint keeps its judge records."""
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    open(os.path.join(out, "llm.jsonl"), "w").write('{"iteration": 0}\n' * 3)
    open(os.path.join(out, "metrics.jsonl"), "w").write('{"segment": 0}\n')
    before = _listing(out)
    with pytest.raises(UserError) as error:
        run_dir.prepare_out_dir(out, _Cfg(), resume=resume)
    message = str(error.value)
    assert "\n" not in message and "llm.jsonl: 3 records" in message
    assert ("metrics.jsonl: 1 record," in message) == resume  # --resume names every log
    assert _listing(out) == before


def test_resume_with_logs_but_no_checkpoint_is_refused(tmp_path):
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    open(os.path.join(out, "metrics.jsonl"), "w").write('{"segment": 0}\n')
    before = _listing(out)
    with pytest.raises(UserError, match=r"--resume: .* holds logs \(metrics.jsonl: 1 record\) "
                       r"but no checkpoint .*drop --resume"):
        run_dir.prepare_out_dir(out, _Cfg(), resume=True)
    assert _listing(out) == before


@pytest.mark.parametrize("finished", [False, True])
def test_started_run_is_refused_without_resume_and_nothing_changes(tmp_path, finished):
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    _start(out, 3)
    if finished:
        open(os.path.join(out, "results.json"), "w").write("{}")
    open(os.path.join(out, "metrics.jsonl"), "w").write("{}\n")
    before = _listing(out)
    state = "finished" if finished else "checkpoint of segment 3"
    with pytest.raises(UserError, match=rf"already holds a run \({state}\).*--resume"):
        run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    assert _listing(out) == before
    assert run_dir.prepare_out_dir(out, _Cfg(), resume=True)["a"] == 1
    assert _listing(out) == before  # resuming a started run rewrites nothing here


def test_resume_names_every_differing_field(tmp_path):
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    _start(out)
    with pytest.raises(UserError) as error:
        run_dir.prepare_out_dir(out, _Cfg(a=2, inner=_Inner(lr=0.5)), resume=True)
    message = str(error.value)
    assert "config differs" in message and "\n" not in message
    assert "a: saved 1, given 2" in message and "inner.lr: saved 0.1, given 0.5" in message
    assert "b:" not in message  # equal fields are not listed


def test_config_differences_lists_added_and_removed_fields():
    diff = run_dir.config_differences({"x": 1, "y": {"z": 2}}, {"x": 1, "y": {"w": 2}})
    assert diff == ["y.w: saved (absent), given 2", "y.z: saved 2, given (absent)"]


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_resume_without_a_run_is_an_error(tmp_path, make):
    out = tmp_path / "nothing"
    if make == "empty":
        out.mkdir()
    with pytest.raises(UserError, match="--resume: .* holds no run"):
        run_dir.prepare_out_dir(str(out), _Cfg(), resume=True)
    assert not (out / "config.json").exists()


def test_out_under_a_file_or_read_only_folder_is_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="is a file, not a folder"):
        run_dir.prepare_out_dir(str(blocker / "run"), _Cfg(), resume=False)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: permissions are not enforced")
        with pytest.raises(UserError, match="cannot create it .Permission denied"):
            run_dir.prepare_out_dir(str(locked / "run"), _Cfg(), resume=False)
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o700)


UNCREATABLE = {
    "/proc/nonexistent/run": "cannot create /proc/nonexistent (No such file or directory) "
                             "(choose a folder you can write to)",
    "/proc/run": "cannot create it (No such file or directory) (choose a folder you can "
                 "write to)",
}
"""Folders no one can create, root included (`os.access` says yes to root): the line."""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("out", list(UNCREATABLE))
def test_out_that_cannot_be_created_is_one_line(out):
    """Checked by creating it, before the lock or anything is written."""
    with pytest.raises(UserError) as error:
        run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    assert str(error.value) == f"--out {out}: {UNCREATABLE[out]}"


def test_out_with_an_over_long_name_is_one_line_and_leaves_nothing(tmp_path):
    """A name over NAME_MAX (255 bytes here) fails; the parents made to probe are removed."""
    out = str(tmp_path / "new" / ("x" * 300) / "run")
    with pytest.raises(UserError) as error:
        run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    assert str(error.value) == (f"--out {out}: cannot create {tmp_path / 'new' / ('x' * 300)}"
                                " (File name too long) (use folder names of at most 255 bytes)")
    assert os.listdir(tmp_path) == []


def test_an_existing_folder_no_file_can_be_written_in_is_one_line():
    """/sys refuses new files even to root: the probe file finds it, not `os.access`."""
    if not os.path.isdir("/sys"):
        pytest.skip("needs Linux's /sys")
    with pytest.raises(UserError, match=r"^--out /sys: cannot write a file in it \("):
        run_dir.check_writable("/sys")


def test_writable_out_is_probed_and_left_as_it_was(tmp_path):
    run_dir.check_writable(str(tmp_path / "a" / "b"))
    assert os.listdir(tmp_path) == []
    (tmp_path / "kept").mkdir()
    run_dir.check_writable(str(tmp_path / "kept"))
    assert os.listdir(tmp_path / "kept") == []


def test_parent_created_by_a_run_beside_is_used_as_it_is(tmp_path, monkeypatch):
    """Runs started side by side into sibling folders of one missing parent (seen on the GPU
    machine: `cannot create /tmp/g/s16 (File exists)`): a parent another process made first
    is used, and left to it."""
    real_mkdir, calls = os.mkdir, []

    def other_run_first(folder, *args):
        calls.append(folder)
        if len(calls) == 1:
            real_mkdir(folder)  # the other process wins the race
            raise FileExistsError(17, "File exists", folder)
        real_mkdir(folder, *args)

    monkeypatch.setattr(run_dir.os, "mkdir", other_run_first)
    run_dir.check_writable(str(tmp_path / "group" / "arm"))
    assert calls == [str(tmp_path / "group"), str(tmp_path / "group" / "arm")]
    assert os.listdir(tmp_path) == ["group"] and os.listdir(tmp_path / "group") == []


def test_parent_removed_by_a_run_beside_is_tried_again(tmp_path, monkeypatch):
    """The other run removes the shared parent it made for its probe while this one creates
    its folder in it: the probe is tried again, and fails only after PROBE_ATTEMPTS tries."""
    real_mkdir, removed = os.mkdir, []

    def parent_removed_once(folder, *args):
        if folder.endswith("arm") and not removed:
            removed.append(os.path.dirname(folder))
            os.rmdir(os.path.dirname(folder))
        real_mkdir(folder, *args)

    monkeypatch.setattr(run_dir.os, "mkdir", parent_removed_once)
    run_dir.check_writable(str(tmp_path / "group" / "arm"))
    assert removed == [str(tmp_path / "group")] and os.listdir(tmp_path) == []


def test_sibling_folders_probed_at_once_all_pass(tmp_path):
    """16 threads probe sibling folders under one missing parent at the same moment."""
    barrier, failures = threading.Barrier(16), []

    def probe(i):
        barrier.wait()
        try:
            run_dir.check_writable(str(tmp_path / "group" / "sub" / f"arm{i}"))
        except UserError as error:
            failures.append(str(error))

    threads = [threading.Thread(target=probe, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize("content, why", [
    (b"{not json", "Expecting property name"),
    (b'{"a": 1, "b": "caf\xc3', "can't decode byte 0xc3"),  # garbled: raised UnicodeDecodeError
    (b"[1, 2]", "not a JSON object"),
])
def test_unreadable_saved_config_is_a_user_error(tmp_path, content, why):
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_bytes(content)
    with pytest.raises(UserError) as error:
        run_dir.prepare_out_dir(str(out), _Cfg(), resume=True)
    assert str(error.value).startswith(f"--resume: cannot read {out / 'config.json'} (")
    assert why in str(error.value) and "\n" not in str(error.value)


def test_a_failed_write_is_a_user_error(tmp_path, monkeypatch):
    """What a read-only folder does when permission checks pass (e.g. as root)."""
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "makedirs", refuse)
    with pytest.raises(UserError, match=r"cannot write \(Permission denied\)"):
        run_dir.prepare_out_dir(str(tmp_path / "run"), _Cfg(), resume=False)


@pytest.mark.parametrize("lr", [0.1, 0.5])
def test_resume_of_a_run_saved_before_a_field_existed(tmp_path, lr):
    """A field added to the config since the run was saved is no difference at its default
    (the run ran as the default says), and is named when the new run sets another value."""
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, _Cfg(), resume=False)
    _start(out)
    path = os.path.join(out, "config.json")
    saved = json.load(open(path))
    del saved["inner"]["lr"]  # written by code that had no `inner.lr` yet
    open(path, "w").write(json.dumps(saved))
    if lr == 0.1:
        assert run_dir.prepare_out_dir(out, _Cfg(), resume=True)["inner"]["lr"] == 0.1
    else:
        with pytest.raises(UserError, match=r"inner.lr: saved \(absent\), given 0.5"):
            run_dir.prepare_out_dir(out, _Cfg(inner=_Inner(lr=0.5)), resume=True)
    with pytest.raises(UserError, match="a: saved 1, given 2"):  # other fields still count
        run_dir.prepare_out_dir(out, _Cfg(a=2), resume=True)


def test_resume_may_change_how_the_endpoint_is_reached(tmp_path):
    """`RESUMABLE_CHANGES` (the endpoint's URL, retries, token budget) may differ on
    --resume, and config.json then holds the new values; what the judge judges may not."""
    from sailor_jax.config import LLMRankerConfig, RankerConfig, SailorConfig

    def config(**llm):
        llm = {"endpoint": "http://127.0.0.1:8000/v1"} | llm
        return SailorConfig(ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(**llm)))

    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, config(), resume=False)
    _start(out)
    moved = config(endpoint="http://127.0.0.1:8001/v1", max_tokens_per_run=10**6)
    run_dir.prepare_out_dir(out, moved, resume=True)
    saved = run_dir.read_config(os.path.join(out, "config.json"))["ranker"]["llm"]
    assert saved["endpoint"].endswith(":8001/v1") and saved["max_tokens_per_run"] == 10**6
    with pytest.raises(UserError, match="ranker.llm.mode: saved 'pointwise', given 'listwise'"):
        run_dir.prepare_out_dir(out, config(mode="listwise"), resume=True)


@pytest.mark.parametrize("warmup, differs", [(0, False), (8, True)])
def test_a_field_whose_default_changed_reads_as_what_it_ran_at(warmup, differs):
    """A `SailorConfig` saved before `warmup_updates` existed ran no warm-up: under today's
    default of 8 it still matches a config with 0 (`run_dir.ABSENT_MEANS`), not one with 8."""
    from sailor_jax.config import SailorConfig

    cfg = dataclasses.replace(SailorConfig(), warmup_updates=warmup)
    given = json.loads(run_dir.config_json(cfg))
    saved = {k: v for k, v in given.items() if k != "warmup_updates"}
    expected = ["warmup_updates: saved (absent), given 8"] if differs else []
    assert run_dir.config_differences(saved, given, cfg) == expected
    assert run_dir.config_differences({**saved, "warmup_updates": 8}, given, cfg) == (
        [] if differs else ["warmup_updates: saved 8, given 0"])


RETIRED_OFF = {"judged": "windows", "move_boards": 256, "end_windows": 0.0,
               "reference_policy": "expert", "warmup_tau_z": 0.0}
RETIRED_OFF_ALIGNMENT = {"keep_iterations": 0, "keep_decay": 0.8, "heldout_tau_z": 0.0}


def _saved_with_retired(cfg, **on) -> dict:
    """`cfg`'s config.json as a run saved it while the retired options existed: their fields
    at their off values, except those in `on`."""
    saved = json.loads(run_dir.config_json(cfg))
    saved |= RETIRED_OFF | {k: v for k, v in on.items() if k in RETIRED_OFF}
    saved["alignment"] |= RETIRED_OFF_ALIGNMENT | {
        k: v for k, v in on.items() if k in RETIRED_OFF_ALIGNMENT}
    return saved


def test_a_retired_option_at_its_off_value_is_no_difference_and_one_in_use_is_refused(tmp_path):
    """`run_dir.RETIRED`: a config saved with a retired option's field at its off value (any
    value where the field was read only with the option on) resumes and compares as before;
    one that used the option is one UserError naming the field, on --resume as when compared."""
    from sailor_jax.config import SailorConfig

    cfg = SailorConfig()
    given = json.loads(run_dir.config_json(cfg))
    assert run_dir.config_differences(_saved_with_retired(cfg), given, cfg) == []
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, cfg, resume=False)
    _start(out)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(_saved_with_retired(cfg), f)
    run_dir.prepare_out_dir(out, cfg, resume=True)
    for field, value in (("judged", "moves"), ("keep_iterations", 4), ("heldout_tau_z", 1.5),
                         ("warmup_tau_z", 2.0), ("end_windows", 0.25),
                         ("reference_policy", "previous")):
        used = _saved_with_retired(cfg, **{field: value})
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(used, f)
        with pytest.raises(UserError, match=rf"^--resume: the run was saved with "
                                            rf"(alignment\.)?{field}={value!r}, an option that "
                                            "was retired"):
            run_dir.prepare_out_dir(out, cfg, resume=True)
        with pytest.raises(UserError, match=f"{field}={value!r}, an option that was retired"):
            run_dir.config_differences(used, given, cfg)


CONSTANT_SETTINGS = {"alignment": {"bo_acq_optimizer": "sampling", "bo_points": 1000,
                                   "bo_gp_restarts": 0, "bo_gp_fit_maxiter": 10},
                     "preferences": {"tie_tol": 1e-6},
                     "ppo.network": {"line_features": 7, "tuple_features": 3}}
"""Retired fields as a saved run held them at the values the code now runs at (the first
layers' feature counts at any value: only the retired first layers read them)."""


def _saved_with(cfg, changes: dict) -> dict:
    saved = json.loads(run_dir.config_json(cfg))
    for path, fields in changes.items():
        node = saved
        for part in path.split("."):
            node = node[part]
        node |= fields
    return saved


@pytest.mark.parametrize("path, field, value", [
    ("alignment", "bo_acq_optimizer", "lbfgs"), ("alignment", "bo_points", 10000),
    ("alignment", "bo_gp_restarts", 2), ("alignment", "bo_gp_fit_maxiter", None),
    ("preferences", "tie_tol", 1e-3), ("ppo.network", "first_layer", "lines"),
    ("ppo.network", "first_layer", "ntuple")])
def test_settings_made_constants_resume_at_their_value_and_retired_first_layers_are_refused(
        tmp_path, path, field, value):
    """A run saved with a setting that became a constant resumes when it held the constant's
    value, and is one line naming the field otherwise; a saved first layer that was retired
    ("lines", "ntuple") is that same line on --resume, not a config difference."""
    from sailor_jax.config import SailorConfig

    cfg = SailorConfig()
    given = json.loads(run_dir.config_json(cfg))
    assert run_dir.config_differences(_saved_with(cfg, CONSTANT_SETTINGS), given, cfg) == []
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, cfg, resume=False)
    _start(out)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(_saved_with(cfg, CONSTANT_SETTINGS), f)
    run_dir.prepare_out_dir(out, cfg, resume=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(_saved_with(cfg, {**CONSTANT_SETTINGS, path: {field: value}}), f)
    with pytest.raises(UserError, match=rf"^--resume: the run was saved with "
                                        rf"{path}\.{field}={value!r}, an option that was "
                                        r"retired \(CHANGELOG.md, Removed\) "
                                        r"\(use sailor-jax at commit 3263411, "):
        run_dir.prepare_out_dir(out, cfg, resume=True)
RETIRED_LLM = {"view": "summary", "snapshot_every": 20, "pointwise_variants": 1,
               "pointwise_temperature": 1.0, "reuse_prefix": True, "bt_l2": 0.01,
               "top_logprobs": 20, "log_path": None, "max_records": 2000,
               "api_key_env": "OPENAI_API_KEY", "timeout_s": 120.0, "max_retries": 4}
RETIRED_REFINE = {"model": None, "gguf_file": None, "device": "auto", "dtype": "auto",
                  "max_new_tokens": 40}


def _saved_with_retired_llm(cfg, llm: dict | None = None, refine: dict | None = None) -> dict:
    """`cfg`'s config.json as a run saved it while the LLM judge's and refinement's retired
    settings existed: at their defaults, except those in `llm` and `refine` (`"view": None`:
    the field absent, as saved before it existed)."""
    saved = json.loads(run_dir.config_json(cfg))
    saved["ranker"]["llm"] |= RETIRED_LLM | (llm or {})
    saved["refine"] |= RETIRED_REFINE | (refine or {})
    if saved["ranker"]["llm"]["view"] is None:
        del saved["ranker"]["llm"]["view"]
    return saved


def test_retired_llm_settings_resume_as_they_ran_and_the_boards_view_is_refused(tmp_path):
    """A run saved with the LLM judge's and refinement's retired settings at the values the
    code now runs at (or at any value where they only logged or reached the endpoint) compares
    as today's config; an LLM-judged run shown the boards (the `view` field "boards", or
    absent: saved before it existed) or rating several rubrics is refused on --resume with
    one UserError; under another judge the LLM's settings were never read, and without
    refinement its settings, so any value compares as today's."""
    from sailor_jax.config import RankerConfig, RefineConfig, SailorConfig

    llm = dataclasses.replace(SailorConfig(), ranker=RankerConfig(kind="llm"))
    given = json.loads(run_dir.config_json(llm))
    assert run_dir.config_differences(_saved_with_retired_llm(llm), given, llm) == []
    logging_only = {"snapshot_every": 50, "log_path": "x.jsonl", "max_records": 10,
                    "api_key_env": "MY_KEY", "timeout_s": 5.0, "max_retries": 0}
    assert run_dir.config_differences(_saved_with_retired_llm(llm, logging_only), given,
                                      llm) == []
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, llm, resume=False)
    _start(out)
    for changed, shown in (({"view": "boards"}, "'boards'"),
                           ({"view": None}, "'boards' (the field absent"),
                           ({"pointwise_variants": 4}, "4"), ({"bt_l2": 0.1}, "0.1")):
        (field,) = changed
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(_saved_with_retired_llm(llm, changed), f)
        with pytest.raises(UserError, match=rf"^--resume: the run was saved with "
                                            rf"ranker\.llm\.{field}={re.escape(shown)}"):
            run_dir.prepare_out_dir(out, llm, resume=True)
    expert = dataclasses.replace(SailorConfig(), ranker=RankerConfig(kind="expert"))
    unread = _saved_with_retired_llm(expert, {"view": None, "pointwise_variants": 4},
                                     {"model": "other", "max_new_tokens": 8})
    assert run_dir.config_differences(unread, json.loads(run_dir.config_json(expert)),
                                      expert) == []
    refined = dataclasses.replace(expert, refine=RefineConfig(enabled=True))
    with pytest.raises(UserError, match=r"refine\.model='other', an option that was retired"):
        run_dir.config_differences(
            _saved_with_retired_llm(refined, refine={"model": "other"}),
            json.loads(run_dir.config_json(refined)), refined)



def test_a_config_saved_with_the_start_as_theta0_resumes_and_reads_as_start(tmp_path):
    """`run_dir.RENAMED`: the start reward was saved as `theta0` before it had its own name.
    Such a run resumes under the same start (and is refused under another, the difference
    named `start`), a finished one is rebuilt with `start`, and its results' config reads
    `start`."""
    from sailor_jax.config import SailorConfig
    from sailor_jax.run.results import SailorResults
    from sailor_jax.run.trained import config_from_json

    start = (0.5, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, -1.0)
    cfg = SailorConfig(start=start)
    old = json.loads(run_dir.config_json(cfg))
    old["theta0"] = old.pop("start")
    given = json.loads(run_dir.config_json(cfg))
    assert run_dir.config_differences(old, given, cfg) == []
    other = SailorConfig()
    assert run_dir.config_differences(old, json.loads(run_dir.config_json(other)), other) == [
        f"start: saved {list(start)!r}, given None"]
    out = str(tmp_path / "run")
    run_dir.prepare_out_dir(out, cfg, resume=False)
    _start(out)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(old, f)
    run_dir.prepare_out_dir(out, cfg, resume=True)  # no refusal: the same start
    with pytest.raises(UserError, match=r"start: saved"):
        run_dir.prepare_out_dir(out, other, resume=True)
    assert config_from_json(SailorConfig, run_dir.current_config(old)) == cfg
    assert run_dir.renamed_fields({"start": [1.0], "theta0": [2.0]}) == {"start": [1.0]}
    results = SailorResults(config=old, ranker={}, feature_names=[], theta_history=[],
                            iterations=[], evaluation={}, baseline_evaluation=None,
                            env_steps_per_seed=0, timings={})
    path = results.write(str(tmp_path))
    assert SailorResults.load(path).config["start"] == list(start)
    assert "theta0" not in SailorResults.load(path).config
