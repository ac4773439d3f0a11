#!/usr/bin/env bash
# Builds bench/transpose_check.cu for both transpose candidates at every VEC (here, after
# scripts/stage.sh, which empties .stage: `bench/transpose_check.sh build`) and runs each build
# under compute-sanitizer memcheck (on the GPU machine, with .stage carried:
# `bench/transpose_check.sh run`): full, partial and one-element tiles, shapes that are and are
# not multiples of VEC, and unaligned pointers.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.stage/transpose_check
configs="64:4:1 64:4:2 64:4:4 32:8:4 16:16:4"
shapes="1000x777 8192x8192 1024x12 12x1028 1024x12+1 3x5 1x1 64x64 4x4 65x63 4096x2052+2"
case "${1:-}" in
  build)
    mkdir -p "$dir"
    for c in smem_tiled persistent_tiles; do
      for cfg in $configs; do
        IFS=: read -r tile rows vec <<< "$cfg"
        nvcc -O2 -arch=sm_90a -Iinclude -DCANDIDATE="\"../examples/cuda/transpose/candidates/$c.cu\"" \
          -DTILE=$tile -DBLOCK_ROWS=$rows -DVEC=$vec -o "$dir/${c}_${tile}_${rows}_${vec}" bench/transpose_check.cu
      done
    done
    du -sh "$dir" ;;
  run)
    fail=0
    for b in "$dir"/*; do
      echo "== $(basename "$b")"
      if ! compute-sanitizer --tool memcheck --print-limit 5 "$b" $shapes; then fail=1; fi
    done
    exit $fail ;;
  *) echo "usage: $0 build|run" >&2; exit 2 ;;
esac
