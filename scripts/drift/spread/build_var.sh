#!/usr/bin/env bash
# build_var.sh LLAMA_BUILD OUT: golden_var.cpp against a llama.cpp build's static libs (as shared/tools/golden/build.sh)
set -euo pipefail
src=${LLAMA_SRC:-/root/ref/llama.cpp}; b=$1; out=$2  # LLAMA_SRC: the llama.cpp b10108 checkout
libs=$(find "$b" -name 'libllama.a' -o -name 'libggml*.a' | tr '\n' ' ')
g++ -O2 -std=c++17 "$(dirname "$0")/golden_var.cpp" -I"$src/include" -I"$src/ggml/include" -o "$out" \
  -Wl,--start-group $libs -Wl,--end-group -fopenmp -lpthread -ldl
