"""The import rule of STYLE.md: device modules never pull in host-only libraries."""

from __future__ import annotations

import json
import subprocess
import sys

DEVICE_MODULES = ("env", "features", "reward", "networks", "ppo", "rollout", "evaluation",
                  "dqn", "collectives", "env_sharding", "seeds")
HOST_ONLY = ("transformers", "torch", "skopt", "orbax", "tensorboardX", "sklearn")


def test_device_modules_do_not_import_host_libraries():
    code = (
        "import json, sys\n"
        + "".join(f"import sailor_jax.{m}\n" for m in DEVICE_MODULES)
        + f"print(json.dumps(sorted(m for m in {HOST_ONLY!r} if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_rankers_package_imports_without_torch():
    code = "import sys, sailor_jax.rankers, sailor_jax.loop; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
