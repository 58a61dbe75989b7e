#!/bin/bash
# Arms of a comparison on one GPU (the device tool's machine): each arm its own process
# (`experiments/compare.py --only`), P side by side, in the order of the ARMS file, until
# DEADLINE seconds after the start; the finished arms' folders then go to $OUT/arms.tar.gz and
# the tables are written on the CPU machine with `--finished-only` (same flags, same --out).
#
# The machine's image has jax (CUDA) and flax but not pgx, tyro or scikit-optimize: carry them
# as Python 3.12 wheels in .whl/ (git-ignored), as benchmarks/gpu/setup.sh says. Then, on that
# machine, the recommended SAILOR's table at ~5M env steps per seed (32 updates of 20 PPO
# updates; 24 arms in priority order, about two calls; not yet run):
#   DEADLINE=540 P=10 ARMS=benchmarks/gpu/compare_5m.arms bash benchmarks/gpu/compare_arms.sh
# then the same with SKIP set to the number of arms the first call finished.
# ARMS=FILE: one "DIR START.ARM [flags]" per line; SKIP=N: leave out the first N arms.
set -u
source "$(dirname "$0")/setup.sh" || exit $?
mkdir -p $G/logs
run_arm() {  # DIR START.ARM [flags]: one arm of --out $G/DIR, killed at the deadline
  local dir=$1 arm=$2; shift 2  # arms are independent: each runs with its own start and arm
  local left=$(( START + DEADLINE - $(date +%s) ))
  if [ $left -lt 90 ]; then echo "not started: $dir $arm"; return 0; fi
  local t0=$(date +%s)
  timeout -s INT $left python3 experiments/compare.py --preset cpu --starts ${arm%%.*} \
    --arms ${arm#*.} "$@" --out $G/$dir --only $arm > $G/logs/$dir.$arm.log 2>&1
  echo "rc $? after $(( $(date +%s) - t0 )) s: $dir $arm"
}
export -f run_arm
cat "${ARMS:?name the arms file: ARMS=benchmarks/gpu/compare_5m.arms}" | tail -n +$(( ${SKIP:-0} + 1 )) | xargs -P $P -L 1 bash -c 'run_arm "$@"' _
echo "all arms ended after $(( $(date +%s) - START )) s"
cd $G && find . -name results.json -o -name config.json -o -name metrics.jsonl \
  | tar czf $OUT/arms.tar.gz -T - logs && ls -la $OUT
