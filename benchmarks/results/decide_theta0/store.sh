#!/usr/bin/env bash
# Copy the finished blocks of a decisive comparison into this folder, gzip -9 -n (raw results
# stay small): store.sh RUNS_DIR JUDGE, e.g. store.sh runs/decide_theta0/expert expert
set -eu
src=$1; dst=$(dirname "$0")/$2; mkdir -p "$dst"
for block in "$src"/seed*/; do
  name=$(basename "$block")
  [ -f "$block/compare.json" ] || continue
  gzip -9 -n -c "$block/compare.json" > "$dst/$name.compare.json.gz"
done
if [ -f "$src/compare.json" ]; then
  gzip -9 -n -c "$src/compare.json" > "$dst/compare.json.gz"
  cp "$src/compare.md" "$dst/compare.md"
  mkdir -p "$dst/figures"; cp "$src"/figures/profiles_*.png "$dst/figures/" 2>/dev/null || true
fi
ls -la "$dst"
