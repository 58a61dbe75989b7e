#!/usr/bin/env bash
# The decisive runs' queue (docs/repair.md: the stopping rule and the rows), in priority order,
# each resumable: run it again and every finished block is read back. A block's arms must all
# run on one CPU type: a kept-fixed arm already run in another row's block of the same root seed
# on this machine type is copied in (read back, not trained again); a block begun on another
# type is refused by compare.py, and such a row needs its own --out on this machine.
#   bash benchmarks/results/decide_theta0/queue.sh [ROW ...]    (default: every row)
set -eu
cd "$(dirname "$0")/../../.."
R=runs/decide_theta0
here=$(python -c "from sailor_lab import report; print(report.machine()['cpu_type'])")
share() {  # share FROM_ROW TO_ROW ARM ROOT...: copy a finished kept-fixed arm on this CPU type
  local from=$1 to=$2 arm=$3; shift 3
  for root in "$@"; do
    local src=$R/$from/seed$root dst=$R/$to/seed$root
    [ -f $src/variants/$arm/results.json ] && [ -f $src/machine.json ] || continue
    [ "$(python -c "import json; print(json.load(open('$src/machine.json'))['cpu_type'])")" = "$here" ] || continue
    [ -f $dst/machine.json ] && [ "$(python -c "import json; print(json.load(open('$dst/machine.json'))['cpu_type'])")" != "$here" ] && continue
    mkdir -p $dst/variants; [ -d $dst/variants/$arm ] || cp -r $src/variants/$arm $dst/variants/
    [ -f $dst/machine.json ] || cp $src/machine.json $dst/
  done
}
CMP="python experiments/compare.py --preset cpu --seed 100"
LEVEL_A="theta0_at_ones_level:score_gain=0.0070908,max_tile_in_corner=0.00070908,game_over=-1"
LEVEL_B="ones_at_theta0_level:score_gain=0.001547,empty_cells=0.001547,max_tile_in_corner=0.001547,monotonicity=0.001547,merges_available=0.001547,smoothness=0.001547,max_tile_increase=0.001547,game_over=1"
row() {
  case $1 in
    expert) $CMP --starts theta0 --arms fixed sailor --blocks 10 --out $R/expert ;;
    level_shape) share expert level_shape theta0.fixed 100 101
      $CMP --starts ones "$LEVEL_A" "$LEVEL_B" --arms fixed --blocks 2 --out $R/level_shape ;;
    smollm2) share expert smollm2 theta0.fixed 100 101 102 103
      $CMP --starts theta0 --arms fixed sailor --judge llm --blocks 4 --out $R/smollm2 ;;
    random_judge) share expert random_judge theta0.fixed 100 101
      $CMP --starts theta0 --arms fixed sailor_random_judge --blocks 2 --out $R/random_judge ;;
    ones) share expert ones theta0.fixed 100 101; share level_shape ones ones.fixed 100 101
      $CMP --starts ones --arms fixed sailor --blocks 2 --out $R/ones ;;
    pays_for_dying_smollm2) share expert pays_for_dying_smollm2 theta0.fixed 100 101
      $CMP --starts pays_for_dying --arms fixed sailor --judge llm --blocks 2 --out $R/pays_for_dying_smollm2 ;;
    *) echo "unknown row $1"; exit 2 ;;
  esac
  bash benchmarks/results/decide_theta0/store.sh $R/$1 $1
}
for r in ${@:-expert level_shape smollm2 random_judge ones pays_for_dying_smollm2}; do
  start=$SECONDS; row $r; echo "row $r: $((SECONDS - start)) s"
done
