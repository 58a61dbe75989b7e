# Shared by the benchmarks/gpu/*.sh scripts (sourced): the carried wheels installed into
# /tmp/site, the environment, what the machine is. Sets START, DEADLINE (default 500 s), P
# (processes side by side, default 8), G (work folder, /tmp/g), OUT (/tmp/out).
# The device tool copies the tracked files (64 MiB at most): the raw results under
# benchmarks/results are kept gzip-compressed so the checkout stays under 40 MiB
# (tests/test_stored_results.py); gzip -9 -n what a GPU call brings back before committing it.
START=$(date +%s); DEADLINE=${DEADLINE:-500}; P=${P:-8}; G=${G:-/tmp/g}; OUT=${OUT:-/tmp/out}
rm -rf /tmp/site; python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || return 3
export PYTHONPATH=/tmp/site:$PWD XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 \
  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 START DEADLINE G
nvidia-smi -L; grep -m1 "model name" /proc/cpuinfo; nproc; nproc --all
python3 -c "import jax, flax, pgx, skopt, tyro, blackjax; print('jax', jax.__version__, jax.devices())" || return 4
