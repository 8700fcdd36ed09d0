#!/usr/bin/env bash
# make_results.sh: results/VARIANT.NAME.{json,txt} from runs/, then table.md.
cd "$(dirname "$0")"
shared=${GGUFD_SHARED_DIR:-../../../../shared}
for v in native avx2 nosimd thr1 ub128 ub32 tok1 nofa; do
  while read -r f p; do
    n=$(basename "$f"); m=""
    [ -f runs/margins/$n.json.gz ] && m="--margins runs/margins/$n.json.gz"
    python3 spread.py $shared/golden/$f.json runs/$v/$n.json.gz $m --json results/$v.$n.json > results/$v.$n.txt || echo "FAIL $v $n"
  done < files.txt
  # synth-llama-Q4_K_M's shared reference is not this build's output: also against this build's own (runs/check-top20)
  python3 spread.py runs/check-top20/synth-llama-Q4_K_M.json runs/$v/synth-llama-Q4_K_M.json.gz \
    --json results/$v.synth-llama-Q4_K_M.vs-regenerated.json > results/$v.synth-llama-Q4_K_M.vs-regenerated.txt
done
python3 table.py > table.md
