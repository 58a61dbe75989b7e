#!/bin/bash
# The prepared GPU check on the device tool's machine (one H100 or H200): the parts of
# `benchmarks/gpu_check.py` (env + features, the PPO segment, PureJaxRL's function beside it,
# the census of the segment with a profile of each arm, the 1.5B-sized judge, the gpu preset for
# 4 iterations), each stopped at its deadline, about 12 minutes in all. The device tool runs a
# command for at most 600 s, so run it as two calls, each writing its parts' JSON files,
# summary.md and summary.json to $OUT:
#   bash benchmarks/gpu/check.sh --parts census env ppo reference    # about 7 minutes
#   bash benchmarks/gpu/check.sh --parts judge main_llm main_expert  # about 5 minutes
# and the decisive question at ~5M env steps (SAILOR from theta0 against it kept fixed, blocks
# of 16 paired seeds until the deadline), a call each (about 9 minutes):
#   bash benchmarks/gpu/check.sh --parts decide_expert
#   SAILOR_DECIDE_MODEL=/path/to/qwen2.5-coder-1.5b bash benchmarks/gpu/check.sh --parts decide_llm
# With 15 minutes of device time a session, the machine's start included, decide_expert is the
# call to make first (docs/repair.md: the decisive runs).
#
# The machine's image lacks pgx, tyro, scikit-optimize, blackjax and a few more: carry them as Python
# 3.12 wheels in .whl/ (git-ignored, 3.2 MB), downloaded here with
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl pgx==2.6.0 \
#     svgwrite==1.4.3 tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.1 \
#     scikit-optimize==0.10.2 pyaml==26.7.0 cma==4.5.0 tensorboardX==2.6.5 \
#     orbax-checkpoint==0.12.8 optax==0.2.8 chex==0.1.92 blackjax==1.7.1
# then call the device tool with carry [".whl"], timeout_s 590 and each command above.
# Extra arguments go to gpu_check.py (e.g. `--parts ppo main_llm --deadlines 240 120`).
# Rehearsed on the 2-core CPU with the wheels carried and the project's venv as python3
# (2026-11-26): `OUT=/tmp/out bash benchmarks/gpu/check.sh --tiny` wrote its files in 2 min 54 s (then 8 parts).
set -u
source "$(dirname "$0")/setup.sh" || exit $?
python3 benchmarks/gpu_check.py --out $OUT --work $G "$@"
