#!/usr/bin/env bash
# run_var.sh BINARY OUTDIR [golden_var options]: a golden_var build on every file of files.txt, 24 tokens after the
# prompt fed from the reference's greedy (force/NAME.txt), i.e. teacher-forced.
set -u
bin=$1; out=$2; shift 2; here=$(cd "$(dirname "$0")" && pwd)
shared=${GGUFD_SHARED_DIR:-$here/../../../../shared}
mkdir -p "$out"
while read -r f p; do
  name=$(basename "$f")
  case $p in
    prompts-long) pj=$shared/tools/golden/prompts-long.json ;;
    prompts) pj=$shared/tools/golden/prompts.json ;;
    prompts3) pj=$here/prompts3.json ;;
  esac
  "$bin" $shared/models/synth/$name.gguf "$pj" 24 "$out/$name.json" --force "$here/force/$name.txt" "$@" > "$out/$name.log" 2>&1 || echo "FAILED $name"
done < "$here/files.txt"
