#!/usr/bin/env bash
# Runs on the GPU machine from the repo root with .stage/ carried (scripts/stage.sh): doctor, one
# eval, the gpu-labelled tests, the adversarial suite, timing stability, agreement with ncu and the
# cost of an evaluation by default, or the steps named.
# Writes logs under $OUT (packed into $OUT/session.tgz when more than 8 files). Steps: all (default) or a
# list, e.g. `bench/gpu_session.sh eval tests`.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.stage/lib:${LD_LIBRARY_PATH:-}
export KPILOT_TEST_SOURCE_DIR=$PWD KPILOT_TEST_BINARY_DIR=$PWD/.stage
K=$PWD/.stage/bin/kpilot
OUT=${OUT:-/tmp/kpilot-out}
mkdir -p "$OUT"
# Candidates run as a user of their own (docs/threat-model.md); the bare machine lacks it.
getent passwd kpilot-sandbox >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin kpilot-sandbox
steps=${*:-doctor eval tests adversarial stability ncu cost}
SM=examples/cuda/row_softmax
KB=${KB:-$PWD/.stage/data/kernelbench/KernelBench}
# short_runs NAME TAG FLAG "MODES": short optimize runs for the GPU's busy share (BUDGET, default 20, on
# FP_TASKS) once per mode of FLAG, with NVML sampled, then their busy timeline; events under
# $OUT/NAME.tgz.
short_runs() {
  local name=$1 tag=$2 flag=$3 mode
  for mode in $4; do
    timeout 280 python3 bench/optimize_figures.py --kpilot $K --budget ${BUDGET:-20} --out $OUT/$name --tag _$tag$mode \
      --extra "$flag $mode ${FP_EXTRA:-}" ${FP_TASKS:-examples/cuda/vector_add examples/cuda/row_softmax examples/cuda/transpose} \
      2>&1 | tail -5
  done 2>&1 | tee "$OUT/$name.txt"
  python3 bench/busy_timeline.py $OUT/$name/events_*.jsonl 2>&1 | tee "$OUT/${name}_timeline.txt"
  (cd "$OUT" && tar czf $name.tgz $name && rm -rf $name)
}
for step in $steps; do
  echo "===== $step"
  case $step in
    doctor) $K doctor 2>&1 | tee "$OUT/doctor.txt" ;;
    eval) $K eval $SM $SM/candidates/block_online.cu --store /tmp/kp-store 2>&1 | tee "$OUT/eval.txt"
          $K eval $SM $SM/reference.cu --store /tmp/kp-store --timing kernelbench --workload 8192x4096 2>&1 | tail -8 ;;
    energy) $K eval $SM $SM/candidates/block_online.cu --store /tmp/kp-store --workload 8192x4096 --energy 2>&1 \
              | tee "$OUT/energy.txt" | grep -E "verdict|8192x4096|energy|warning" ;;
    modes) for m in kernelbench flashinfer; do
             $K eval $SM $SM/candidates/block_online.cu --store /tmp/kp-store --workload 8192x4096 --timing $m 2>&1 \
               | grep -E "verdict|8192x4096|workload"; done 2>&1 | tee "$OUT/modes.txt" ;;
    memo) $K eval tests/adversarial/tasks/vadd tests/adversarial/candidates/memoize_by_pointer.cu --timing kernelbench \
            --json --no-store > "$OUT/memo.json" 2>&1
          python3 -c "import json,sys; j=json.load(open(sys.argv[1])); d=j['run_details']; print(j['verdict']); print(json.dumps({k: d.get(k) for k in ('floor_ms','clocks')})); print(j['calibration']); print([(t['workload'], t['candidate']['median_ms'], t['statistic']) for t in j['timings']])" "$OUT/memo.json" ;;
    tests) timeout 420 .stage/bin/cuda_eval_test 2>&1 | tee "$OUT/cuda_eval_test.txt" | grep -vE '^\[ +(RUN|OK) +\]' | tail -45 ;;
    adversarial) [[ -x .stage/bin/adversarial_test ]] && KPILOT_ADVERSARIAL_REPORT=$OUT/adversarial.json \
                 timeout 300 .stage/bin/adversarial_test 2>&1 | tee "$OUT/adversarial.txt" | tail -45 ;;
    stability) python3 bench/stability.py --kpilot $K --runs 10 $SM $SM/candidates/block_online.cu -- --workload 8192x4096 \
                 2>&1 | tee "$OUT/stability.txt" ;;
    ncu) python3 bench/ncu_agreement.py $SM $SM/candidates/block_online.cu 8192x4096 '^SoftmaxRows$' --kpilot $K \
           2>&1 | tee "$OUT/ncu.txt" ;;
    footprints) # A live optimize with the params generator's compile footprints on and off (docs/search.md).
            for fp in ${FP_MODES:-on off}; do
              timeout 250 $K optimize examples/cuda/sgemm --budget ${BUDGET:-16} --footprints $fp --json \
                --store /tmp/kp-fp-$fp > "$OUT/footprints_$fp.json" 2> "$OUT/footprints_$fp.events"
              echo "footprints $fp: exit $?, drafts compiled first: $(grep -c 'compiled first' "$OUT/footprints_$fp.events")," \
                   "objects compiled: $(ls /tmp/kp-fp-$fp/cache | wc -l)"
              python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print({k: j.get(k) for k in ('evaluations','busy_share','best_params')}, j['final']['speedup_geomean'])" \
                "$OUT/footprints_$fp.json"
            done 2>&1 | tee "$OUT/footprints.txt" ;;
    counters) # Counter profiles of new bests (docs/search.md): the same live optimize with --counters on and off.
            for t in ${CT_TASKS:-transpose sgemm}; do for c in ${CT_MODES:-on off}; do
              timeout ${CT_TIMEOUT:-200} $K optimize examples/cuda/$t --budget ${BUDGET:-16} --counters $c --json \
                --store /tmp/kp-ct-$t-$c > "$OUT/counters_${t}_$c.json" 2> "$OUT/counters_${t}_$c.events"
              echo "$t --counters $c: exit $?"
              python3 bench/counters_summary.py "$OUT/counters_${t}_$c.json" "$OUT/counters_${t}_$c.events"
            done; done 2>&1 | tee "$OUT/counters.txt"
            (cd "$OUT" && tar czf counters_runs.tgz counters_*.json counters_*.events && rm -f counters_*.json counters_*.events) ;;
    multikernel) # CUPTI's range profiler on calls that launch more than one kernel, user and kernel replay.
            for c in ${MK_CASES:-vector_add:reference.cu sum_reduction:reference.cu sum_reduction:candidates/grid_stride_shuffle.cu sum_reduction:candidates/cuda_graph.cu sgemm:candidates/split_k.cu}; do
              t=${c%%:*}; f=${c#*:}
              for r in ${MK_REPLAYS:-user kernel}; do
                o="$OUT/mk_${t}_$(basename "$f" .cu)_$r"
                timeout 120 $K profile examples/cuda/$t examples/cuda/$t/$f --profiler cupti --replay $r --no-store \
                  --json ${MK_ARGS:-} > "$o.json" 2> "$o.err"
                echo "$t $f --replay $r: exit $? $(python3 bench/multikernel_summary.py "$o.json" "$o.err")"
              done
            done 2>&1 | tee "$OUT/multikernel.txt"
            (cd "$OUT" && tar czf multikernel.tgz mk_* && rm -f mk_*) ;;
    devices) # One evaluation queue per GPU: the same live optimize on one GPU and on all of them.
            for d in 0 all; do
              t0=$(date +%s.%N)
              timeout ${DV_TIMEOUT:-240} $K optimize examples/cuda/${DV_TASK:-sgemm} --budget ${BUDGET:-32} --devices $d \
                --json --store /tmp/kp-dv-$d > "$OUT/devices_$d.json" 2> "$OUT/devices_$d.events"
              rc=$?; t1=$(date +%s.%N)
              python3 -c "import json,sys,collections; j=json.load(open(sys.argv[1])); w=float(sys.argv[3].split()[1])-float(sys.argv[3].split()[0])
ev=[json.loads(l) for l in open(sys.argv[2]) if l.startswith('{')]
per=collections.Counter(e.get('device') for e in ev if e.get('event')=='evaluated')
print(f'--devices {sys.argv[4]}: exit {sys.argv[5]}, {j[\"evaluations\"]} evaluations in {w:.1f} s ({60*j[\"evaluations\"]/w:.1f}/min), per GPU {dict(per)}, busy share {j[\"busy_share\"]:.3f}, depth {j[\"pipeline_depth\"]}, final {j[\"final\"][\"speedup_geomean\"]:.3f}x')" \
                "$OUT/devices_$d.json" "$OUT/devices_$d.events" "$t0 $t1" $d $rc
            done 2>&1 | tee "$OUT/devices.txt"
            # DV_BENCH=1: kpilot bench over the team's suite on one GPU and on all (evaluations per hour).
            [[ -z "${DV_BENCH:-}" ]] && continue
            for d in 0 all; do
              t0=$SECONDS
              timeout ${DV_BENCH_TIMEOUT:-240} $K bench examples/kernelbench --levels ${KB_LEVELS:-1,2,3} --budget ${KB_BUDGET:-4} \
                --devices $d --store /tmp/kp-dvb-$d --out "$OUT/devices_bench_$d" --json > "$OUT/devices_bench_$d.json" \
                2> "$OUT/devices_bench_$d.log"
              rc=$?; w=$((SECONDS - t0))
              python3 -c "import json,sys; r=json.load(open(sys.argv[1])); p=r.get('problems',[]); n=sum(x.get('evaluations',0) for x in p)
print(f'bench --devices {sys.argv[3]}: exit {sys.argv[4]}, {len(p)} problems, {n} evaluations in {sys.argv[2]} s ({3600*n/max(1,int(sys.argv[2])):.0f}/hour)')" \
                "$OUT/devices_bench_$d/report.json" $w $d $rc
            done 2>&1 | tee -a "$OUT/devices.txt" ;;
    killresume) # kill -9 where an evaluation has ended but its node is not recorded, resume, count (docs/search.md).
            for t in sgemm transpose; do
              timeout 280 python3 bench/kill_resume.py examples/cuda/$t --budget ${BUDGET:-12} --kills 2 --kpilot $K --timeout 250 \
                --store /tmp/kp-kill-$t --out "$OUT/kill_resume_$t.json" > /dev/null 2> "$OUT/kill_resume_$t.err"
              echo "$t: exit $?"; python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print({k: j[k] for k in ('kills','served_from_journal_per_resume','nodes','evaluations_run','repeated_evaluations','promotion_checks_run','repeated_promotion_checks','final_evaluations_run','run','ok')})" "$OUT/kill_resume_$t.json"
              python3 -c "import json,sys; print('runners at kill / left 3 s later:', [(k['runners_at_kill'], k['runners_left_after_3s']) for k in json.load(open(sys.argv[1]))['kills']])" "$OUT/kill_resume_$t.json"
              du -sh /tmp/kp-kill-$t/blobs 2>/dev/null
            done ;;
    killcaller) # kill -9 kpilot while its runner holds the GPU (cuda eval, ncu profile, torch worker): how long the
            # runner outlives it and keeps the timing lock (bench/kill_caller.py).
            timeout 300 python3 bench/kill_caller.py --kpilot $K --after ${KC_AFTER:-1} --out "$OUT/kill_caller.json" -- \
              eval examples/cuda/sgemm examples/cuda/sgemm/reference.cu --no-store --- \
              profile examples/cuda/sgemm examples/cuda/sgemm/reference.cu --profiler ncu --no-store --- \
              eval examples/kernelbench/level1/1_ReLU.py examples/kernelbench/level1/1_ReLU.py --no-store 2>&1 | tee "$OUT/kill_caller.txt"
            timeout 200 python3 bench/kill_caller.py --kpilot $K --after ${KC_AFTER:-1} --until ncu --out "$OUT/kill_caller_ncu.json" -- \
              profile examples/cuda/sgemm examples/cuda/sgemm/reference.cu --profiler ncu --no-store 2>&1 | tee -a "$OUT/kill_caller.txt" ;;
    gputests) timeout 300 .stage/bin/cli_gpu_test 2>&1 | tee "$OUT/cli_gpu_test.txt" | tail -40
              [[ -x .stage/bin/sweep_gpu_test ]] && timeout 300 .stage/bin/sweep_gpu_test 2>&1 | tail -20 ;;
    sweep) timeout 500 $K sweep bench/spaces/sgemm_space bench/spaces/sgemm_space/candidates/tiled.cu \
             --out /tmp/kp-sweep.json --store /tmp/kp-store --max-seconds 0.25 2>&1 | tail -12
           gzip -c /tmp/kp-sweep.json > "$OUT/sgemm_space.json.gz" ;;
    spaces) # Real spaces besides the sgemm space, for tuning the search (no default is tuned on the sgemm space).
            timeout 280 $K sweep examples/cuda/gemm_bf16 examples/cuda/gemm_bf16/candidates/wmma_pipelined.cu --workload 4096 \
              --out /tmp/kp-bf16.json --store /tmp/kp-store --max-seconds 0.25 2>&1 | tail -4
            timeout 280 $K sweep examples/cuda/row_softmax examples/cuda/row_softmax/candidates/block_in_registers.cu \
              --workload 8192x4096 --out /tmp/kp-softmax.json --store /tmp/kp-store --max-seconds 0.25 2>&1 | tail -4
            gzip -c /tmp/kp-bf16.json > "$OUT/gemm_bf16_space.json.gz"; gzip -c /tmp/kp-softmax.json > "$OUT/row_softmax_space.json.gz" ;;
    spaces2) # The other cuda examples' whole spaces at their largest workload: replays of the
             # skills figure and more spaces to tune the search on.
             for tw in vector_add:64M:vector_grid_stride transpose:8192x8192:smem_tiled sgemm:4096:register_tiled \
                       bias_gelu:8192x8192:vec8_tanh_approx sum_reduction:64M:grid_stride_shuffle; do
               IFS=: read -r t w c <<< "$tw"
               timeout 200 $K sweep examples/cuda/$t examples/cuda/$t/candidates/$c.cu --workload $w \
                 --out /tmp/kp-$t.json --store /tmp/kp-store --max-seconds 0.25 2>&1 | tail -2
               gzip -c /tmp/kp-$t.json > "$OUT/${t}_space.json.gz"
             done ;;
    transposespace) # Both transpose candidates' whole spaces (with VEC) at 8192x8192, then their
             # memcheck run (bench/transpose_check.sh; `kpilot eval` under memcheck times out in its load phase).
             for c in smem_tiled persistent_tiles; do
               timeout 200 $K sweep examples/cuda/transpose examples/cuda/transpose/candidates/$c.cu --workload 8192x8192 \
                 --out /tmp/kp-transpose-$c.json --store /tmp/kp-store --max-seconds 0.25 2>&1 | tail -2
               gzip -c /tmp/kp-transpose-$c.json > "$OUT/transpose_${c}_space.json.gz"
             done
             if [[ -d .stage/transpose_check ]]; then timeout 300 bench/transpose_check.sh run > "$OUT/transpose_check.txt" 2>&1
               echo "transpose_check: exit $?, $(grep -c '^ok ' "$OUT/transpose_check.txt") ok, $(grep -c '^FAIL' "$OUT/transpose_check.txt") failed"
             else echo "transpose_check: not built (run bench/transpose_check.sh build after scripts/stage.sh)"; fi ;;
    tuningspaces) # Two more real spaces to tune the search on (bench/spaces/tuning), of kernels
             # unlike the sgemm space's GEMM. --stop-after leaves a resumable file if the time runs out.
             for t in conv2d gauss_sum; do
               timeout 290 $K sweep bench/spaces/tuning/$t bench/spaces/tuning/$t/candidates/tiled.cu \
                 --out /tmp/kp-$t.json --store /tmp/kp-store --max-seconds 0.25 --stop-after ${STOP_AFTER:-240} 2>&1 | tail -3
               gzip -c /tmp/kp-$t.json > "$OUT/${t}_space.json.gz"
             done ;;
    torchtests) # The gpu-labelled tests of PyTorch-defined tasks (C++ CLI path and the Python worker).
           timeout 400 .stage/bin/pytorch_gpu_test 2>&1 | tee "$OUT/pytorch_gpu_test.txt" | grep -vE '^\[ +(RUN|OK) +\]' | tail -25
           (cd tests/python && timeout 300 python3 test_flashinfer_gpu.py -v FlashInferGpuTest.test_reference_as_candidate) \
             2>&1 | tee "$OUT/flashinfer_gpu_reference.txt" | tail -6 ;;
    flashinfergpu) # The flashinfer worker's GPU tests (ctest python_flashinfer_gpu): Solutions built as
           # torch extensions (minutes of compiles), native objects, the reference as candidate.
           (cd tests/python && timeout ${FI_TIMEOUT:-500} python3 test_flashinfer_gpu.py -v) 2>&1 \
             | tee "$OUT/python_flashinfer_gpu.txt" | tail -8 ;;
    workergpu) # The torch worker's own GPU tests (ctest python_worker_gpu), with the system python3;
           # WORKER_TESTS names some (e.g. CudaRunTest.test_waits_for_the_gpu_lock_outside_its_timeout).
           (cd tests/python && timeout 300 python3 test_worker_gpu.py -v ${WORKER_TESTS:-}) 2>&1 | tee "$OUT/python_worker_gpu.txt" | tail -8 ;;
    kbsurvey) # Every problem of a real KernelBench checkout (KB, default the staged one) described by
           # the torch worker on the meta device: inputs, outputs, bytes per call, failures.
           CUDA_VISIBLE_DEVICES= timeout ${KB_TIMEOUT:-300} python3 bench/kernelbench_survey.py "$KB" --python python3 \
             --jobs ${KB_JOBS:-12} --mem-gib 32 --json "$OUT/kb_survey.json" 2> "$OUT/kb_survey.log" | tee "$OUT/kb_survey.txt" ;;
    kbreal) # A real KernelBench checkout, each problem's reference as its candidate (--eval-reference, KB_TIMING
           # default: the procedure whose CIs can hold 1; kernelbench for the published tables), one
           # slice per call: KB_LEVELS and KB_PROBLEMS choose it; the store in .kbstore (carried there and
           # back) gathers the slices into one bench, KB_BENCH naming it after the first (KB_STORE
           # names another store, one not carried back).
           store=${KB_STORE:-.kbstore}; mkdir -p "$store"
           if [[ -n "${KB_BENCH:-}" ]]; then what=(--resume "$KB_BENCH")
           else what=("$KB" --eval-reference --timing ${KB_TIMING:-default} ${KB_FLAGS:-}); fi
           t_kb=$SECONDS
           timeout ${KB_TIMEOUT:-540} $K bench "${what[@]}" --levels ${KB_LEVELS:-1} --problems "${KB_PROBLEMS:-*}" \
             --per-gpu ${KB_PER_GPU:-3} --python python3 --store "$store" --out "$OUT/kbreal" --markdown "$OUT/kbreal.md" \
             --json > "$OUT/kbreal.json" 2> "$OUT/kbreal.log"; echo "kpilot bench exit $? after $((SECONDS - t_kb)) s" | tee -a "$OUT/kbreal.log"
           grep -v '^{' "$OUT/kbreal.log" | tail -5; grep -c '"event":"problem"' "$OUT/kbreal.log"
           # The report under --out is written even when the call's time ran out (a partial bench):
           # its "bench" is the id to resume with (KB_BENCH).
           python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("bench", r.get("bench"), "partial", r.get("partial"))' \
             "$OUT/kbreal/report.json"
           python3 bench/kernelbench_reference.py "$OUT/kbreal/report.json" \
             --published "$KB/../results/timing/H100_Modal/baseline_time_torch.json" | tee "$OUT/kbreal_figures.md"
           [[ -z "${KB_STORE:-}" ]] && tar czf "$OUT/kbstore.tgz" .kbstore ;;
    kbcoldwarm) # The suite's throughput with both baselines cached, one slice (KB_LEVELS, KB_PROBLEMS)
           # per call, needing nothing carried: the slice cold into a fresh store, which fills its
           # eager and torch.compile baseline caches, then warm, a second bench over that store.
           # Each phase's kbreal output under $OUT/cold and $OUT/warm (its wall in kbreal.log and the report,
           # which counts the torch.compile times read from the cache), packed;
           # a cold phase cut short (its report partial) leaves the warm figure meaningless.
           rm -rf /tmp/kp-coldwarm
           for phase in cold warm; do
             [[ $phase == cold ]] && limit=${KB_COLD_TIMEOUT:-300} || limit=${KB_WARM_TIMEOUT:-240}
             OUT=$OUT/$phase KB_STORE=/tmp/kp-coldwarm KB_BENCH= KB_TIMEOUT=$limit PACK=0 bash "$0" kbreal
           done ;;
    gemm) # kpilot's CUTLASS/CuTe GEMM (examples/cuda/gemm_tc) against torch.matmul in one process:
          # bench/gemm_vs_torch.py, GEMM_D the candidate's params (e.g. "-D TILE_N=256 -D CLUSTER_M=2"), or
          # GEMM_OBJECT an object compiled beforehand (`kpilot eval ... --arch sm_90a --compile-only` on
          # any machine, then carried), which saves the call the CuTe compile.
          if [[ -n "${GEMM_OBJECT:-}" ]]; then what=(--object "$GEMM_OBJECT")
          else what=(--kpilot $K --task examples/cuda/gemm_tc --candidate examples/cuda/gemm_tc/candidates/cutlass_sm90.cu
                     --workload 4096 ${GEMM_D:-}); fi
          timeout ${GEMM_TIMEOUT:-400} python3 bench/gemm_vs_torch.py "${what[@]}" \
            --shapes ${GEMM_SHAPES:-4096x4096x4096,8192x8192x8192,kernelbench} --json "$OUT/gemm.json" 2>&1 | tee "$OUT/gemm.txt" ;;
    slurmgpu) # A one-node Slurm cluster on this GPU machine from the packages staged with KPILOT_STAGE_SLURM=1
          # (tests/slurm/local_cluster.sh), then the same optimize run on the local executor and through it.
          # Unpacked beside the system, then copied in without replacing what it has: the packages put some
          # libraries under /lib, a link to /usr/lib on a merged-/usr system that must stay one.
          root=/tmp/kp-debroot; rm -rf $root; mkdir -p $root
          for f in .stage/debs/*.deb; do dpkg -x "$f" $root; done
          for d in lib lib64 bin sbin; do
            [[ -d $root/$d && ! -L $root/$d ]] && { mkdir -p $root/usr/$d; cp -a $root/$d/. $root/usr/$d/; rm -rf "${root:?}/$d"; }
          done
          cp -an $root/. /; ldconfig
          # dpkg -x runs no maintainer scripts: make the alternatives links the packages would have made.
          for b in slurmctld slurmd slurmstepd; do [[ -e /usr/sbin/$b ]] || ln -s /usr/sbin/$b-wlm /usr/sbin/$b; done
          # A container without systemd: slurmd makes its stepd scope under system.slice, which must exist.
          [[ -d /sys/fs/cgroup/system.slice ]] || mkdir /sys/fs/cgroup/system.slice
          getent passwd munge >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin munge
          mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
          [[ -f /etc/munge/munge.key ]] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
          chown -R munge: /etc/munge /var/lib/munge /var/log/munge /run/munge; chmod 400 /etc/munge/munge.key
          conf=$(bash tests/slurm/local_cluster.sh start /tmp/kc 1) || { echo "no cluster: $conf"; tail -5 /tmp/kc/log/* 2>/dev/null; continue; }
          export SLURM_CONF=$conf; printf '[slurm]\nheartbeat_s = 2\n' > /tmp/kc/kp.toml
          for ex in local slurm; do
            extra=(); [[ $ex == slurm ]] && extra=(--executor slurm --slurm-config /tmp/kc/kp.toml --arch sm_90a)
            timeout 240 $K optimize $SM --workload 8192x4096 --budget ${BUDGET:-24} --json --store /tmp/kp-sl-$ex "${extra[@]}" \
              > "$OUT/slurmgpu_$ex.json" 2> "$OUT/slurmgpu_$ex.events"
            echo "$ex: exit $? $(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print({k: j.get(k) for k in ('evaluations','busy_share','checks_timing_share','counter_profiles')}, j['final'].get('speedup_geomean'))" "$OUT/slurmgpu_$ex.json" 2>&1 | tail -1)"
          done 2>&1 | tee "$OUT/slurmgpu.txt"
          bash tests/slurm/local_cluster.sh stop /tmp/kc ;;
    mcp) # An evaluate call of kpilot mcp against kpilot eval of the same candidate, warm (bench/mcp_overhead.py).
         timeout 300 python3 bench/mcp_overhead.py --kpilot $K $SM $SM/candidates/block_online.cu --workload 8192x4096 \
           --n ${MCP_N:-6} --json "$OUT/mcp.json" 2>&1 | tee "$OUT/mcp.txt" ;;
    gemmopt) # kpilot optimize of a GEMM task (GO_TASK, default gemm_tc) from its params' naive end, then its
          # best beside torch.matmul (bench/gemm_vs_torch.py); GO_TIME the search's wall clock.
          t=${GO_TASK:-gemm_tc}
          timeout ${GO_TIMEOUT:-420} $K optimize examples/cuda/$t --workload ${GO_WORKLOAD:-4096} --budget ${GO_BUDGET:-400} \
            --time ${GO_TIME:-5m} --drafts ${GO_DRAFTS:-4} --json --store /tmp/kp-$t > "$OUT/opt_$t.json" 2> "$OUT/opt_$t.events"
          echo "optimize exit $?"
          # The best's params from the run's JSON, or, when the run printed none (killed), from its
          # events: the last promoted node's.
          D=$(python3 -c "
import json,sys
try:
    print(' '.join('-D %s=%s' % kv for kv in json.load(open(sys.argv[1]))['best_params'].items()))
except Exception:
    ev=[json.loads(l) for l in open(sys.argv[2]) if l.startswith('{')]
    best=[e['node'] for e in ev if e.get('event')=='promote'][-1:]
    params=[e['params'] for e in ev if e.get('event')=='evaluated' and [e['node']]==best]
    print(' '.join('-D '+p for p in params[0].split()) if params and params[0]!='(defaults)' else '')
" "$OUT/opt_$t.json" "$OUT/opt_$t.events")
          python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print({k: j.get(k) for k in ('evaluations','busy_share','best_params')}, j['final'].get('speedup_geomean'))" \
            "$OUT/opt_$t.json" 2>&1 | tee "$OUT/opt_$t.txt"
          gzip -f "$OUT/opt_$t.events"
          python3 bench/search_pace.py "$OUT/opt_$t.events.gz" 2>&1 | tee -a "$OUT/opt_$t.txt"
          timeout ${GEMM_TIMEOUT:-240} python3 bench/gemm_vs_torch.py --kpilot $K --task examples/cuda/$t \
            --candidate examples/cuda/$t/candidates/$(ls examples/cuda/$t/candidates | head -1) --workload ${GO_WORKLOAD:-4096} $D \
            ${GO_EPILOGUE:+--epilogue $GO_EPILOGUE} ${GO_DTYPE:+--dtype $GO_DTYPE} --shapes ${GEMM_SHAPES:-4096x4096x4096,8192x8192x8192} \
            --json "$OUT/opt_${t}_vs_torch.json" 2>&1 | tee -a "$OUT/opt_$t.txt"
          # GO_GELU=1: the same params on the GEMM with bias and GELU fused, against torch's unfused sequence.
          [[ -n "${GO_GELU:-}" ]] && timeout ${GEMM_TIMEOUT:-240} python3 bench/gemm_vs_torch.py --kpilot $K \
            --task examples/cuda/gemm_bias_gelu --candidate examples/cuda/gemm_bias_gelu/candidates/cutlass_sm90.cu \
            --workload 4096 $D --epilogue bias_gelu --shapes 4096x4096x4096 --json "$OUT/opt_gelu_vs_torch.json" \
            2>&1 | tee -a "$OUT/opt_$t.txt" ;;
    gemmgelu) # The same for the GEMM with bias and GELU fused (examples/cuda/gemm_bias_gelu) against
          # torch.matmul followed by the eager add and gelu.
          timeout ${GEMM_TIMEOUT:-400} python3 bench/gemm_vs_torch.py --kpilot $K --task examples/cuda/gemm_bias_gelu \
            --candidate examples/cuda/gemm_bias_gelu/candidates/cutlass_sm90.cu --workload 4096 ${GEMM_D:-} \
            --epilogue bias_gelu --shapes ${GEMM_SHAPES:-4096x4096x4096,16384x4096x4096} --json "$OUT/gemmgelu.json" \
            2>&1 | tee "$OUT/gemmgelu.txt" ;;
    gemmsimt) # The f32 GEMM without TF32 (examples/cuda/sgemm_simt, CUTLASS's SIMT kernel) against
          # torch.matmul with TF32 off on both sides; SIMT_D its params (its own: the tensor-core
          # GEMMs' GEMM_D names params this family does not have).
          timeout ${GEMM_TIMEOUT:-400} python3 bench/gemm_vs_torch.py --kpilot $K --task examples/cuda/sgemm_simt \
            --candidate examples/cuda/sgemm_simt/candidates/cutlass_simt.cu --workload 4096 ${SIMT_D:-} --dtype f32 \
            --shapes ${GEMM_SHAPES:-4096x4096x4096} --json "$OUT/gemmsimt.json" 2>&1 | tee "$OUT/gemmsimt.txt" ;;
    gemmresidual) # The same for the GEMM with the scale and the residual add fused (examples/cuda/gemm_scale_residual).
          timeout ${GEMM_TIMEOUT:-400} python3 bench/gemm_vs_torch.py --kpilot $K --task examples/cuda/gemm_scale_residual \
            --candidate examples/cuda/gemm_scale_residual/candidates/cutlass_sm90.cu --workload 4096 ${GEMM_D:-} \
            --epilogue scale_residual --shapes ${GEMM_SHAPES:-4096x4096x4096,16384x4096x4096} \
            --json "$OUT/gemmresidual.json" 2>&1 | tee "$OUT/gemmresidual.txt" ;;
    kbsuite) # Every problem of the team's KernelBench-style suite through `kpilot eval`: its native
           # candidate (default procedure, exploit checks on) against eager, then the same with
           # --timing kernelbench next to bench/kernelbench_procedure.py on the same object.
           mkdir -p "$OUT/kbsuite"
           for p in examples/kernelbench/${KB_GLOB:-level*/*}.py; do
             stem=$(basename "$p" .py)
             for c in "$p" examples/kernelbench/candidates/$stem/native.cu; do  # reference-as-candidate, then native
               tag=$stem.$(basename "$c" | sed 's/\..*//')
               timeout 120 $K eval "$p" "$c" --store /tmp/kp-store --json > "$OUT/kbsuite/$tag.json" 2> "$OUT/kbsuite/$tag.err"
               echo "$tag exit $? $(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['verdict']['kind'], round(j.get('speedup_geomean',0),3), j['speedup_geomean_ci'], j['verdict']['summary'][:100])" "$OUT/kbsuite/$tag.json" 2>&1 | tail -1)"
             done
           done 2>&1 | tee "$OUT/kbsuite.txt"
           (cd "$OUT" && tar czf kbsuite.tar.gz kbsuite && rm -rf kbsuite) ;;
    kbmodelnew) # The suite's ModelNew (load_inline) candidates through `kpilot eval`, KB_MODELNEW stems
           # (default all). Each spends ~47 s building its extension on the CPU, so they run side by side.
           mkdir -p "$OUT/kbmodelnew"
           stems=${KB_MODELNEW:-$(ls examples/kernelbench/candidates/*/model_new.py | xargs -n1 dirname | xargs -n1 basename)}
           for stem in $stems; do
             p=$(ls examples/kernelbench/level*/$stem.py)
             timeout 300 $K eval "$p" examples/kernelbench/candidates/$stem/model_new.py --store /tmp/kp-store-$stem --json \
               > "$OUT/kbmodelnew/$stem.json" 2> "$OUT/kbmodelnew/$stem.err" &
           done; wait
           for stem in $stems; do
             echo "$stem $(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['verdict']['kind'], round(j.get('speedup_geomean',0),3), j['speedup_geomean_ci'], j['verdict']['summary'][:100])" "$OUT/kbmodelnew/$stem.json" 2>&1 | tail -1)"
           done 2>&1 | tee "$OUT/kbmodelnew.txt"
           (cd "$OUT" && tar czf kbmodelnew.tar.gz kbmodelnew && rm -rf kbmodelnew) ;;
    kbtiming) # --timing kernelbench vs an independent implementation of KernelBench's procedure on the same
           # native object, KB_ROUNDS alternating rounds per problem (default 3). Both report a mean of 100
           # trials, which one slow trial moves by several percent, so the rounds' medians are compared.
           rounds=$(seq ${KB_ROUNDS:-3})
           for stem in ${KB_STEMS:-1_ReLU 4_LayerNorm 6_MatmulSquare}; do
             p=$(ls examples/kernelbench/level*/$stem.py); c=examples/kernelbench/candidates/$stem/native.cu
             nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC -I include "$c" -o /tmp/kb_$stem.so
             for r in $rounds; do
               $K eval "$p" "$c" --timing kernelbench --no-store --json > "$OUT/kbt3_${stem}_k$r.json" 2>/dev/null
               python3 bench/kernelbench_procedure.py "$p" --native /tmp/kb_$stem.so > "$OUT/kbt3_${stem}_p$r.json" 2>/dev/null
             done
             python3 -c "
import json,sys,statistics as st
o,stem,rounds=sys.argv[1],sys.argv[2],[int(r) for r in sys.argv[3:]]
k=[json.load(open('%s/kbt3_%s_k%d.json'%(o,stem,r)))['timings'][0]['candidate_reported_ms'] for r in rounds]
p=[json.load(open('%s/kbt3_%s_p%d.json'%(o,stem,r)))['mean_ms'] for r in rounds]
print('%-16s kpilot means %s | independent means %s | ratio of medians %.3f' % (stem, ['%.4f'%x for x in k], ['%.4f'%x for x in p], st.median(k)/st.median(p)))" "$OUT" $stem $rounds
           done 2>&1 | tee "$OUT/kbtiming.txt"; (cd "$OUT" && tar czf kbt3.tar.gz kbt3_* && rm -f kbt3_*) ;;
    kbcost) # Cost per candidate evaluation, load_inline ModelNew vs native .cu (fresh builds).
           python3 bench/pytorch_cost.py --kpilot $K --out "$OUT/pytorch_cost.json" 2>&1 | tee "$OUT/pytorch_cost.txt" | tail -12 ;;
    kbbench) # kpilot bench over the team's suite with the params generator, then the flashinfer dataset.
           timeout ${KB_TIMEOUT:-420} $K bench examples/kernelbench --levels ${KB_LEVELS:-1,2,3} --problems "${KB_PROBLEMS:-*}" \
             --budget ${KB_BUDGET:-3} --store /tmp/kp-bench \
             --out "$OUT/kbbench" --markdown "$OUT/kbbench.md" > "$OUT/kbbench.txt" 2> "$OUT/kbbench.log"; echo "exit $?"
           tail -30 "$OUT/kbbench.txt"; [[ -s "$OUT/kbbench.txt" ]] || cat "$OUT/kbbench.md"  # partial when killed
           [[ ${KB_FLASHINFER:-1} == 0 ]] && continue
           timeout 200 $K bench examples/flashinfer --budget 2 --timing flashinfer --store /tmp/kp-bench \
             --out "$OUT/fibench" --markdown "$OUT/fibench.md" > "$OUT/fibench.txt" 2> "$OUT/fibench.log"; echo "exit $?"
           tail -20 "$OUT/fibench.txt" ;;
    cards) # Every candidate of docs/skills.md's "What exercises each built-in card" table, the ones
           # written for cards no other example applied first (builtin_cards_test checks this list).
           for tc in sum_reduction:cuda_graph sgemm:l2_persisting_b transpose:persistent_tiles sgemm:split_k \
                     sgemm:swizzled_tiles row_softmax:tma_bulk_row layernorm:welford_one_pass gemm_bf16:wgmma_m64n128 \
                     sum_reduction:grid_stride_shuffle transpose:smem_tiled gemm_bf16:wmma_pipelined \
                     bias_gelu:vec8_tanh_approx row_softmax:block_in_registers row_softmax:block_online \
                     vector_add:vector_grid_stride sgemm:register_tiled layernorm:block_two_pass; do
             IFS=: read -r t c <<< "$tc"
             echo "--- $t $c"
             timeout 150 $K eval examples/cuda/$t examples/cuda/$t/candidates/$c.cu --store /tmp/kp-store \
               > "$OUT/cards_${t}_${c}.txt" 2>&1; echo "exit $?"
             grep -iE "verdict|geomean|error" "$OUT/cards_${t}_${c}.txt" | head -4
           done 2>&1 | tee "$OUT/cards.txt" ;;
    lineage) timeout 420 bench/lineage_h200_check.sh $OUT/lineage 2>&1 | tail -40 ;;
    applycards) # The cards the lineage step mined, applied to another task (layernorm) by the llm: generator.
             timeout 330 bench/applycards_h200_check.sh $OUT/lineage/cards $OUT/applycards 2>&1 | tail -40 ;;
    transpose) timeout 200 python3 bench/optimize_figures.py --kpilot $K --budget ${BUDGET:-24} --out $OUT --tag _workload_big \
                 --extra "--workload 8192x8192" examples/cuda/transpose 2>&1 | tail -3 ;;
    softmax) timeout 400 python3 bench/optimize_figures.py --kpilot $K --budget ${BUDGET:-40} --out $OUT --tag _workload_big \
               --extra "--workload 8192x4096" examples/cuda/row_softmax 2>&1 | tail -4 ;;
    llm) timeout 400 bench/llm_h200_check.sh $OUT/llm 2>&1 | tail -40 ;;
    fixtures) F=$OUT/fixtures; mkdir -p $F; ncu --version > $F/ncu_version.txt 2>&1
          $K profile examples/cuda/sgemm examples/cuda/sgemm/reference.cu --profiler ncu --all-tools --no-store \
            --workload 2048 --save-raw $F/raw_sgemm_metrics.txt --json > $F/sgemm_ncu_profile.json 2>&1
          $K profile examples/cuda/sgemm examples/cuda/sgemm/reference.cu --profiler cupti --all-tools --no-store \
            --workload 2048 --save-raw $F/cupti_sgemm_counters.json --json --raw > $F/sgemm_cupti_profile.json 2>&1
          $K profile examples/cuda/row_softmax $SM/candidates/block_online.cu --profiler ncu --ncu-set full --all-tools \
            --no-store --save-raw $F/raw_softmax_set_full.txt --json > $F/softmax_full_profile.json 2>&1
          timeout 120 ncu --clock-control none --csv --page raw --target-processes all -k regex:NoSuchKernel \
            python3 -c "import torch; torch.ones(4, device='cuda').sum().item(); print('python done')" > $F/no_kernels.txt 2>&1
          timeout 120 ncu --clock-control none --csv --page raw --target-processes all --metrics gpu__time_duration.sum,dram__bytes_read.sum \
            python3 -c "import torch; x=torch.ones(1<<20, device='cuda'); print('sum', (x*2).sum().item())" > $F/raw_torch_processes.txt 2>&1
          (cd $OUT && tar czf fixtures.tar.gz fixtures && rm -rf fixtures); ls -la $OUT ;;
    verify) [[ -f bench/profile_verify.py ]] && timeout 560 python3 bench/profile_verify.py --kpilot $K --set ${VSET:-all} --no-static --no-ncu-profiler --timeout 150 --traces --out $OUT/verify \
              2>&1 | tee "$OUT/verify.txt" | tail -60 ;;
    optimize) timeout 560 python3 bench/optimize_figures.py --kpilot $K --budget ${BUDGET:-20} --out $OUT \
                examples/cuda/vector_add examples/cuda/transpose examples/cuda/row_softmax examples/cuda/sgemm \
                2>&1 | tee "$OUT/optimize.txt" | tail -30 ;;
    fpbusy) # The GPU's busy share on the short runs: the same optimize with compile footprints on and off
            # (docs/search.md), events timed as they arrive; bench/busy_timeline.py reads them.
            short_runs fpbusy fp --footprints "${FP_MODES:-on off}" ;;
    complat) bash bench/compile_latency.sh 2>&1 | tee "$OUT/compile_latency.txt" ;;
    anticipate) # The GPU's busy share: the same short optimize with anticipated compiles on and off (--anticipate).
            short_runs anticipate an --anticipate "${AN_MODES:-on off}" ;;
    served) # The GPU's busy share: the same short optimize with one served runner per GPU and with a runner
            # per evaluation (--runner).
            short_runs served rn --runner "${RN_MODES:-served per-eval}" ;;
    depth) # The GPU's busy share: the same short optimize at fixed expansions in flight (--in-flight),
           # against the adaptive depth of the served step.
            short_runs depth dp --in-flight "${DP_MODES:-4}" ;;
    depthtime) # At a wall-clock budget (--time), which depth (0: adaptive) ends with the best speedup?
           # DT_SEEDS x DT_DEPTHS runs of DT_TIME on each DT_TASKS task.
           for seed in ${DT_SEEDS:-1 2}; do
             for d in ${DT_DEPTHS:-2 3 4}; do
               timeout 200 python3 bench/optimize_figures.py --kpilot $K --budget 1000 --out $OUT/depthtime \
                 --tag _d${d}_s$seed --extra "--time ${DT_TIME:-20s} --seed $seed --in-flight $d" \
                 ${DT_TASKS:-examples/cuda/row_softmax examples/cuda/transpose} 2>&1 | grep -v '^{' | tail -3
             done
           done 2>&1 | tee "$OUT/depthtime.txt"
           (cd "$OUT" && tar czf depthtime.tgz depthtime && rm -rf depthtime) ;;
    objectives) # --objective energy and mix on a live run (NVML joules per call), then what the exported
            # report says the best was verified on (driver, toolkit, dtypes).
            for obj in ${OBJ_MODES:-energy mix time}; do
              timeout 200 $K optimize examples/cuda/${OBJ_TASK:-vector_add} --budget ${BUDGET:-12} --objective $obj --json \
                --store /tmp/kp-obj-$obj --out /tmp/kp-obj-$obj/best > "$OUT/objective_$obj.json" 2> "$OUT/objective_$obj.events"
              echo "--objective $obj: exit $?"
              python3 bench/objective_summary.py "$OUT/objective_$obj.json" "$OUT/objective_$obj.events" /tmp/kp-obj-$obj/best/report.json
            done 2>&1 | tee "$OUT/objectives.txt"
            (cd "$OUT" && tar czf objectives.tgz objective_* && rm -f objective_*) ;;
    advserved) # The adversarial suite with every case through one served runner (KPILOT_ADVERSARIAL_RUNNER).
            [[ -x .stage/bin/adversarial_test ]] && KPILOT_ADVERSARIAL_RUNNER=served \
              KPILOT_ADVERSARIAL_REPORT=$OUT/adversarial_served.json timeout 300 .stage/bin/adversarial_test 2>&1 \
              | tee "$OUT/adversarial_served.txt" | tail -48 ;;
    profcost) python3 bench/profile_cost.py --kpilot $K --repeats ${REPEATS:-2} --out $OUT/profcost \
                bench/profile_set/tuning/transpose:candidates/naive_strided_writes.cu \
                bench/profile_set/tuning/sgemm:candidates/naive.cu \
                $SM:candidates/block_online.cu 2>&1 | tee "$OUT/profcost.txt" ;;
    probe) bash bench/sandbox_probe.sh 2>&1 | tee "$OUT/sandbox_probe.txt" ;;
    advmodes) # The adversarial suite under both runner settings and every timing procedure
            # (ADV_RUNNERS, ADV_TIMINGS narrow it); a summary line per run, reports under $OUT.
            for r in ${ADV_RUNNERS:-oneshot served}; do for t in ${ADV_TIMINGS:-default kernelbench flashinfer}; do
              KPILOT_ADVERSARIAL_RUNNER=$r KPILOT_ADVERSARIAL_TIMING=$t KPILOT_ADVERSARIAL_REPORT=$OUT/adv_${r}_$t.json \
                timeout ${ADV_TIMEOUT:-300} .stage/bin/adversarial_test > "$OUT/adv_${r}_$t.txt" 2>&1
              echo "runner $r timing $t: exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/adv_${r}_$t.txt" | tr '\n' ' ')"
              grep -E 'WRONG|harness_error|leftover' "$OUT/adv_${r}_$t.txt" | head -20
            done; done 2>&1 | tee "$OUT/advmodes.txt"
            (cd "$OUT" && tar czf advmodes.tgz adv_* && rm -f adv_*) ;;
    sandboxcost) # A warm evaluation's wall time with the sandbox (the default) and without it.
            for sb in default none; do
              echo "--- KPILOT_SANDBOX=$sb"
              ( [[ $sb == none ]] && export KPILOT_SANDBOX=none
                python3 bench/eval_wall.py --task examples/cuda/vector_add \
                  --candidate examples/cuda/vector_add/candidates/vector_grid_stride.cu --kpilot $K --repeats ${REPEATS:-5} )
            done 2>&1 | tee "$OUT/sandboxcost.txt" ;;
    cost) python3 bench/eval_wall.py --task examples/cuda/vector_add \
            --candidate examples/cuda/vector_add/candidates/vector_grid_stride.cu --kpilot $K --repeats 3 \
            2>&1 | tee "$OUT/cost.txt" ;;
  esac
done
# The device tool brings back at most 8 files from $OUT: past that, everything goes into one archive
# (PACK=0 leaves it for a caller that packs several runs itself).
if [[ ${PACK:-1} == 1 ]] && (( $(find "$OUT" -type f | wc -l) > 8 )); then
  (cd "$OUT" && tar czf /tmp/kpilot-session.tgz . && find . -mindepth 1 -delete && mv /tmp/kpilot-session.tgz session.tgz)
  echo "more than 8 files under \$OUT: packed into session.tgz"
fi
