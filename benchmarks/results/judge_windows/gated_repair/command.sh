set -x
CMP="python experiments/compare.py --preset cpu"
ARM="gated_llm:base=sailor_evidence,ranker.kind=llm"
for S in 500 501; do $CMP --starts pays_for_dying --arms fixed "$ARM" --seed $S --out runs/pays_b32/seed$S || exit 1; done
$CMP --starts pays_for_dying --arms fixed "$ARM" --seed 500 --blocks 2 --finished-only --out runs/pays_b32
