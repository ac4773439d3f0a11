#!/usr/bin/env bash
# Where a draft's compile latency goes on this machine (docs/search.md, "What keeps the GPU fed"):
# nvcc's phases for one candidate alone (nvcc -time), cuobjdump -sass, the tool probes the
# toolchain runs once (nvcc/g++ --version, nvidia-smi), and one compile's wall time when N
# compiles run at once (N in $CL_PAR, default "1 4 8 16"), at nice 0 and at nice 10 beside
# one nice-0 compile. Usage: bench/compile_latency.sh [SOURCE.cu [-DNAME=V ...]]
set -u
src=${1:-examples/cuda/row_softmax/candidates/block_in_registers.cu}
shift || true
defs=("$@")
[[ ${#defs[@]} -eq 0 ]] && defs=(-DREG_TILE=8 -DROWS_PER_BLOCK=8 -DROW_THREADS=128 -DVEC=2)
inc=$(cd "$(dirname "$0")/.." && pwd)/include
arch=${CL_ARCH:-sm_90a}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -lineinfo -std=c++17 -Xcompiler -fPIC -shared -Xptxas -v "-gencode=arch=compute_${arch#sm_},code=$arch" -I "$inc")
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.2f}')"; }

echo "cores: $(nproc); $(nvcc --version | tail -1)"
for probe in "nvcc --version" "g++ --version" "nvidia-smi --query-gpu=compute_cap --format=csv,noheader"; do
  t0=$(now); $probe > /dev/null 2>&1; t1=$(now); echo "probe $(secs $t0 $t1) s: $probe"
done
# One compile alone, twice (the first may read the compiler's binaries from disk).
for k in 1 2; do
  t0=$(now); nvcc "${flags[@]}" "${defs[@]}" -DKP_LAT_RUN=$k -o "$tmp/alone$k.so" "$src" -time "$tmp/phases$k.csv" > /dev/null 2>&1
  t1=$(now); echo "alone, run $k: $(secs $t0 $t1) s"
done
python3 - "$tmp/phases2.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))[1:]
print("  phases: " + ", ".join(f"{r[1].strip()} {float(r[6]):.0f} ms" for r in rows if len(r) > 6))
PY
if command -v cuobjdump > /dev/null; then
  t0=$(now); cuobjdump -sass "$tmp/alone2.so" > /dev/null; t1=$(now); echo "cuobjdump -sass: $(secs $t0 $t1) s"
  # What the toolchain runs when it disassembles an object: extract the ELFs, disassemble the kernels' one.
  mkdir "$tmp/elf"
  t0=$(now); (cd "$tmp/elf" && cuobjdump -xelf all "$tmp/alone2.so" > /dev/null && cuobjdump -sass *.cubin > /dev/null)
  t1=$(now); echo "cuobjdump -xelf all, then -sass on $(ls "$tmp/elf" | tr '\n' ' '): $(secs $t0 $t1) s"
  # Their parts (with a served runner an evaluation can be shorter than the SASS extract).
  mkdir "$tmp/elf2"
  t0=$(now); (cd "$tmp/elf2" && cuobjdump -xelf all "$tmp/alone2.so" > /dev/null); t1=$(now)
  echo "  cuobjdump -xelf all alone: $(secs $t0 $t1) s"
  cubin=$(ls "$tmp"/elf2/*.cubin | head -1)
  t0=$(now); cuobjdump -sass "$cubin" > /dev/null; t1=$(now); echo "  cuobjdump -sass on the cubin alone: $(secs $t0 $t1) s"
  t0=$(now); nvdisasm "$cubin" > /dev/null 2>&1; t1=$(now); echo "  nvdisasm on the cubin: $(secs $t0 $t1) s"
  # nvcc keeping its intermediates: the cubin without an extract, and what keeping costs.
  mkdir "$tmp/keep"
  t0=$(now); nvcc "${flags[@]}" "${defs[@]}" -DKP_LAT_KEEP=1 -keep -keep-dir "$tmp/keep" -o "$tmp/keep.so" "$src" > /dev/null 2>&1
  t1=$(now); echo "  nvcc -keep: $(secs $t0 $t1) s; kept cubins: $(cd "$tmp/keep" && ls *.cubin 2>/dev/null | tr '\n' ' ')"
  # SASS beside the compile (SystemToolchain::SassBeside): a device-only compile
  # into a cubin and cuobjdump on it, started with the full compile; when each ends.
  noshared=()
  for f in "${flags[@]}"; do [[ $f != -shared ]] && noshared+=("$f"); done
  t0=$(now)
  (nvcc -cubin "${noshared[@]}" "${defs[@]}" -DKP_LAT_BESIDE=1 -o "$tmp/beside.cubin" "$src" > /dev/null 2>&1 \
     && t1=$(now) && cuobjdump -sass "$tmp/beside.cubin" > "$tmp/beside.sass" && t2=$(now) \
     && echo "  beside: cubin at $(secs $t0 $t1) s, its SASS at $(secs $t0 $t2) s") &
  nvcc "${flags[@]}" "${defs[@]}" -DKP_LAT_BESIDE=1 -o "$tmp/beside.so" "$src" > /dev/null 2>&1
  t1=$(now); wait; echo "  beside: the object at $(secs $t0 $t1) s"
fi
[[ -n "${CL_SASS_ONLY:-}" ]] && exit 0
# N at once: every compile gets its own -D value so none is a copy of another.
for n in ${CL_PAR:-1 4 8 16}; do
  t0=$(now)
  for i in $(seq 1 $n); do
    ( s=$(now); nvcc "${flags[@]}" "${defs[@]}" -DKP_LAT_N=$n$i -o "$tmp/p$n-$i.so" "$src" > /dev/null 2>&1; e=$(now)
      secs $s $e > "$tmp/w$n-$i" ) &
  done
  wait; t1=$(now)
  echo "$n at once: all done in $(secs $t0 $t1) s; each $(cat "$tmp"/w$n-* | sort -n | tr '\n' ' ')"
done
# One nice-0 compile beside 15 at nice 10: what a draft gets when the guesses are niced.
t0=$(now)
for i in $(seq 1 15); do nice -n 10 nvcc "${flags[@]}" "${defs[@]}" -DKP_LAT_NICE=$i -o "$tmp/n$i.so" "$src" > /dev/null 2>&1 & done
sleep 0.3
s=$(now); nvcc "${flags[@]}" "${defs[@]}" -DKP_LAT_NICE=0 -o "$tmp/n0.so" "$src" > /dev/null 2>&1; e=$(now)
wait; t1=$(now)
echo "one nice-0 compile beside 15 at nice 10: $(secs $s $e) s (all done in $(secs $t0 $t1) s)"
