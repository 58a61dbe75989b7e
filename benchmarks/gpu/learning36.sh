#!/bin/bash
# Issue 36's recipe rounds 10 and 11 on one GPU (the device tool's machine; wheels as in repair34.sh):
# `benchmarks/learning.py` for each recipe in RECIPES (default: round 10 and the default of then, `afterstates_64`),
# each its own process, P side by side, 3 seeds x TOTAL env steps (default 9,994,240: 4 whole
# segments, so the lr decays to 0 at 10M), evaluated every EVAL steps (default 2,498,560) on 64
# greedy games per seed; a process still running at
# DEADLINE seconds after the start is stopped (its finished evaluations are kept). The JSON
# lines go to $OUT/learning36.tar.gz (one RECIPE.jsonl each, and the logs):
#   DEADLINE=500 P=8 bash benchmarks/gpu/learning36.sh
# SEED (default 0) is learning.py's root seed: another SEED gives 3 fresh seeds per recipe.
# Round 11 (2026-11-26, one H100, `benchmarks/results.md`): the (256, 256) trunk confirmed with
# fresh seeds beside three single changes to it, two calls of ~5 minutes with root seeds 1 and 2.
# TOTAL and EVAL there are whole numbers of updates for 32- and 128-step rollouts alike (304
# and 76 updates of 256 envs per evaluation), so every lr ends at 9.96M; the defaults above
# would round r11_256_steps128 up to 12.45M. `default` was the (64, 64) trunk then: name
# `afterstates_64` to re-run it (since round 11 `default` is the (256, 256) trunk).
#   SEED=1 TOTAL=9961472 EVAL=2490368 RECIPES="default r10_afterstates_256 r11_afterstates_512 r11_256_steps128 r11_256_lr5e-4" DEADLINE=470 P=5 bash benchmarks/gpu/learning36.sh
#   SEED=2 TOTAL=9961472 EVAL=2490368 RECIPES="default r10_afterstates_256 r11_afterstates_512 r11_256_steps128" DEADLINE=370 P=4 bash benchmarks/gpu/learning36.sh
# (Its first run, 2026-11-26, had TOTAL=10000000 and EVAL=2500000: 2,498,560-step segments,
# rounded up to 5, so every recipe's lr decayed over 12.49M and the 10M row was read with the
# lr at a fifth of its start.)
set -u
source "$(dirname "$0")/setup.sh" || exit $?
TOTAL=${TOTAL:-9994240}; EVAL=${EVAL:-2498560}
RECIPES=${RECIPES:-"afterstates_64 r10_afterstates_128 r10_afterstates_256 r10_afterstates_64x3 r10_epochs8 r10_steps128 r10_ent003"}
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
cd $G && tar czf $OUT/learning36.tar.gz *.jsonl logs && ls -la $OUT
