"""Tests for `sailor_jax.scale.memory`: runs too big for memory fail before anything runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sailor_jax.errors import UserError
from sailor_jax.scale import memory


def _init_one(key):
    return {"x": jax.random.normal(key, (1000,)), "count": jnp.zeros((), jnp.int32)}


@jax.jit
def _segment(state, thetas):  # sorts a [R, 4000 * 1000] copy: ~32 MB of scratch for R = 2
    big = jnp.sort(jnp.tile(state["x"], (1, 4000)) * thetas[:, :1], axis=-1)
    return {**state, "count": state["count"] + 1}, big[:, -1]


def _check(monkeypatch, free: int, rows: int = 2, devices: int = 1) -> None:
    monkeypatch.setattr(memory, "available_bytes", lambda: (free, "test memory"))
    memory.check_fits(_init_one, jax.random.PRNGKey(0), rows, _segment,
                      np.ones((rows, 3), np.float32), devices, "lower --rows")


def test_state_bytes_come_from_shapes_alone():
    abstract = memory.stacked(jax.eval_shape(_init_one, jax.random.PRNGKey(0)), 5)
    assert abstract["x"].shape == (5, 1000)
    assert memory.tree_bytes(abstract) == 5 * (1000 * 4 + 4)


def test_small_runs_pass_without_compiling(monkeypatch):
    monkeypatch.setattr(_segment, "lower", lambda *a: pytest.fail("compiled"), raising=False)
    _check(monkeypatch, free=10**9)


def test_state_larger_than_memory_is_one_line(monkeypatch):
    with pytest.raises(UserError) as error:
        _check(monkeypatch, free=4000)
    assert str(error.value) == ("2 rows do not fit in memory: the training state needs about "
                                "0.0 GiB per device, test memory is 0.0 GiB (lower --rows)")


def test_scratch_of_the_compiled_segment_counts(monkeypatch):
    """The state (8 KB) fits in 50 KB; the compiled segment's ~32 MB of scratch does not."""
    with pytest.raises(UserError, match=r"the training segment \(compiled: .*\) needs about "):
        _check(monkeypatch, free=50_000)
    _check(monkeypatch, free=2**30)  # it fits in 1 GiB


def test_device_or_host_memory_is_reported():
    free, where = memory.available_bytes()
    assert free > 0 and where
    assert memory.host_available_bytes() > 0
