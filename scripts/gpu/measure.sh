#!/usr/bin/env bash
# The GPU measurements of bench/RESULTS.md on the lent H200, after scripts/gpu/test.sh's set-up (build of
# the working tree with the carried .gpu/), one step after another; each step's log goes to $OUT/<step>.log
# and is printed. The tables name TILEWISE_BENCH_COMMIT when set (the machine's copy of .git can lag the tree:
# pass the developer checkout's `git rev-parse --short HEAD`).
#   usage: scripts/gpu/measure.sh STEP...
#     tests   the GPU tests (TESTS_PATHS, default tests/gpu; the whole report, printed output too, in $OUT/tests.log)
#     sweep   loader to device, 16 workers, one process per TILEWISE_GPU_POLICY (gpu / auto / cpu: the GPU
#             alone, the measured share, every worker but one on the CPU) at prefetch 2 and 4 (SWEEP_POLICIES,
#             SWEEP_PREFETCH)
#     cpu     the CPU loader's scaling, 1-16 workers in one process against as many one-worker processes
#     soak    host and device memory over 10,000 loader batches to the device (caches off)
#     prof    sampling profiles (gperftools, carried in .gpu/prof) of the CPU loader at 16 and 1 workers and
#             of the device loader at 16 workers, GPU alone and hybrid
#     large   writes the 40,960^2 slide to $TILEWISE_GPU_DATA/bench_ihc_40960.tif (bench/make_large_slide.py)
#     convertlog  small converts on the GPU in several orders (bench/diag/convert_probe.py; CONVERTLOG_MODES)
#             with nvImageCodec's messages at CONVERTLOG_LEVEL (default debug; none: no messages) ($OUT/convert-MODE.log),
#             the native frames of a thread that aborts resolved
#     outputs convert's GPU outputs of a small slide, to $OUT/convert-outputs (bench/diag/gpu_convert_outputs.py),
#             for bench/diag/check_gpu_convert.py on the developer machine
#     convert convert on the GPU against tilewise's CPU path on every core, the 40,960^2 slide (after `large`),
#             alternating processes (bench/bench_convert_gpu.py; CONVERT_ARGS: its options; CONVERT_GPU_VARIANTS:
#             its --gpu-variants)
#     phases  where a conversion on the GPU spends its time (bench/diag/convert_phases.py), one process per
#             variant of CONVERT_GPU_VARIANTS, on the 40,960^2 slide (after `large`)
#     pair    tilewise's and cuslide2's loaders to device, alternating processes: 3 rounds of 4 and 16 workers
#             on the 6,144^2 slide, 3 of 16 on the 40,960^2 one (after `large`), then the CPU loaders against
#             cuCIM's classic cuslide (PAIR_PLAN: slide:rounds:workers,... or cpu:rounds:workers entries);
#             the engines' use from nvidia-smi dmon. TILEWISE_BENCH_PREFETCH sets both tools' prefetch.
#     region  one 4096^2 region to device and to host memory, one process each, 3 rounds
#     probe   what bounds one large device region: the raw decode rate of one region's 256 tiles in large
#             batches on 1-16 decoders, and cuCIM's cuslide2 reading the region (bench/diag/gpu_region_probe.py)
#     loader  loader to device, 16 workers, one child per variant of LOADER_VARIANTS ("-" or VAR=value,...);
#             LOADER_CPU=1: then the CPU loader alone (under other settings: `cpuvar`)
#     regions one 4096^2 region to device under each policy (REGION_POLICIES, REGION_ROUNDS)
#     regionpair  one 4096^2 region: tilewise to device (defaults, then every region to the lanes) and into
#             host memory, and cuCIM's cuslide2 to device, one process each, REGION_ROUNDS rounds (default 3)
#             of AB_REPS reads after AB_WARMUP (default 20 after 5, here and in `regions`)
#     trace   one 4096^2 region through the lanes alone, 30 reads after 3, each read's nvImageCodec calls
#             (TILEWISE_GPU_TRACE, bench/diag/lane_trace.py; the two files go to $OUT)
#     ceiling the sustained raw decode ceiling (bench/diag/gpu_diag.py --ceiling: each cell's threads decode for 2 s,
#             3 runs per cell) on both slides, the engines' use beside it ($OUT/dmon-ceiling.log)
#     lanediag  which lanes are slow: one 4096^2 region through the lanes alone, 20 reads after 3, in one
#             process per entry of LANEDIAG (lane counts; default 8 8 6), each lane's call times
#             (bench/diag/lane_trace.py); the first process logs nvImageCodec's messages (TILEWISE_GPU_LOG=info)
#             to $OUT/lanediag.err
#     cpuvar  the CPU loader alone at CPU_WORKERS (default 16 1; WORKERS:cuda entries: the loader to device)
#             under each variant of CPU_VARIANTS, CPU_ROUNDS rounds: rates with page faults, context switches
#             and TLB shootdowns per 1,000 patches, and the machine's busy, idle and stolen cores
#     gaps    where the lanes idle during the GPU-alone loader's passes (16 workers, prefetch 4, helpers 0), one
#             child per variant of GAPS_VARIANTS (as LOADER_VARIANTS): the lanes' call trace against each
#             pass's start and end (bench/diag/lane_gaps.py: busy share, start, drain, idle gaps)
#     j2k     the JPEG 2000 loader (bench_j2k_3840.svs) to device with and without helpers (under each of
#             J2K_WAITS, default block), and on the CPU
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-/tmp/tw-out}
mkdir -p "$out"
AB_ONLY_SETUP=1 source scripts/gpu/test.sh > "$out/setup.log" 2>&1 || { tail -30 "$out/setup.log"; exit 1; }
set +e
cd "$root/bench"
child() {  # one workload in a fresh process; prints its settings and its last line (JSON)
  echo "$* : $(env "$@" 2>&1 | tail -1)"
}
# Settings of one variant as env assignments in $variant: "VAR=value,VAR=value" (or "-" for none).
variant_settings() {
  variant=()
  [ "$1" = - ] || IFS=, read -r -a variant <<< "$1"
}
for step in "$@"; do
  echo "== $step ($(date +%T))"
  case $step in
    tests) timeout "${TESTS_TIMEOUT:-240}" python3 -m pytest -q -rA -p no:cacheprovider ${TESTS_PATHS:-"$root/tests/gpu"} 2>&1 |
             tee "$out/tests.log" | tail -25 ;;
    sweep)  # loader to device at each prefetch, under each TILEWISE_GPU_POLICY (SWEEP_POLICIES)
      for p in ${SWEEP_PREFETCH:-2 4}; do
        for policy in ${SWEEP_POLICIES:-gpu auto cpu}; do
          child TILEWISE_GPU_POLICY=$policy TILEWISE_BENCH_PREFETCH=$p python3 bench_gpu.py --loader 16
        done
      done
      child AB_PREFETCH=2 python3 diag/ab_child.py loader 16 cpu ;;  # one core's rate: the `cpu` step
    cpu) python3 diag/cpu_scaling.py --processes --seconds 4 --reps 3 ;;
    soak) python3 diag/memory_soak.py --device cuda --slide "$TILEWISE_GPU_DATA/bench_ihc_6144.tif" --every 1000 \
            --cache-bytes 0 ;;
    prof)  # gperftools' sampling profiler (SIGPROF; the lent machine has no perf), flat and cumulative
      lib=$root/.gpu/prof/usr/lib/x86_64-linux-gnu
      mkdir -p /tmp/prof
      profile() {
        local name=$1; shift
        env LD_PRELOAD="$lib/libprofiler.so.0" LD_LIBRARY_PATH="$lib:$LD_LIBRARY_PATH" CPUPROFILE=/tmp/prof/$name.prof \
          CPUPROFILE_FREQUENCY=250 "$@" 2>&1 | tail -1
        # A process that forks (CUDA's and nvImageCodec's start-up do) leaves an empty file and one per pid.
        local file
        file=$(ls -S /tmp/prof/$name.prof* | head -1)
        for order in "" --cum; do
          echo "-- $name $order ($file)"
          perl "$root/.gpu/prof/usr/bin/google-pprof" --text $order "$(command -v python3)" "$file" 2>&1 |
            grep -v "^Using local file" | head -${PROF_LINES:-40}
        done
      }
      for what in ${PROF_WHAT:-cpu16 cpu1 gpu16 hybrid16}; do
        case $what in
          cpu16) profile cpu16 python3 diag/cpu_scaling.py --hold 16 --seconds 6 ;;
          cpu1) profile cpu1 python3 diag/cpu_scaling.py --hold 1 --seconds 6 ;;
          gpu16) profile gpu16 env TILEWISE_GPU_POLICY=gpu TILEWISE_BENCH_PREFETCH=4 TILEWISE_BENCH_REPS=20 \
                   python3 bench_gpu.py --loader 16 ;;
          hybrid16) profile hybrid16 env TILEWISE_BENCH_PREFETCH=4 TILEWISE_BENCH_REPS=20 \
                      python3 bench_gpu.py --loader 16 ;;
        esac
      done
      tar -C /tmp -czf "$out/profiles.tgz" prof ;;
    large) python3 make_large_slide.py "$TILEWISE_GPU_DATA/bench_ihc_40960.tif" ;;
    convertlog)  # small converts on the GPU (bench/diag/convert_probe.py, each of CONVERTLOG_MODES in its own
                 # process) with nvImageCodec's messages (CONVERTLOG_LEVEL) to $OUT/convert-MODE.log; a thread that aborts or
                 # faults prints its native frames (abort_trace.c), resolved by addr2line
      cc -O1 -shared -fPIC -o /tmp/abort_trace.so "$root/scripts/gpu/abort_trace.c"
      for mode in ${CONVERTLOG_MODES:-plain serial read-first}; do
        level=${CONVERTLOG_LEVEL:-debug}
        [ "$level" = none ] && level=""  # no nvImageCodec messages
        TILEWISE_GPU_LOG=$level LD_PRELOAD=/tmp/abort_trace.so timeout 60 \
          python3 diag/convert_probe.py "$mode" "$TILEWISE_GPU_DATA/tifffile_jpeg.tif" "/tmp/convert-$mode.tif" \
          > "$out/convert-$mode.log" 2>&1
        echo "-- $mode: exit $?"
        grep -v "^[[:space:]]*$" "$out/convert-$mode.log" | grep -v "^.....INFO" | tail -"${CONVERTLOG_LINES:-30}"
        python3 diag/resolve_frames.py < "$out/convert-$mode.log"
      done ;;
    outputs) python3 diag/gpu_convert_outputs.py "$out/convert-outputs" ;;  # for check_gpu_convert.py here
    convert)  # after `large`: convert on the GPU against the CPU path, alternating processes (CONVERT_ARGS)
      python3 bench_convert_gpu.py ${CONVERT_ARGS:-} ${CONVERT_GPU_VARIANTS:+--gpu-variants "$CONVERT_GPU_VARIANTS"} ;;
    phases)
      for v in ${CONVERT_GPU_VARIANTS:--}; do
        variant_settings "$v"
        child "${variant[@]}" python3 diag/convert_phases.py "$TILEWISE_GPU_DATA/bench_ihc_40960.tif" /dev/shm
      done ;;
    pair)
      nvidia-smi dmon -s u -d 1 > "$out/dmon.log" 2>&1 &
      dmon=$!
      # PAIR_PLAN: slide:rounds:workers,... entries (default: both slides, then the CPU loaders); both tools at
      # TILEWISE_BENCH_PREFETCH (default here 4, the prefetch of the issue's comparisons).
      export TILEWISE_BENCH_PREFETCH=${TILEWISE_BENCH_PREFETCH:-4}
      for plan in ${PAIR_PLAN:-bench_ihc_6144.tif:3:4,16 bench_ihc_40960.tif:3:16 cpu:3:16}; do
        IFS=: read -r s rounds w <<< "$plan"
        echo "-- $s, $rounds rounds, workers $w ($(date +%T))"
        # shellcheck disable=SC2086
        if [ "$s" = cpu ]; then
          python3 diag/gpu_loader_pair.py --cpu "$rounds" ${w//,/ }
        elif [ -f "$TILEWISE_GPU_DATA/$s" ]; then
          TILEWISE_BENCH_SLIDE=$s python3 diag/gpu_loader_pair.py "$rounds" ${w//,/ }
        fi
      done
      kill $dmon ;;
    probe) timeout 240 python3 diag/gpu_region_probe.py ;;
    region)
      for r in 1 2 3; do
        child python3 diag/ab_child.py region cuda
        child python3 diag/ab_child.py region cpu
      done ;;
    loader)  # loader to device, 16 workers, prefetch 4, one child per variant (LOADER_VARIANTS: "-" or VAR=value,...)
      for v in ${LOADER_VARIANTS:--}; do
        variant_settings "$v"
        child TILEWISE_BENCH_PREFETCH=4 "${variant[@]}" python3 bench_gpu.py --loader 16  # a variant may set the prefetch
      done
      [ "${LOADER_CPU:-0}" = 1 ] && child AB_PREFETCH=4 python3 diag/ab_child.py loader 16 cpu ;;  # the CPU alone
    cpuvar)  # ab_child.py's loader at each of CPU_WORKERS under each variant of CPU_VARIANTS (as LOADER_VARIANTS),
             # CPU_ROUNDS rounds (default 1); each row has events_per_1000 and host_cores (header above)
      for r in $(seq "${CPU_ROUNDS:-1}"); do
        for v in ${CPU_VARIANTS:--}; do
          variant_settings "$v"
          for w in ${CPU_WORKERS:-16 1}; do  # WORKERS or WORKERS:DEVICE (cpu, cuda)
            IFS=: read -r n dev <<< "$w"
            child AB_PREFETCH=4 "${variant[@]}" python3 diag/ab_child.py loader "$n" "${dev:-cpu}"
          done
        done
      done ;;
    gaps)
      for v in ${GAPS_VARIANTS:--}; do
        variant_settings "$v"
        rm -f /tmp/calls.csv /tmp/passes.csv
        child TILEWISE_BENCH_PREFETCH=4 TILEWISE_GPU_POLICY=gpu TILEWISE_GPU_TRACE=/tmp/calls.csv \
          AB_READS_LOG=/tmp/passes.csv "${variant[@]}" python3 bench_gpu.py --loader 16
        python3 diag/lane_gaps.py /tmp/calls.csv /tmp/passes.csv | tail -1
      done ;;
    regions)  # one 4096^2 region to device under each policy (REGION_POLICIES: auto = by measured rates, gpu =
              # the lanes, cpu = the host's cores; VAR=value,...: those settings), then into host memory
      export AB_REPS=${AB_REPS:-20} AB_WARMUP=${AB_WARMUP:-5}
      for r in $(seq "${REGION_ROUNDS:-1}"); do
        for policy in ${REGION_POLICIES:-auto gpu cpu}; do
          case $policy in
            *=*) variant_settings "$policy"; set -- "${variant[@]}" ;;
            *) set -- TILEWISE_GPU_POLICY=$policy ;;
          esac
          child "$@" python3 diag/ab_child.py region cuda
        done
        child python3 diag/ab_child.py region cpu
      done ;;
    trace)
      rm -f /tmp/calls.csv /tmp/reads.csv
      child TILEWISE_GPU_POLICY=gpu TILEWISE_GPU_TRACE=/tmp/calls.csv AB_READS_LOG=/tmp/reads.csv AB_REPS=30 \
        AB_WARMUP=3 python3 diag/ab_child.py region cuda
      python3 diag/lane_trace.py /tmp/calls.csv /tmp/reads.csv | tail -"${TRACE_LINES:-40}"
      cp /tmp/calls.csv /tmp/reads.csv "$out/" ;;
    regionpair)
      # A process's first reads through the lanes are slow: 20 timed reads after 5 unless set.
      export AB_REPS=${AB_REPS:-20} AB_WARMUP=${AB_WARMUP:-5}
      for r in $(seq "${REGION_ROUNDS:-3}"); do
        child python3 diag/ab_child.py region cuda
        child TILEWISE_GPU_POLICY=gpu python3 diag/ab_child.py region cuda
        child python3 diag/ab_child.py region cpu
        python3 diag/gpu_region_probe.py --cucim-only
      done ;;
    j2k)
      for policy in gpu auto; do
        child TILEWISE_GPU_POLICY=$policy TILEWISE_BENCH_SLIDE=bench_j2k_3840.svs python3 bench_gpu.py --loader 16
      done
      child TILEWISE_BENCH_SLIDE=bench_j2k_3840.svs python3 diag/ab_child.py loader 16 cpu ;;
    lanediag)
      log=info
      for n in ${LANEDIAG:-8 8 6}; do
        rm -f /tmp/calls.csv /tmp/reads.csv
        env TILEWISE_GPU_LANES=$n ${log:+TILEWISE_GPU_LOG=$log} TILEWISE_GPU_POLICY=gpu TILEWISE_GPU_TRACE=/tmp/calls.csv \
          AB_READS_LOG=/tmp/reads.csv AB_REPS=20 AB_WARMUP=3 python3 diag/ab_child.py region cuda > /tmp/lanediag.log 2>&1
        echo "-- $n lanes: $(grep '^{' /tmp/lanediag.log | tail -1)"
        [ -n "$log" ] && cp /tmp/lanediag.log "$out/lanediag.err"
        python3 diag/lane_trace.py /tmp/calls.csv /tmp/reads.csv | grep -E "^(lane|faster|slower)"
        log=
      done ;;
    ceiling)
      nvidia-smi dmon -s u -d 1 > "$out/dmon-ceiling.log" 2>&1 &
      dmon=$!
      python3 diag/gpu_diag.py --ceiling bench_ihc_6144.tif bench_ihc_40960.tif
      kill $dmon ;;
    *) echo "unknown step $step" ;;
  esac 2>&1 | tee "$out/$step.log"
done
