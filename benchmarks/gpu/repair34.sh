#!/bin/bash
# Issue 34's repair arms on one GPU (the device tool's H100): each arm its own process
# (`experiments/repair.py --only`), P side by side, in the priority order below, until
# DEADLINE seconds after the start; the finished arms' folders then go to $OUT/arms.tar.gz and
# the tables are written on the CPU machine with `--finished-only` (same flags, same --out).
#
# The machine's image has jax 0.11.2 (CUDA) and flax but not pgx, tyro or scikit-optimize:
# carry them as Python 3.12 wheels in .whl/ (git-ignored), downloaded here with
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl pgx==2.6.0 \
#     svgwrite==1.4.3 tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.1 \
#     scikit-optimize==0.10.2 pyaml==26.7.0 cma==4.5.0 tensorboardX==2.6.5 \
#     orbax-checkpoint==0.12.8 optax==0.2.8 chex==0.1.92
# (not flax 0.12.8: it fails to import under jax 0.11.2). Then, on that machine:
#   bash benchmarks/gpu/repair34.sh
# Issue 49's whole table at ~5M env steps per seed for the default (8 warm-up updates, the
# regret verdict compared as sums; 32 updates of 20 PPO updates; 30 arms in priority order,
# about two calls; not yet run):
#   DEADLINE=540 P=10 ARMS=benchmarks/gpu/repair49_5m.arms bash benchmarks/gpu/repair34.sh
# then the same with SKIP set to the number of arms the first call finished.
set -u
source "$(dirname "$0")/setup.sh" || exit $?
mkdir -p $G/logs
run_arm() {  # DIR START.METHOD [flags]: one arm of --out $G/DIR, killed at the deadline
  local dir=$1 arm=$2; shift 2  # arms are independent: each runs with its own start and method
  local left=$(( START + DEADLINE - $(date +%s) ))
  if [ $left -lt 90 ]; then echo "not started: $dir $arm"; return 0; fi
  local t0=$(date +%s)
  timeout -s INT $left python3 experiments/repair.py --preset cpu --starts ${arm%%.*} \
    --methods ${arm#*.} "$@" --out $G/$dir --only $arm > $G/logs/$dir.$arm.log 2>&1
  echo "rc $? after $(( $(date +%s) - t0 )) s: $dir $arm"
}
export -f run_arm
default_arms() { cat <<'ARMS'
b09 theta0.fixed --value-beta 0.9 --no-survival-guard
b09 pays_for_dying.fixed --value-beta 0.9 --no-survival-guard
b09 chases_max_tile.fixed --value-beta 0.9 --no-survival-guard
b09 ones.fixed --value-beta 0.9 --no-survival-guard
b09 theta0.sailor_value --value-beta 0.9 --no-survival-guard
b09 pays_for_dying.sailor_value --value-beta 0.9 --no-survival-guard
b09 chases_max_tile.sailor_value --value-beta 0.9 --no-survival-guard
b5 pays_for_dying.sailor_value --value-beta 5 --no-survival-guard
b5 chases_max_tile.sailor_value --value-beta 5 --no-survival-guard
b5 theta0.sailor_value --value-beta 5 --no-survival-guard
b09 theta0.sailor --value-beta 0.9 --no-survival-guard
b09 pays_for_dying.sailor --value-beta 0.9 --no-survival-guard
b09 chases_max_tile.sailor --value-beta 0.9 --no-survival-guard
b09 theta0.sailor_value_random_judge --value-beta 0.9 --no-survival-guard
b5 theta0.sailor_value_random_judge --value-beta 5 --no-survival-guard
b09 pays_for_dying.sailor_value_outcome --value-beta 0.9 --no-survival-guard
b09 chases_max_tile.sailor_value_outcome --value-beta 0.9 --no-survival-guard
b09 ones.sailor_value --value-beta 0.9 --no-survival-guard
b5 ones.sailor_value --value-beta 5 --no-survival-guard
b09 ones.sailor --value-beta 0.9 --no-survival-guard
b09 pays_for_dying.sailor_value_random_judge --value-beta 0.9 --no-survival-guard
b09 chases_max_tile.sailor_value_random_judge --value-beta 0.9 --no-survival-guard
b5 pays_for_dying.sailor_value_random_judge --value-beta 5 --no-survival-guard
b5 chases_max_tile.sailor_value_random_judge --value-beta 5 --no-survival-guard
b09 ones.sailor_value_random_judge --value-beta 0.9 --no-survival-guard
b09 theta0.sailor_value_outcome --value-beta 0.9 --no-survival-guard
b09 pays_for_dying.sailor_value_regret --value-beta 0.9 --no-survival-guard
b09 chases_max_tile.sailor_value_regret --value-beta 0.9 --no-survival-guard
ARMS
}
# Arms of 2026-11-25 (before repair.py's value arms defaulted to beta 5 and the survival
# guard: hence the flags). ARMS=FILE: other arms, one "DIR ARM [flags]" per line (e.g. benchmarks/gpu/repair34_z.arms)
# SKIP=N: leave out the first N arms (those a previous call brought back).
if [ -n "${ARMS:-}" ]; then cat "$ARMS"; else default_arms; fi | tail -n +$(( ${SKIP:-0} + 1 )) | xargs -P $P -L 1 bash -c 'run_arm "$@"' _
echo "all arms ended after $(( $(date +%s) - START )) s"
cd $G && find . -name results.json -o -name config.json -o -name metrics.jsonl \
  | tar czf $OUT/arms.tar.gz -T - logs && ls -la $OUT
