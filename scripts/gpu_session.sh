#!/bin/sh
# gpu_session.sh PHASE [ARG] — issue 19's commands on a lent GPU machine, run
# from a checkout's root with bundle.tar.xz beside it (made here by `make
# tests bench` and `sh scripts/bundle.sh --benches cuda_bench --tests --tar`).
# What comes back is written under $OUT (./gpu_out without it).
#
#   start            the machine (GPU, driver, CPU), the CUDA tests (none may
#                    skip), then the tuning run of bench/gpu/resnet18_cuda.yaml
#                    in the background (its own process session, so it outlives
#                    the call) and its first minute
#   wait SECONDS     the run's progress for SECONDS, a line a minute
#   finish           waits for the run to end, keeps its files, then
#                    cuda_bench's table against the run's best.json
#   cv SECONDS [ARGS]  cuda_bench's CV part, cut off after SECONDS (default
#                    240; it prints each task as it ends); ARGS go to cuda_bench
#                    (e.g. --cv-tasks layer4_3x3 --cv-flush on)
#   table DIR        cuda_bench's table against DIR/best.json (an earlier
#                    run's, e.g. bench/out/gpu_h100_2026-11-25), no new run
#   tests            the machine and the CUDA tests only
#   export           issue 17's CUDA export: bench/gpu/tiny_cuda.yaml tuned for
#                    45 s, `dtune export` of that run, and the exported
#                    library's `make test` (built with this machine's cc)
#   tune-table TASKS [TRIALS] [SECONDS]  cuda_bench's table with dtune's side
#                    tuned from scratch by chameleon (TRIALS, default 128) for
#                    the comma-separated TASKS, cut off after SECONDS (240);
#                    each task's best config is printed (which knobs won);
#                    appends to $OUT/cuda_bench_tune.txt
#   mobilenet [SECONDS [SLOT [TABLE_SECONDS [resume]]]]  a tuning run of
#                    bench/gpu/mobilenet_v2_cuda.yaml for SECONDS (its budget,
#                    480, counted from the run's start) in SLOT-second slots
#                    (10), then cuda_bench's table against its best.json, cut
#                    off after TABLE_SECONDS (none); `resume` goes on with the
#                    run folder already there (an earlier lease's, unpacked)
#   pipeline         in the background (its own process session): the CV part,
#                    then `mobilenet`; the GPU stays busy between calls
#   watch SECONDS    the pipeline's log for up to SECONDS (until it ends), then
#                    everything it has written so far into $OUT (leave the
#                    copy a margin: SECONDS at most the call's limit less 60)
#
# cuDNN and cuBLAS are the machine's own (PyTorch's wheels or the CUDA
# Toolkit); they are found here and put on the loader's path after the
# bundle's libraries.
set -u

out=${OUT:-gpu_out}
mkdir -p "$out"
run_dir=/tmp/dtune_gpu_run
pid_file=/tmp/dtune_gpu_run.pid
bundle=/tmp/bundle
config=bench/gpu/resnet18_cuda.yaml

[ -x "$bundle/run.sh" ] || tar -C /tmp -xJf bundle.tar.xz || { echo "gpu_session: no bundle.tar.xz" >&2; exit 1; }

first_lib_dir() {
    for d in /usr/local/cuda/lib64 /opt /usr/lib /usr/local/lib; do
        f=$(find "$d/" -name "$1" 2>/dev/null | head -n 1)
        [ -n "$f" ] && { dirname "$f"; return; }
    done
}
cudnn_dir=$(first_lib_dir 'libcudnn.so.9')
cublas_dir=$(first_lib_dir 'libcublas.so.1[23]')
export LD_LIBRARY_PATH="$bundle/lib${cudnn_dir:+:$cudnn_dir}${cublas_dir:+:$cublas_dir}"
export PLPLOT_DRV_DIR="$bundle/plplot/drivers" PLPLOT_LIB="$bundle/plplot/data"
export DTUNE_BIN="$bundle/bin/dtune"

running() {
    [ -f "${2:-$pid_file}" ] && kill -0 "$(cat "${2:-$pid_file}")" 2>/dev/null
}

pipe_dir=/tmp/dtune_gpu_pipeline

machine_and_tests() {
    echo "== machine"
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,compute_cap --format=csv
    lscpu | grep -E 'Model name|^CPU\(s\)'
    echo "cudnn: ${cudnn_dir:-none}  cublas: ${cublas_dir:-none}"
    echo "== CUDA tests"
    sh scripts/run_tests.sh "$bundle/tests/test_cuda" "$bundle/tests/test_codegen_cuda" > "$out/tests.txt" 2>&1
    echo "run_tests exit $?"
    grep -E 'SKIPPED|FAILED|PASSED|skipping|tests:|no CUDA' "$out/tests.txt" | head -n 40
}

progress() {
    n=$(grep -c '"type":"measure"' "$run_dir/tuning.jsonl" 2>/dev/null || echo 0)
    line=$(tr '\r' '\n' < /tmp/dtune_gpu_run.out 2>/dev/null | grep -v '^\s*$' | tail -n 1)
    echo "$(date -u +%T) measurements $n | $line"
}

case "${1:-}" in
tests)
    machine_and_tests
    ;;
start)
    machine_and_tests
    echo "== tuning run ($config)"
    rm -rf "$run_dir"
    setsid nohup "$bundle/run.sh" tune -c "$config" > /tmp/dtune_gpu_run.out 2>&1 < /dev/null &
    echo $! > "$pid_file"
    sleep 60
    progress
    tail -c 3000 /tmp/dtune_gpu_run.out | tr '\r' '\n' | tail -n 15
    cp /tmp/dtune_gpu_run.out "$out/run_first_minute.txt"
    ;;
wait)
    end=$(( $(date +%s) + ${2:-540} ))
    while [ "$(date +%s)" -lt "$end" ] && running; do
        progress
        left=$(( end - $(date +%s) ))
        sleep $(( left < 60 ? (left > 0 ? left : 0) : 60 ))
    done
    progress
    ;;
finish)
    while running; do
        progress
        sleep 20
    done
    progress
    tr '\r' '\n' < /tmp/dtune_gpu_run.out | grep -v '^\s*$' | tail -n 40 > "$out/run_terminal.txt"
    tar -C /tmp -czf "$out/run.tar.gz" "$(basename "$run_dir")"
    echo "== cuda_bench table against $run_dir/best.json"
    "$bundle/run.sh" cuda_bench --parts t --best "$run_dir" --builders 14 2>&1 | tee "$out/cuda_bench_table.txt"
    ;;
table)
    [ -f "${2:-}/best.json" ] || { echo "gpu_session: table needs a folder with best.json" >&2; exit 2; }
    "$bundle/run.sh" cuda_bench --parts t --best "$2" --builders 14 2>&1 | tee "$out/cuda_bench_table.txt"
    ;;
export)
    echo "== CUDA export: tiny tuned for 45 s, dtune export, make test"
    for t in cc make; do command -v "$t" || echo "export: no $t on this machine"; done
    rm -rf /tmp/dtune_gpu_tiny /tmp/dtune_tiny_export
    "$bundle/run.sh" tune -c bench/gpu/tiny_cuda.yaml < /dev/null > /tmp/dtune_gpu_tiny.out 2>&1
    echo "tune exit $?"
    tr '\r' '\n' < /tmp/dtune_gpu_tiny.out | grep -v '^\s*$' | tail -n 12 | tee "$out/export_run.txt"
    cp /tmp/dtune_gpu_tiny/best.json "$out/tiny_best.json" 2>/dev/null
    "$bundle/run.sh" export /tmp/dtune_gpu_tiny -o /tmp/dtune_tiny_export -m models/tiny.yaml \
        > "$out/export.txt" 2>&1
    echo "export exit $?"
    timeout 180 make -C /tmp/dtune_tiny_export test >> "$out/export.txt" 2>&1
    echo "make test exit $?"
    tail -n 25 "$out/export.txt"
    ;;
tune-table)
    [ -n "${2:-}" ] || { echo "gpu_session: tune-table needs TASKS" >&2; exit 2; }
    echo "== cuda_bench table, chameleon from scratch: $2 (${3:-128} trials, at most ${4:-240} s)"
    timeout "${4:-240}" "$bundle/run.sh" cuda_bench --parts t --tasks "$2" --strategy chameleon \
        --trials "${3:-128}" --builders 14 2>&1 | tee -a "$out/cuda_bench_tune.txt"
    ;;
cv)
    limit=${2:-240}
    shift $(( $# < 2 ? $# : 2 ))
    echo "== cuda_bench CV part (at most $limit s) $*"
    timeout "$limit" "$bundle/run.sh" cuda_bench --parts c --builders 14 "$@" 2>&1 | tee "$out/cuda_bench_cv.txt"
    ;;
mobilenet)
    cfg=bench/gpu/mobilenet_v2_cuda.yaml
    dir=$(sed -n "s/^  dir: *//p" "$cfg")
    echo "== mobilenet_v2 run (${2:-480} s, ${3:-10}-s slots), then cuda_bench's table"
    [ "${5:-}" = resume ] || rm -rf "$dir"
    "$bundle/run.sh" tune -c "$cfg" --budget "${2:-480}" --slot-seconds "${3:-10}" \
        > "$out/mobilenet_run.out" 2>&1 < /dev/null
    echo "tune exit $?"
    tr '\r' '\n' < "$out/mobilenet_run.out" | grep -v '^\s*$' | tail -n 40 > "$out/mobilenet_terminal.txt"
    rm -f "$out/mobilenet_run.out"
    tail -n 6 "$out/mobilenet_terminal.txt"
    tar -C "$(dirname "$dir")" -czf "$out/mobilenet_run.tar.gz" "$(basename "$dir")"
    timeout "${4:-0}" "$bundle/run.sh" cuda_bench --parts t --model models/mobilenet_v2.yaml \
        --best "$dir" --builders 14 2>&1 | tee "$out/mobilenet_table.txt"
    ;;
pipeline)
    rm -rf "$pipe_dir"
    mkdir -p "$pipe_dir"
    # the same script, detached: CV part, mobilenet_v2 run, its table
    OUT="$pipe_dir" setsid nohup sh -c '
        sh "$0" cv 100000 > "$1/cv.log" 2>&1
        sh "$0" mobilenet > "$1/mobilenet.log" 2>&1
        echo done > "$1/done"' "$0" "$pipe_dir" > /dev/null 2>&1 < /dev/null &
    echo $! > "$pipe_dir/pid"
    echo "pipeline started (pid $(cat "$pipe_dir/pid"))"
    ;;
watch)
    end=$(( $(date +%s) + ${2:-540} ))
    while [ "$(date +%s)" -lt "$end" ] && [ ! -f "$pipe_dir/done" ]; do
        m=$(grep -c '"type":"measure"' /tmp/dtune_gpu_run_mobilenet/tuning.jsonl 2>/dev/null || echo 0)
        echo "$(date -u +%T) cv rows $(grep -c 'flush' "$pipe_dir/cv.log" 2>/dev/null || echo 0)," \
             "mobilenet measurements $m"
        left=$(( end - $(date +%s) ))
        sleep $(( left < 30 ? (left > 0 ? left : 0) : 30 ))
    done
    [ -f "$pipe_dir/done" ] && echo "pipeline done"
    [ -f "$pipe_dir/done" ] || [ ! -d /tmp/dtune_gpu_run_mobilenet ] ||
        tar -C /tmp -czf "$out/mobilenet_run_partial.tar.gz" dtune_gpu_run_mobilenet
    for f in "$pipe_dir"/*; do
        case "$f" in *.out) tr '\r' '\n' < "$f" | grep -v '^\s*$' | tail -n 60 > "$out/$(basename "$f").tail" ;;
                     */pid) ;;
                     *) cp "$f" "$out/" ;; esac
    done
    cat "$pipe_dir/cv.log" 2>/dev/null
    cat "$pipe_dir/mobilenet_table.txt" 2>/dev/null
    ;;
*)
    sed -n '2,30p' "$0"
    exit 2
    ;;
esac
