#!/usr/bin/env bash
# Builds vocab_ref.cpp or pretok_ref.cpp (the file name of OUT picks which) against a built llama.cpp
# tree (static libs), as ../shared/tools/golden/build.sh
# does for golden.cpp. Usage: build_ref.sh LLAMA_SRC LLAMA_BUILD OUT
set -euo pipefail
src=$1; b=$2; out=$3
libs=$(find "$b" -name 'libllama.a' -o -name 'libggml*.a' | tr '\n' ' ')
g++ -O1 -std=c++17 "$(dirname "$0")/$(basename "$out").cpp" -I"$src/include" -I"$src/ggml/include" -o "$out" \
  -Wl,--start-group $libs -Wl,--end-group -fopenmp -lpthread -ldl
