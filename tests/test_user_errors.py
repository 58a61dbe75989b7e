"""Every user mistake ends as one `error: <what> (<how to fix>)` line, exit 2,
before anything is written; `--debug` / SAILOR_DEBUG=1 bring the traceback back."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from support import ROOT, load_script

from sailor_jax import errors
from sailor_jax.errors import UserError
from sailor_jax.judges import endpoint, model_source
from sailor_jax.run import run_dir

# ------------------------------------------------------------------- the reporting path


def _raise_user_error(argv):
    raise UserError("--thing 3: too big", "use 2")


def test_user_error_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(_raise_user_error, ["--x"])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert err == "error: --thing 3: too big (use 2)\n" and out == ""


def test_debug_flag_or_env_shows_the_traceback(monkeypatch):
    seen = []
    with pytest.raises(UserError):
        errors.report_user_errors(lambda argv: seen.append(argv) or _raise_user_error(argv),
                                  ["--a", "--debug"])
    assert seen == [["--a"]]  # --debug never reaches the parser
    monkeypatch.setenv(errors.DEBUG_ENV, "1")
    with pytest.raises(UserError):
        errors.report_user_errors(_raise_user_error, [])


def test_bugs_keep_their_traceback():
    def bug(argv):
        raise KeyError("a real bug")

    with pytest.raises(KeyError):
        errors.report_user_errors(bug, [])


def test_sigterm_is_one_line_exit_143_and_the_handler_is_restored(capsys):
    """SIGTERM outside a run is `error: terminated`, exit 128 + SIGTERM."""
    before, seen = signal.getsignal(signal.SIGTERM), []

    def main(argv):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)  # the handler raises before this ends
        except errors.Terminated:
            seen.append(signal.getsignal(signal.SIGTERM))  # a second SIGTERM kills at once
            raise

    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(main, [])
    assert exit_.value.code == errors.TERMINATE_STATUS == 143
    assert capsys.readouterr().err == "error: terminated\n"
    assert seen == [signal.SIG_DFL] and signal.getsignal(signal.SIGTERM) == before


def test_stops_held_delivers_sigterm_after_the_block(capsys):
    """A SIGTERM during `stops_held` (a checkpoint being written) waits until the block has
    finished, then acts as it would have: one line, exit 143; the handlers come back."""
    before, done = signal.getsignal(signal.SIGTERM), []

    def main(argv):
        with errors.stops_held():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            done.append("block finished")
        done.append("after the block")  # not reached: the held SIGTERM is raised first

    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(main, [])
    assert exit_.value.code == 143 and done == ["block finished"]
    assert capsys.readouterr().err == "error: terminated\n"
    assert signal.getsignal(signal.SIGTERM) == before


def test_stops_held_lets_a_second_ctrl_c_through():
    """Ctrl-C is held too, but a second one does not wait; the block's handlers go away."""
    before, done = signal.getsignal(signal.SIGINT), []
    with pytest.raises(KeyboardInterrupt):
        with errors.stops_held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("first held")
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(10)  # the second raises before this ends
    assert done == ["first held"] and signal.getsignal(signal.SIGINT) == before


def test_stops_held_without_a_signal_changes_nothing():
    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    with errors.stops_held():
        value = 1
    assert value == 1 and [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == before


def test_missing_file_error_is_both_kinds():
    error = errors.MissingFileError("no x", "make x")
    assert isinstance(error, FileNotFoundError) and isinstance(error, ValueError)
    assert str(error) == "no x (make x)"


# ------------------------------------------------------------------- the model check


def test_model_folder_checks(tmp_path):
    with pytest.raises(UserError, match="no such folder"):
        model_source.check_model_source(str(tmp_path / "missing"), None)
    with pytest.raises(UserError, match="no such folder"):
        model_source.check_model_source("./relative/model", None)
    with pytest.raises(UserError, match="has no config.json"):
        model_source.check_model_source(str(tmp_path), None)
    with pytest.raises(UserError, match="has no judge.gguf"):
        model_source.check_model_source(str(tmp_path), "judge.gguf")
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    model_source.check_model_source(str(tmp_path), None)


@pytest.mark.parametrize("text, match", [
    ("{not json", r"cannot read .*config.json \(JSONDecodeError"),
    ("[1, 2]", "not a model config"),
    ("{}", "names no model_type nor architectures"),
    ('{"architectures": ["BertForMaskedLM"], "model_type": "bert"}',
     "is a BertForMaskedLM, not a causal language model"),
])
def test_model_config_must_parse_and_be_a_causal_lm(tmp_path, text, match):
    """Caught before the run starts, not after compiling and loading."""
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(UserError, match=match):
        model_source.check_model_source(str(tmp_path), None)
    (tmp_path / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}')
    model_source.check_model_source(str(tmp_path), None)
    model_source.check_model_source(None, None)  # the embedded model (installed for tests)


def test_tiny_llm_folder_passes(tiny_llm_dir):
    model_source.check_model_source(tiny_llm_dir, None)


def test_hub_ids_offline_and_online(monkeypatch):
    with pytest.raises(UserError, match="not a local folder nor a Hugging Face model id"):
        model_source.check_model_source("bad name!", None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="not in the local Hugging Face cache.*hf download"):
        model_source.check_model_source("no-such-org/no-such-model", None)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    def raising(error_type):
        def model_info(self, repo_id, timeout=None):
            raise error_type.__new__(error_type)
        return model_info

    for error_type, match in ((RepositoryNotFoundError, "no such model on the Hugging Face"),
                              (GatedRepoError, "gated model"),
                              (ConnectionError, "cannot reach the Hugging Face Hub")):
        monkeypatch.setattr(huggingface_hub.HfApi, "model_info", raising(error_type))
        with pytest.raises(UserError, match=match):
            model_source.check_model_source("no-such-org/no-such-model", None)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", lambda self, r, timeout=None: {})
    model_source.check_model_source("some-org/some-model", None)  # exists on the Hub


# --------------------------------------------------- the CLIs, in-process (the user-error cases)


def _listing(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, n), folder)
                  for r, dirs, names in os.walk(folder) for n in names + dirs)


def _started_run(out, cfg) -> None:
    run_dir.prepare_out_dir(str(out), cfg, resume=False)
    os.makedirs(out / "checkpoints" / "1")


@pytest.fixture(scope="module")
def scripts():
    return {name: load_script(f"experiments/{name}.py")
            for name in ("sailor", "train_ppo", "compare", "plot", "transfer_dqn")}


def _entry(scripts, name):
    module = scripts[name]
    if name == "train_ppo":
        return lambda argv: module.main(module.parse(argv))
    return module.main


LLM = ["--sailor.ranker.kind", "llm"]
"""The LLM judge (the default preset's judge is the expert)."""

CASES = {
    "an LLM setting for the expert": ("sailor", ["--sailor.ranker.llm.model", "m", "--out", "o"],
                                      r"^error: --sailor\.ranker\.llm\.model is an LLM judge's "
                                      r"setting, but the judge is expert \(the smoke preset\) "
                                      r"\(add --sailor\.ranker\.kind llm\)$"),
    "an LLM setting, the expert asked for": (
        "sailor", ["cpu", "--sailor.ranker.kind", "expert", "--sailor.ranker.llm.batch-size=4",
                   "--out", "o"], r"^error: --sailor\.ranker\.llm\.batch-size is an LLM judge's "
        r"setting, but the judge is expert \(--sailor\.ranker\.kind expert\) \(add "),
    "model folder missing": ("sailor", [*LLM, "--sailor.ranker.llm.model", "/nonexistent/model",
                                        "--out", "o"], "no such folder"),
    "hub id, offline": ("sailor", [*LLM, "--sailor.ranker.llm.model", "no-such-org/no-such-model",
                                   "--out", "o"], "not in the local Hugging Face cache"),
    "model config unreadable": ("sailor", [*LLM, "--sailor.ranker.llm.model", "./badconfig",
                                           "--out", "o"], "cannot read ./badconfig/config"),
    "model not causal": ("sailor", [*LLM, "--sailor.ranker.llm.model", "./bert", "--out", "o"],
                         "is a BertForMaskedLM, not a causal language model"),
    "seeds beyond memory": ("sailor", ["--sailor.num-seeds", "100000", "--out", "o"],
                            r"200000 rows do not fit in memory: the training state needs "
                            r".*GiB \(lower --sailor.ppo.num-envs .* or --sailor.num-seeds\)"),
    "envs beyond memory": ("sailor", ["--sailor.ppo.num-envs", "100000000", "--out", "o"],
                           r"rows do not fit in memory.*lower --sailor.ppo.num-envs"),
    "train_ppo envs beyond memory": ("train_ppo", ["--train.ppo.num-envs", "100000000",
                                                   "--out", "o"],
                                     r"do not fit in memory.*lower --train.ppo.num-envs"),
    "resume, no folder": ("sailor", ["--resume", "--out", "nothere"], "holds no run"),
    "finished run": ("sailor", ["--out", "finished"], r"already holds a run \(finished\)"),
    "resume, other config": ("sailor", ["--resume", "--out", "started", "--sailor.iterations",
                                        "3", "--sailor.seed", "7"],
                             "iterations: saved 2, given 3; seed: saved 0, given 7"),
    "devices": ("sailor", ["--devices", "64", "--out", "o"], "--devices must be in 1.."),
    "train_ppo resume": ("train_ppo", ["--resume", "--out", "nothere"], "holds no run"),
    "unknown arm": ("compare", ["--arms", "nope", "--out", "o"], "unknown arm"),
    "repeated arm": ("compare", ["--arms", "fixed", "fixed", "--out", "o"],
                         "repeats a name"),
    "no blocks": ("compare", ["--blocks", "0", "--out", "o"], "--blocks must be at least 1"),
    "no resamples": ("compare", ["--resamples", "0", "--out", "o"],
                     "--resamples must be at least 1"),
    "plot, not a run": ("plot", ["empty"], "no results.json in empty"),
    # An unfinished run or comparison says what finishes it.
    "plot, unfinished run": ("plot", ["started"], re.escape(
        "error: started holds a run that has not finished (no results.json; checkpoint of "
        "segment 1) (--resume finishes it: python experiments/sailor.py with the flags that "
        "started it, then --out started --resume; then plot)")),
    "plot, unfinished comparison": ("plot", ["ablation"], re.escape(
        f"error: no variant in {os.path.join('ablation', 'variants')} has finished (started: "
        "theta0.sailor) (run the command that started them again: it resumes them, then "
        "plot)")),
    "transfer, not a run": ("transfer_dqn", ["--sailor-results", "empty", "--out", "o"],
                            "no SAILOR results.json"),
    "transfer, unfinished run": ("transfer_dqn", ["--sailor-results", "started", "--out", "o"],
                                 re.escape(
        "error: started holds a run that has not finished (no results.json; checkpoint of "
        "segment 1) (--resume finishes it: python experiments/sailor.py with the flags that "
        "started it, then --out started --resume; then run this command again)")),
    # --out is created (and a file written in it) to check it, root or not.
    "out under /proc": ("sailor", ["--out", "/proc/nonexistent/run"],
                        r"^error: --out /proc/nonexistent/run: cannot create /proc/nonexistent "
                        r"\(No such file or directory\) \(choose a folder you can write to\)"),
    "train_ppo out under /proc": ("train_ppo", ["--out", "/proc/run"],
                                  r"^error: --out /proc/run: cannot create it"),
    "compare out under /proc": ("compare", ["--out", "/proc/nonexistent/run"],
                                  r"^error: --out /proc/nonexistent/run: cannot create"),
    "out name too long": ("sailor", ["--out", "new/" + "x" * 300],
                          r"^error: --out new/x{300}: cannot create it \(File name too long\) "
                          r"\(use folder names of at most 255 bytes\)"),
    "train_ppo out name too long": ("train_ppo", ["--out", "x" * 300 + "/run"],
                                    r"File name too long.*at most 255 bytes"),
    # Nothing listening at the judge's endpoint, checked at start-up.
    "dead endpoint": ("sailor", [*LLM, "--sailor.ranker.llm.endpoint", "http://127.0.0.1:9/v1",
                                 "--out", "o"],
                      r"^error: judge endpoint http://127\.0\.0\.1:9/v1 cannot be reached after "
                      r"\d+ retries: "
                      r"APIConnectionError.*\(start the server or correct the URL, then "
                      r"rerun\)$"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cli_user_mistakes_are_one_line(case, scripts, tmp_path, monkeypatch, capsys):
    name, argv, match = CASES[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    monkeypatch.setattr(endpoint, "MAX_RETRIES", 1)  # a dead endpoint: one retry, not four
    (tmp_path / "empty").mkdir()
    for folder, text in (("badconfig", '{"model_type": "llama",'),
                         ("bert", '{"architectures": ["BertForMaskedLM"]}')):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "config.json").write_text(text)
    smoke = scripts["sailor"].PRESETS["smoke"]
    _started_run(tmp_path / "started", smoke)
    _started_run(tmp_path / "ablation" / "variants" / "theta0.sailor", smoke)
    _started_run(tmp_path / "finished", smoke)
    (tmp_path / "finished" / "results.json").write_text(json.dumps({}))
    before = _listing(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(_entry(scripts, name), argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert re.search(match, err), err
    assert _listing(tmp_path) == before  # nothing written


@pytest.mark.parametrize(("name", "stop", "status"), [
    ("compare", errors.Terminated("terminated"), errors.TERMINATE_STATUS),
    ("theta_search", KeyboardInterrupt(), errors.INTERRUPT_STATUS),
    ("compare", KeyboardInterrupt(), errors.INTERRUPT_STATUS),
])
def test_clis_that_resume_by_rerunning_say_so_when_stopped(name, stop, status, tmp_path,
                                                           monkeypatch, capsys):
    """compare.py and theta_search.py have no --resume: running the same command
    again continues them, and Ctrl-C or SIGTERM says that (a variant's own line said
    --resume)."""
    module = load_script(f"experiments/{name}.py")

    def stopped(*args, **kwargs):
        if name == "compare":  # what a variant's run raises (claim_out_dir)
            raise errors.Interrupted(f"{errors.stop_word(stop)}; continue with --resume "
                                     "(--out o/variants/baseline)") from stop
        raise stop

    monkeypatch.setattr(module, "run_search" if name == "theta_search" else "run_variant",
                        stopped)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(module.main, ["--out", "o"])
    assert exit_.value.code == status
    word = "terminated" if status == errors.TERMINATE_STATUS else "interrupted"
    assert capsys.readouterr().err.splitlines() == [
        f"error: {word}; run the same command again to continue (--out o)"]


def test_uncreatable_out_in_a_real_process_is_one_line_before_any_work(tmp_path):
    """`sailor.py --out` under /proc: one line on stderr, exit 2, no run started."""
    command = [sys.executable, os.path.join(ROOT, "experiments", "sailor.py"), "--out",
               "/proc/nonexistent/run"]
    env = {k: v for k, v in os.environ.items() if k != errors.DEBUG_ENV}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "error: --out /proc/nonexistent/run: cannot create /proc/nonexistent (No such file or "
        "directory) (choose a folder you can write to)"], done.stderr
    assert os.listdir(tmp_path) == []


def test_bad_theta_star_fails_while_parsing(scripts, capsys):
    with pytest.raises(SystemExit) as exit_:
        scripts["sailor"].parse(["--sailor.ranker.kind", "linear_oracle",
                                 "--sailor.ranker.theta-star", "1", "2"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --sailor.ranker.theta-star must have shape (8,)"), err
    assert err.count("\n") == 1, err


# --------------------------------------------------------- the real entry point, end to end


def test_sailor_script_prints_one_line_or_the_traceback_with_debug(tmp_path):
    command = [sys.executable, os.path.join(ROOT, "experiments", "sailor.py"), *LLM,
               "--sailor.ranker.llm.model", str(tmp_path / "missing"), "--out", "o"]
    env = {k: v for k, v in os.environ.items() if k != errors.DEBUG_ENV}
    plain = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env,
                           timeout=120)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.splitlines() == [
        f"error: --sailor.ranker.llm.model {tmp_path / 'missing'}: no such folder "
        "(pass an existing model folder or a Hugging Face id)"]
    debug = subprocess.run([*command, "--debug"], cwd=tmp_path, capture_output=True,
                           text=True, env=env, timeout=120)
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    assert "sailor_jax.errors.UserError" in debug.stderr
    assert not (tmp_path / "o").exists()
