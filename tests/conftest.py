"""Shared pytest fixtures.

- A persistent JAX compilation cache (in the temp dir; `SAILOR_TEST_JAX_CACHE` overrides),
  also set in the environment for the scripts the tests start as subprocesses, and XLA:CPU
  flags that compile fast (`FAST_COMPILE_FLAGS`) for both.
- The cyclic garbage collector's thresholds in the tests' processes (`GC_THRESHOLDS`).
- `few_resamples` (every test): rliable's bootstrap intervals and profile bands from 100 resamples.
- `tiny_llm_dir`: a tiny random Llama + byte-level BPE tokenizer saved with `save_pretrained`
  to a session temp folder (built offline by `llm_fixtures.build_tiny_llm`, ~2 s), for
  testing the real `LLMRanker` loading and scoring path without downloading weights.
- `bench`: `benchmarks/judge_quality.py`'s module, loaded once per test module (a test module
  of another benchmark defines its own `bench`).

Helpers that are not fixtures are in `support.py`.

The `slow` and `gpu` markers are registered in pyproject.toml; `slow` tests run first.
"""

from __future__ import annotations

import gc
import os
import tempfile

import jax
import pytest

# Many tests start the real scripts as subprocesses that compile the same programs again, and
# the two xdist workers compile the same programs each: a persistent compilation cache shared
# by the session (and, through the environment, by every subprocess it starts) turns repeats
# into cache hits. Every program is cached, however fast it compiles: a process compiles
# dozens of small ones, and on 2 cores that paid (the subprocess-heavy test files from an
# empty cache took 98 and 88 s against 128 and 101 s with only programs over 0.5 s cached).
CACHE_DIR = os.environ.get("SAILOR_TEST_JAX_CACHE",
                           os.path.join(tempfile.gettempdir(), "sailor_jax_test_cache"))
MIN_COMPILE_S = 0.0
"""Programs that compile faster than this are not cached (0: all are)."""
os.environ["JAX_COMPILATION_CACHE_DIR"] = CACHE_DIR
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(MIN_COMPILE_S)
jax.config.update("jax_compilation_cache_dir", CACHE_DIR)  # this process imported jax already
jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_S)

# XLA:CPU flags that compile fast (for this session and its subprocesses; read when the backend
# starts, which no import above does): the tests' programs are small and run briefly, so
# compiling them fast matters more than running them fast.
# - Backend optimisation level 0: in a clean clone with an empty cache on a 2-core AMD EPYC the
#   tests took 1,128 s against 1,407 s at the default level.
# - No fusion emitters (XLA:CPU's older elemental emitters instead; scatters become loops): the
#   tests took 463-519 s against 646-658 s with level 0 alone (the same machine).
# Results differ from the default build only by float rounding; users' runs keep the defaults.
# tests/test_census.py compiles the programs whose ops it counts with the fusion emitters.
FAST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
_flags = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join(
    [_flags, *(f for f in FAST_COMPILE_FLAGS if f.split("=")[0] not in _flags)]).strip()

# The cyclic garbage collector's thresholds in the tests' processes (not the scripts they
# start): tracing allocates millions of short-lived objects, and every few thousand the default
# thresholds (700, 10, 10) ran a full collection over a heap that jax's caches keep growing
# (1.2 million objects after three test files): in one process, test_rollout, test_ppo and
# test_loop spent 7-9.5 s of 43-61 s collecting, and 1.7-1.8 s at these thresholds (4 runs
# against 3, alternated, warm cache, 2-core AMD EPYC).
GC_THRESHOLDS = (50_000, 20, 20)
gc.set_threshold(*GC_THRESHOLDS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` first (otherwise in collection order), so that none of them is
    left to run alone at the end: xdist starts each worker on a run of consecutive tests, so
    the first worker begins with all of them while the other takes the short tests after."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def few_resamples(monkeypatch: pytest.MonkeyPatch) -> None:
    """rliable's intervals from 100 bootstrap resamples, not 10,000, and performance profiles'
    bands from 100, not 2,000, in every test run in this process: the tables' and figures'
    numbers are checked, not their precision (tests/test_seed_statistics.py checks the
    intervals, at the resamples it names). Resampling is a Python loop: at 500 resamples it
    took 25 of the 90 s of the comparison's end-to-end test (2-core AMD EPYC)."""
    from sailor_lab import seed_statistics

    monkeypatch.setattr(seed_statistics, "REPS", 100)
    monkeypatch.setattr(seed_statistics, "PROFILE_REPS", 100)


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Folder holding the tiny offline causal LM (config, weights, tokenizer)."""
    from llm_fixtures import build_tiny_llm

    return build_tiny_llm(str(tmp_path_factory.mktemp("tiny_llm")))


@pytest.fixture(scope="module")
def bench():
    """`benchmarks/judge_quality.py` loaded (`support.load_script`); returns its module."""
    from support import load_script

    return load_script("benchmarks/judge_quality.py")
