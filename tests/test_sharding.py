"""Tests for `sailor_jax.scale.sharding`: seed rows over devices, checkpoints across device counts.

The multi-device checks run `tests/multidevice.py` in a subprocess with 4 forced CPU
devices (the flag must be set before JAX starts; this process already started it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from support import forced_devices_env

from sailor_jax.scale import sharding

HERE = os.path.dirname(os.path.abspath(__file__))


def test_layout_rejects_bad_device_counts():
    with pytest.raises(ValueError, match=r"--devices must be in 1\.\.1 .*device_count=N"):
        sharding.SeedLayout(4, devices=2)
    with pytest.raises(ValueError, match="--devices must be in"):
        sharding.SeedLayout(4, devices=0)
    with pytest.raises(ValueError, match="rows must be positive"):
        sharding.SeedLayout(0)


def test_layout_round_trip_on_one_device():
    layout = sharding.SeedLayout(3)
    tree = {"a": np.arange(6, dtype=np.float32).reshape(3, 2), "k": np.arange(3, dtype=np.uint32)}
    placed = layout.put(tree)
    assert layout.padded_rows == 3 and placed["a"].sharding == layout.sharding
    back = layout.to_host(placed)
    np.testing.assert_array_equal(back["a"], tree["a"])
    assert back["k"].dtype == np.uint32
    with pytest.raises(ValueError, match="leading axis of 3 rows"):
        layout.put({"a": np.zeros((2, 2))})


_PAD_CHECK = """
import json, numpy as np
from sailor_jax.scale.sharding import SeedLayout
layout = SeedLayout(3, devices=4)
x = np.arange(6, dtype=np.float32).reshape(3, 2)
placed = layout.put(x)
restored = layout.pad(layout.unpad(placed))
print(json.dumps({"padded_rows": layout.padded_rows, "shape": list(placed.shape),
                  "devices": len(placed.sharding.device_set),
                  "pad_row": np.asarray(placed)[3].tolist(),
                  "round_trip": layout.to_host(restored).tolist(),
                  "restored_devices": len(restored.sharding.device_set)}))
"""


def test_padding_on_four_devices():
    out = subprocess.run([sys.executable, "-c", _PAD_CHECK], env=forced_devices_env(4),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["padded_rows"] == 4 and r["shape"] == [4, 2] and r["devices"] == 4
    assert r["pad_row"] == [4.0, 5.0]  # a copy of the last real row
    assert r["round_trip"] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert r["restored_devices"] == 4


@pytest.mark.slow
def test_seed_sharding_equals_one_device_and_checkpoints_move_between_device_counts(tmp_path):
    """3 SAILOR + 3 baseline rows on 4 devices (padded to 8) give the 1-device run's theta
    history and evaluations exactly; a run killed on 4 devices resumes on 1 and on 2."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "multidevice.py"), str(tmp_path)],
                         env=forced_devices_env(4), capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["device_count"] == 4
    one = r["one"]
    history = np.asarray(one["theta_history"])
    assert history.shape == (3, 3, 8)
    assert np.abs(history[-1] - history[0]).max() > 0  # theta moved: the check has teeth
    expected_devices = {"one": 1, "four": 4, "resumed_on_1": 1, "resumed_on_2": 2}
    for name, devices in expected_devices.items():
        assert r[name]["devices_seen"] == devices, name
        np.testing.assert_array_equal(np.asarray(r[name]["theta_history"]), history,
                                      err_msg=name)
        assert r[name]["evaluation"] == one["evaluation"], name
        assert r[name]["baseline"] == one["baseline"], name


def test_to_host_passes_host_values_through():
    tree = {"a": jax.numpy.ones(2), "b": np.zeros(3)}
    host = sharding.to_host(tree)
    assert isinstance(host["a"], np.ndarray) and host["b"].shape == (3,)
