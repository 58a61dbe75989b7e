"""Helpers that several test modules share; no test module imports another test module.

Imported as `from support import ...`: pytest puts `tests/` on `sys.path` (the default
`prepend` import mode, `tests/` having no `__init__.py`), for a whole-suite run from the root
as for a single file, and a script run from `tests/` (`multidevice.py`) finds it beside
itself. Fixtures live in `conftest.py`.

- Scripts: `ROOT`, `load_script` (every test that imports a script by path).
- Tiny runs: `TINY` (the loop's), `TINY_PPO`, `TINY_TRAIN_PPO` and `PAPER_UPDATE` (the CLIs'
  flags), `TINY_POOL` (the judge benchmarks' pool).
- Kills and resumes: `DiesAfter`, `kill_when`, `assert_interrupted`, `assert_same_run`
  (`untimed`, `run_logs`), `assert_resume_after_update_kill`, `damage`, `files_under`.
- Records: `iteration_record`, `curve_line`. Devices: `forced_devices_env`.

Imports that take a second (`sailor_jax.judges`, `sailor_lab.judge_eval`, `sailor_lab.report`,
`sailor_jax.run.loop`) wait for the helper that needs them: most files only load a script.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.util
import json
import os
import sys
from types import ModuleType

import numpy as np
import pytest

from sailor_jax import errors
from sailor_jax.config import PAPER, EvalConfig, NetworkConfig, PPOConfig, RankerConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.run.results import IterationRecord, SeedUpdate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The repository's root folder."""

_CACHED: dict[str, ModuleType] = {}
"""`load_script(relpath, cached=True)`'s modules, by `relpath`."""


def load_script(relpath: str, *, cached: bool = False) -> ModuleType:
    """Import the script at `relpath` (from the repository root, e.g. "experiments/sailor.py")
    by path; returns its module (its module-level `join_processes` is a no-op here).

    By default the script runs afresh on each call, as the module named after its file
    (`sailor`), which replaces any earlier one in `sys.modules`: dataclasses resolve string
    annotations through it. With `cached=True` it runs once per process, as a module of its
    own (`cached_experiments_sailor`) that later fresh loads leave in place, and every call
    returns that module."""
    if cached and relpath in _CACHED:
        return _CACHED[relpath]
    path = os.path.join(ROOT, relpath)
    name = ("cached_" + relpath.replace("/", "_") if cached else os.path.basename(path))[:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve string annotations through it
    spec.loader.exec_module(module)
    if cached:
        _CACHED[relpath] = module
    return module


# ---------------------------------------------------------------------------------------------
# Tiny runs

TINY = dataclasses.replace(
    PAPER, iterations=2, num_seeds=2, trajectories=4, max_len=60,
    ppo=PPOConfig(num_envs=16, num_steps=8, updates_per_segment=1, lr_schedule="constant",
                  network=NetworkConfig(hidden_sizes=(16,))),
    ranker=RankerConfig(kind="outcome"),
    alignment=dataclasses.replace(
        PAPER.alignment, bo_calls=6, bo_initial_points=3, trust_region=0.3, update_workers=1),
    eval=EvalConfig(episodes=4, max_len=300), tensorboard=False)
"""The tests' small SAILOR run. A constant learning rate: a linear one's length is baked into
the compiled segment, so runs of different lengths would each compile their own. The seeds'
theta updates run serially in the run's process (`update_workers=1`): the results are the same
as in worker processes, which a run this small would spend seconds starting
(`test_fault_injection` runs them in workers)."""

TINY_PPO = ["--sailor.ppo.num-envs", "16", "--sailor.ppo.num-steps", "8",
            "--sailor.ppo.updates-per-segment", "1", "--sailor.ppo.network.hidden-sizes", "16",
            "--sailor.ppo.lr-schedule", "constant"]
"""The CLI tests' PPO: `TINY`'s sizes on the presets' network. A constant learning
rate, as there: a linear one's length (the run's updates) is baked into the compiled segment, so
runs of 1, 2 or 3 iterations would each compile their own; with it, every CLI test of these
sizes and rows (`train_ppo.py`'s too, through `TINY_TRAIN_PPO`) shares one."""
TINY_TRAIN_PPO = [flag.replace("--sailor.", "--train.", 1) for flag in TINY_PPO]
"""`TINY_PPO` as `train_ppo.py`'s flags: the same segment program."""
PAPER_UPDATE = ["--sailor.reference-games", "0", "--sailor.window", "0",
                "--sailor.alignment.method", "bo", "--sailor.alignment.heldout", "0",
                "--sailor.alignment.no-survival-guard", "--sailor.preferences.compare", "sum",
                "--sailor.warmup-updates", "0"]
"""`PAPER`'s update (BO on whole games, no warm-up) over a preset, not the presets' recommended
one: for tests about processes and signals, where theta must move on 4 games and an iteration
be short."""


def _tiny_pool() -> dict:
    """`TINY_POOL` (see `_LAZY`)."""
    from sailor_lab.judge_eval import PoolArgs

    return dict(pool=PoolArgs(epsilons=(0.0, 1.0), games_per_player=3, max_len=40,
                              pool_depth=1, m=4, groups=2), expert_depth=1)


def _dies_after() -> type:
    """The class `DiesAfter` (see `_LAZY`)."""
    from sailor_jax.judges import OutcomeRanker

    class DiesAfter(OutcomeRanker):
        """An outcome judge that simulates a killed process on its n-th call."""

        def __init__(self, calls_before_death: int):
            self.left = calls_before_death

        def rank_groups(self, groups):
            if self.left == 0:
                raise KeyboardInterrupt("simulated kill")
            self.left -= 1
            return super().rank_groups(groups)

    DiesAfter.__qualname__ = "DiesAfter"
    return DiesAfter


_LAZY = {"TINY_POOL": _tiny_pool, "DiesAfter": _dies_after}
"""Names built on first use, whose modules take a second to import:
- `TINY_POOL`: `judge_quality.Args` keywords for a tiny pool (players at epsilon 0 and 1, 3
  games each, 2 groups of 4) judged by a depth-1 expert (`sailor_lab.judge_eval`).
- `DiesAfter(n)`: an outcome judge that simulates a killed process on its n-th call
  (`sailor_jax.judges`)."""


def __getattr__(name: str):
    """`_LAZY`'s names, built once on first use (`from support import TINY_POOL`)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = _LAZY[name]()
    return value


# ---------------------------------------------------------------------------------------------
# Kills, resumes and run folders

TIMING_KEYS = {"seconds", "sps", "timings", "charts/SPS"}
"""Keys whose values are wall-clock measurements (plus keys ending `_s` or starting `time/`)."""


def untimed(x):
    """`x` without the timing fields, recursively."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if k not in TIMING_KEYS
                and not k.endswith("_s") and not k.startswith("time/")}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x


def run_logs(out: str) -> dict[str, list]:
    """Every JSONL log of the run folder (file name -> records), timing fields removed."""
    logs = {}
    for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            logs[os.path.basename(path)] = [untimed(json.loads(line)) for line in f]
    return logs


def assert_same_run(out: str, results, reference,
                    log_names: frozenset[str] = frozenset({"metrics.jsonl", "llm.jsonl"})
                    ) -> None:
    """Results, results.json and every log of `out` (the JSONL files `log_names`) equal the
    uninterrupted run's."""
    ref_out, ref = reference
    np.testing.assert_array_equal(np.asarray(results.theta_history),
                                  np.asarray(ref.theta_history))
    assert results.preferences == ref.preferences
    assert results.evaluation == ref.evaluation
    with open(os.path.join(out, "results.json")) as a, \
            open(os.path.join(ref_out, "results.json")) as b:
        assert untimed(json.load(a)) == untimed(json.load(b))
    logs, ref_logs = run_logs(out), run_logs(ref_out)
    assert set(logs) == set(ref_logs) == log_names
    for name, records in ref_logs.items():
        assert logs[name] == records, name


def kill_when(monkeypatch, name: str, position: int, t: int, after: bool = False) -> None:
    """Replace `phases.<name>` by a wrapper that raises KeyboardInterrupt when its positional
    argument `position` (the iteration) is `t`, before or after calling the original."""
    from sailor_jax.run import phases

    original = getattr(phases, name)

    def killer(*args, **kwargs):
        if not after and args[position] == t:
            raise KeyboardInterrupt(f"simulated kill before {name} of iteration {t}")
        out = original(*args, **kwargs)
        if after and args[position] == t:
            raise KeyboardInterrupt(f"simulated kill after {name} of iteration {t}")
        return out

    monkeypatch.setattr(phases, name, killer)


def assert_interrupted(run, out: str) -> None:
    """`run()` stops with `errors.Interrupted` (from the simulated kill) naming `out`."""
    with pytest.raises(errors.Interrupted, match="interrupted; continue with --resume") as e:
        run()
    assert out in str(e.value) and "simulated kill" in str(e.value.__cause__)


def assert_resume_after_update_kill(cfg, out: str, reference, monkeypatch, t: int,
                                    log_names: frozenset[str]) -> None:
    """Kill `loop.run(cfg, out)` before iteration t's update, resume it, and check it equals
    the uninterrupted `reference` (`assert_same_run`)."""
    from sailor_jax.run import loop

    with monkeypatch.context() as mp:
        kill_when(mp, "align_step", 5, t)
        assert_interrupted(lambda: loop.run(cfg, out), out)
    assert_same_run(out, loop.run(cfg, out, resume=True), reference, log_names=log_names)


def damage(step_dir, how: str) -> None:
    """Truncate the meta JSON, or flip bytes in the middle of the largest state file."""
    if how == "truncated_meta":
        path = os.path.join(step_dir, "meta", "metadata")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        return
    files = [p for p in glob.glob(os.path.join(step_dir, "state", "**"), recursive=True)
             if os.path.isfile(p)]
    path = max(files, key=os.path.getsize)
    data = bytearray(open(path, "rb").read())
    for i in range(len(data) // 2, len(data) // 2 + 8):
        data[i] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))


def files_under(folder: str) -> dict[str, bytes]:
    """Every file under `folder` (relative path -> bytes)."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                files[os.path.relpath(os.path.join(root, name), folder)] = f.read()
    return files


# ---------------------------------------------------------------------------------------------
# Records and devices


def iteration_record(t: int) -> IterationRecord:
    """Iteration `t`'s record of a two-seed run: seed 0 moved (6 evaluations), seed 1's judge
    gave no ranking; returns it (`IterationRecord`)."""
    seeds = [SeedUpdate(num_discordant=2, num_concordant=2, kendall_tau_before=0.2,
                        kendall_tau_after=0.6, error_before=0.5, error_after=float("nan"),
                        accepted=True, outcome="moved", evaluations=6, message="ok"),
             SeedUpdate(judge_failed=True, outcome="no judge",
                        message="judge gave no ranking; theta unchanged")]
    return IterationRecord(iteration=t, env_steps=(t + 1) * 100, sps=1e3,
                           seconds={"train": 1.0}, host_overhead_s=0.0,
                           theta=[list(RewardSpec().start)] * 2, seeds=seeds,
                           train_score=[10.0, None])


def curve_line(recipe: str, steps: int, scores, wins, per_seed: bool) -> dict:
    """A learning.py curve line for these seeds (with or without the per-seed lists)."""
    from sailor_lab import report

    line = {"recipe": recipe, "env_steps": steps, "seeds": len(scores)}
    for name, values in (("score", scores), ("win_rate", wins)):
        line[f"{name}_mean"], line[f"{name}_ci_low"], line[f"{name}_ci_high"] = \
            report.mean_ci(values)
        if per_seed:
            line[f"{name}_per_seed"] = list(values)
    return line


def forced_devices_env(n: int) -> dict:
    """This process's environment for a subprocess whose JAX sees `n` CPU devices
    (`--xla_force_host_platform_device_count`, CPU only); returns a new dict."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n}"
    env["JAX_PLATFORMS"] = "cpu"
    return env
