#!/bin/bash
# PPO learning curves of several recipes side by side on one GPU (the device tool's machine;
# wheels as in compare_arms.sh): `benchmarks/learning.py` for each recipe in RECIPES (default: the
# CPU- and GPU-sized defaults, `afterstates_64 default`), each its own process, P side by side,
# 3 seeds x TOTAL env steps (default 9,994,240: 4 whole segments, so the lr decays to 0 at 10M),
# evaluated every EVAL steps (default 2,498,560) on 64 greedy games per seed; a process still
# running at DEADLINE seconds after the start is stopped (its finished evaluations are kept).
# The JSON lines go to $OUT/learning.tar.gz (one RECIPE.jsonl each, and the logs):
#   DEADLINE=500 P=2 bash benchmarks/gpu/learning.sh
# SEED (default 0) is learning.py's root seed: another SEED gives 3 fresh seeds per recipe.
# TOTAL and EVAL should be whole numbers of updates of every recipe's rollout (e.g.
# TOTAL=9961472 EVAL=2490368 for 32- and 128-step rollouts of 256 envs), else a recipe's budget
# rounds up to whole segments and its lr ends later.
set -u
source "$(dirname "$0")/setup.sh" || exit $?
TOTAL=${TOTAL:-9994240}; EVAL=${EVAL:-2498560}
RECIPES=${RECIPES:-"afterstates_64 default"}
mkdir -p $G/logs
run_recipe() {  # RECIPE: one learning.py run, stopped at the deadline
  local left=$(( START + DEADLINE - $(date +%s) )) t0=$(date +%s)
  if [ $left -lt 60 ]; then echo "not started: $1"; return 0; fi
  timeout -s INT $left python3 benchmarks/learning.py --recipe $1 --total-timesteps $TOTAL \
    --num-seeds 3 --seed ${SEED:-0} --eval-every $EVAL --eval-episodes 64 --json --out $G/runs/$1 \
    > $G/$1.jsonl 2> $G/logs/$1.log
  echo "rc $? after $(( $(date +%s) - t0 )) s: $1 ($(wc -l < $G/$1.jsonl) evaluations)"
}
export -f run_recipe; export TOTAL EVAL SEED
echo $RECIPES | tr ' ' '\n' | xargs -P $P -I{} bash -c 'run_recipe {}'
echo "all recipes ended after $(( $(date +%s) - START )) s"
cd $G && tar czf $OUT/learning.tar.gz *.jsonl logs && ls -la $OUT
