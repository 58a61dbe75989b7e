"""A config value the dataclasses refuse, or a flag tyro cannot parse, is said in
the user's words on every CLI of `experiments/`: one `error:` line, exit 2, naming the flag
as typed (and the flag of a field that bounds it), no internal class or tyro names.

Each case goes through the script's real entry point in-process (`report_user_errors` over
its `main`, as its `__main__` block runs it); one case also runs as a real process.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest
from support import ROOT, load_script

from sailor_jax import cli, errors
from sailor_jax.config import SailorConfig, flags

INTERNAL = ("Config", "RewardSpec", "tyro", "dummy", "Traceback", "╭")
"""Words the user never typed: config class names, tyro's own names and box."""

THETA_NAN = ["--sailor.start", "nan", *["0"] * 7]

CASES = {
    "sailor window below 0": ("sailor", ["--sailor.window", "-5"],
                              ["--sailor.window", "--sailor.max-len=300"]),
    "sailor window above max-len": ("sailor", ["--sailor.max-len", "10", "--sailor.window",
                                               "20"], ["--sailor.window", "--sailor.max-len=10"]),
    "sailor reference-games": ("sailor", ["--sailor.reference-games", "8"],
                               ["--sailor.reference-games must be in [0, --sailor.trajectories"]),
    "sailor num-seeds 0": ("sailor", ["--sailor.num-seeds", "0"], ["--sailor.num-seeds"]),
    "sailor start nan": ("sailor", THETA_NAN, ["--sailor.start[0] ('score_gain') is nan"]),
    "sailor start length": ("sailor", ["--sailor.start", "1", "2"],
                             ["--sailor.start must have shape (8,)", "got shape (2,)"]),
    "sailor heldout needs trajectories": ("sailor", ["--sailor.trajectories", "3",
                                                     "--sailor.reference-games", "0",
                                                     "--sailor.alignment.heldout", "0.5"],
                                          ["--sailor.alignment.heldout",
                                           "--sailor.trajectories >= 4"]),
    "ppo": ("sailor", ["--sailor.ppo.num-envs", "0"], ["--sailor.ppo.num-envs"]),
    "network": ("sailor", ["--sailor.ppo.network.hidden-sizes", "0"],
                ["--sailor.ppo.network.hidden-sizes"]),
    "eval": ("sailor", ["--sailor.eval.episodes", "0"],
             ["--sailor.eval.episodes", "--sailor.eval.max-len"]),
    "alignment": ("sailor", ["--sailor.alignment.heldout", "2"], ["--sailor.alignment.heldout"]),
    "preferences": ("sailor", ["--sailor.preferences.concordant-ratio", "-1"],
                    ["--sailor.preferences.concordant-ratio"]),
    "ranker": ("sailor", ["--sailor.ranker.expert-depth", "0"], ["--sailor.ranker.expert-depth"]),
    "ranker noise": ("sailor", ["--sailor.ranker.kind", "expert", "--sailor.ranker.noise", "-1"],
                     ["--sailor.ranker.noise must be finite and >= 0, got -1"]),
    "ranker noise of an llm": ("sailor", ["cpu", "--sailor.ranker.noise", "0.5"],
                               ["--sailor.ranker.noise applies to the synthetic judges only",
                                "got --sailor.ranker.kind 'llm'"]),
    "llm": ("sailor", ["--sailor.ranker.llm.batch-size", "0"], ["--sailor.ranker.llm.batch-size"]),
    "refine": ("sailor", ["--sailor.refine.patience", "0"], ["--sailor.refine.patience"]),
    "train_ppo": ("train_ppo", ["--train.num-seeds", "0"], ["--train.num-seeds"]),
    "train_ppo theta": ("train_ppo", ["--train.theta", "1", "2"], ["--train.theta must have"]),
    "theta_search": ("theta_search", ["--search.population", "1"], ["--search.population"]),
    "compare": ("compare", ["--num-seeds", "0"], ["--num-seeds must be positive, got 0"]),
    "compare judge": ("compare", ["--judge", "oracle"], ["--judge"]),
    "expert_play": ("expert_play", ["--games", "0"], ["--games", "--max-moves"]),
    "oracle_recovery": ("oracle_recovery", ["--trajectories", "1"], ["--trajectories"]),
    "plot": ("plot", [], ["missing results-dir"]),
    "transfer_dqn": ("transfer_dqn", ["--sailor-results", "r", "--num-seeds", "0"],
                     ["--num-seeds"]),
    "transfer_dqn dqn": ("transfer_dqn", ["--sailor-results", "r", "--dqn.gamma", "2"],
                         ["--dqn.gamma"]),
    "watch": ("watch", ["run", "--out", "g.svg", "--games", "0"], ["--games", "--max-moves"]),
    "watch frame seconds": ("watch", ["run", "--out", "g.svg", "--frame-seconds", "nan"],
                            ["--frame-seconds"]),
    # tyro's own rejections stay one line too
    "unknown flag": ("sailor", ["--sailor.num-seed", "2"],
                     ["unrecognized arguments --sailor.num-seed 2",
                      "did you mean --sailor.num-seeds?"]),
    "not an int": ("train_ppo", ["--train.num-seeds", "two"],
                   ["--train.num-seeds two: expected INT"]),
    "not a choice": ("sailor", ["--sailor.ranker.kind", "oracle"],
                     ["--sailor.ranker.kind oracle: not a choice", "choose llm, outcome"]),
    "a surplus value": ("sailor", ["--sailor.iterations", "1", "2"],
                        ["error: Unrecognized options: 2 (see --help)"]),
    "a missing value": ("sailor", ["--sailor.iterations"],
                        ["--sailor.iterations: a value is missing (expected INT"]),
    "not an int in a list": ("sailor", ["--sailor.ppo.network.hidden-sizes", "64", "a"],
                             ["--sailor.ppo.network.hidden-sizes 64 a: expected INT ..."]),
    "unknown preset": ("sailor", ["--preset", "cpuu"],
                       ["--preset cpuu: no such preset (known: smoke, cpu, gpu)"]),
}


def _entry(name: str):
    """What `python experiments/<name>.py ARGV` runs: `main(argv)`, or `main(parse(argv))`
    for the scripts whose `main` takes the parsed `Args`."""
    module = load_script(f"experiments/{name}.py")
    if name in ("train_ppo", "expert_play", "oracle_recovery"):
        return lambda argv: module.main(module.parse(argv))
    return module.main


def test_every_cli_has_a_case():
    scripts = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "experiments",
                                                                         "*.py"))}
    assert scripts == {name for name, _, _ in CASES.values()}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_value_is_one_line_naming_the_flag(case, tmp_path, monkeypatch, capsys):
    name, argv, expected = CASES[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(_entry(name), argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and out == "", err
    for text in expected:
        assert text in err, err
    assert not [word for word in INTERNAL if word in err], err
    assert os.listdir(tmp_path) == []  # nothing written


def test_the_issue_case_in_a_real_process():
    """`sailor.py --sailor.window -5` printed tyro's 6-line box naming
    `__tyro-dummy-inner__.sailor` and neither flag."""
    env = {k: v for k, v in os.environ.items() if k != errors.DEBUG_ENV}
    done = subprocess.run([sys.executable, "experiments/sailor.py", "--sailor.window", "-5"],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: --sailor.window must be in [0, --sailor.max-len=300], got -5 (see "
        "--sailor.window in --help)"]


def test_debug_keeps_tyros_report(monkeypatch, capsys):
    monkeypatch.setenv(errors.DEBUG_ENV, "1")
    with pytest.raises(SystemExit) as exit_:
        load_script("experiments/sailor.py").parse(["--sailor.window", "-5"])
    assert exit_.value.code == 2
    assert "window must be in [0, max_len=300]" in " ".join(capsys.readouterr().err.split())


def test_messages_are_rewritten_field_by_field():
    cls, prefix = flags.config_at(SailorConfig, ["ppo"])
    assert prefix == ("ppo",)
    assert flags.in_flags("PPOConfig.num_envs must be a positive integer, got 0", cls,
                          prefix) == ("--ppo.num-envs must be a positive integer, got 0",
                                      ["--ppo.num-envs"])
    text, named = flags.in_flags("alignment.heldout needs trajectories >= 4, got 'max_len'",
                                 SailorConfig, ("sailor",))
    assert text == "--sailor.alignment.heldout needs --sailor.trajectories >= 4, got 'max_len'"
    assert named == ["--sailor.alignment.heldout", "--sailor.trajectories"]  # not in quotes
    assert flags.in_flags("nothing here", SailorConfig, ()) == ("nothing here", [])
    assert flags.config_at(SailorConfig, ["ppo", "lr"]) == (None, ())  # not a config


def test_scale_flags_have_no_prefix():
    scripts = load_script("experiments/sailor.py")
    assert flags.config_at(scripts.Args, ["scale"]) == (cli.ScaleArgs, ())
    known = set(flags.all_flags(scripts.Args))
    assert {"--devices", "--sailor.window", "--sailor.no-baseline", "--resume"} <= known


@pytest.mark.parametrize(("script", "argv", "line"), [
    ("judge_quality", ["--judg", "llm"], "error: unrecognized arguments --judg llm (did you "
                                         "mean --judge? see --help)"),
    ("throughput", ["--num-envs", "x"], "error: --num-envs x: expected None or INT ... (see "
                                        "--num-envs in --help)"),
])
def test_benchmarks_parse_the_same_way(script, argv, line, monkeypatch, capsys):
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    bench = load_script(f"benchmarks/{script}.py")
    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(lambda a: bench.main(bench.parse_args(bench.Args, a)), argv)
    assert exit_.value.code == 2 and capsys.readouterr().err == line + "\n"


def test_no_private_tyro_module_is_used():
    """tyro's modules with a leading underscore may change in any release: the CLIs' errors
    are said through its public API (`flags.user_errors`), so the pin is on its major
    version only."""
    sources = [p for d in ("sailor_jax", "sailor_lab", "experiments", "benchmarks")
               for p in glob.glob(os.path.join(ROOT, d, "**", "*.py"), recursive=True)]
    assert len(sources) > 50
    private = [p for p in sources if any(word in open(p, encoding="utf-8").read() for word in
                                         ("tyro._", "from tyro import _"))]
    assert private == []


@pytest.mark.parametrize("report", [
    "╭─ Unrecognized options ─────╮\n│ Unrecognized options: 2    │\n"
    "│ ────────────────────────── │\n│ For full helptext, run x --help │\n"
    "╰────────────────────────────╯\n",
    "Unrecognized options\n--------------------\nUnrecognized options: 2\n--------------------\n"
    "For full helptext, run x --help\n",
])
def test_tyros_report_is_said_on_one_line(report):
    """On a terminal tyro frames its report in a box, elsewhere between rules of dashes."""
    assert flags._report_message(report) == "Unrecognized options: 2"


@pytest.mark.parametrize("name, said", [
    ("--num-seed", "--num-seeds"), ("--num_seeds", "--num-seeds"),
    ("--iteration", "--iterations"), ("--alignment.no-such", None)])
def test_did_you_mean_names_only_a_field_within_two_edits(name, said):
    assert flags.edit_distance("kitten", "sitting") == 3 and flags.edit_distance("", "ab") == 2
    assert flags.near_name(name, flags.flag_types(SailorConfig)) == said
