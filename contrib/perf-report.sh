#!/bin/bash
# One-command performance report of gpuic: runs the benchmarks this machine can run and writes
# OUTDIR/report.md with tables, ratios and SVG plots, next to every raw CSV it used.
#
# Usage: contrib/perf-report.sh [--quick] [--no-build] [--tidy] OUTDIR
#   --quick  fewer sizes and iterations: a few minutes on a 2-core machine
#   --tidy   leave only what a committed report needs: drops the per-run mpirun logs, the PNG
#            plots (report.md uses SVG), NVSHMEM's build products, and writes paths relative
#            to the repository, and keeps a benchmark's console log only where it failed
#            (about 40 files in all on a GPU machine, 27 without a GPU)
#
# Always (host):
#   host-bench/   contrib/bench/run-bench.sh: osc_bench under gpuic, osc/ucx, osc/rdma,
#                 osc/pt2pt (--quick: sizes 8 B, 1 KiB, 64 KiB, 1 MiB)
#   proxy-bench.txt  proxy_bench: host producers -> ring -> proxy -> UCX loopback
#   dissect/      contrib/gpuic-dissect on the host path: every operation with the library's
#                 completion wait and with a polling producer; put with an idle proxy, with
#                 16 WQEs per doorbell, and 1 MiB put and get.  Per run: its table (.md), chart
#                 (.svg) and raw stamps of all its operations (.csv); a run's log only when
#                 it failed or was skipped
# Where a GPU exists (nvidia-smi lists one):
#   device/       contrib/bench/run-device-bench.sh: device API vs NVSHMEM, raw floors
#   stream/       contrib/bench/stream_bench, when it was built (its output, verbatim)
#   dissect/      gpuic-dissect on the p2p path and the proxy path (GPU-posted entries)
# A part that cannot run says so in the report; the script fails only when it cannot run at all.
# Benchmarks report; nothing here judges the numbers.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
quick="" do_build=1 tidy=0 out=""
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=--quick ;;
    --no-build) do_build=0 ;;
    --tidy) tidy=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "perf-report: unknown option $1" >&2; exit 2 ;;
    *) out=$1 ;;
    esac
    shift
done
[ -n "$out" ] || { echo "usage: contrib/perf-report.sh [--quick] [--no-build] [--tidy] OUTDIR" >&2; exit 2; }
mkdir -p "$out" || exit 1
out_arg=$out
out=$(cd "$out" && pwd)
export GPUIC_BUILD_DIR=$build

if [ "$do_build" = 1 ]; then
    "$top/contrib/build.sh" || { echo "perf-report: build failed" >&2; exit 1; }
fi
command -v python3 >/dev/null 2>&1 || { echo "perf-report: python3 is needed" >&2; exit 1; }

gpu_present() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'
}

status="$out/status.txt" # one line per part: name, ok|skipped|failed, detail
: >"$status"
note() { echo "$1|$2|$3" >>"$status"; echo "== $1: $2${3:+ ($3)}"; }
start=$(date +%s)
{
    echo "command: contrib/perf-report.sh${quick:+ $quick} $out_arg"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "host: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "mpi: $(mpirun --version 2>/dev/null | head -1)"
    echo "ucx: $(pkg-config --modversion ucx 2>/dev/null)"
    echo "git: $(git -C "$top" rev-parse --short HEAD 2>/dev/null)$(git -C "$top" diff --quiet 2>/dev/null || echo ' (modified)')"
    echo "gpu: $(gpu_present && nvidia-smi -L 2>/dev/null | head -1 || echo none)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"

# --- host ---------------------------------------------------------------------------------
echo "== host RMA benchmark (gpuic vs osc/ucx, osc/rdma, osc/pt2pt)"
rounds=2
if "$top/contrib/bench/run-bench.sh" --no-build $quick --rounds "$rounds" --out "$out/host-bench" \
        >"$out/host-bench.log" 2>&1 && [ -s "$out/host-bench/results.csv" ]; then
    note host-bench ok "run-bench.sh $quick --rounds $rounds"
else
    note host-bench failed "see host-bench.log"
fi

echo "== proxy_bench"
scale=1; [ -n "$quick" ] && scale=0.2
if [ -x "$build/contrib/bench/proxy_bench" ] &&
        timeout 300 "$build/contrib/bench/proxy_bench" "$scale" >"$out/proxy-bench.txt" 2>&1; then
    note proxy-bench ok "proxy_bench $scale"
else
    note proxy-bench failed "see proxy-bench.txt"
fi

dissect() { # label, gpuic-dissect arguments...; the log stays only when the run did not pass
    local label=$1 rc; shift
    python3 "$top/contrib/gpuic-dissect" "$@" --check --out "$out/dissect" \
        >"$out/dissect/$label.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] && rm -f "$out/dissect/$label.log"
    return "$rc"
}
mkdir -p "$out/dissect"
iters=2000; [ -n "$quick" ] && iters=500
echo "== dissection, host path"
dissect host-default --path host --op all --iters "$iters" --label default &&
    note dissect-host ok "default proxy settings" || note dissect-host failed "see dissect/host-default.log"
dissect host-poll --path host --op all --iters "$iters" --wait poll --label poll &&
    note dissect-host-poll ok "producer polls the counter" || note dissect-host-poll failed "see dissect/host-poll.log"
dissect host-idle --path host --op put --iters $((iters / 5)) --wait poll --gap-us 5000 --label idle &&
    note dissect-host-idle ok "5 ms between operations: the proxy sleeps" || note dissect-host-idle failed "see dissect/host-idle.log"
dissect host-batch --path host --op put --batch 16 --iters $((iters / 16 + 1)) --wait poll --label batch16 &&
    note dissect-host-batch ok "16 WQEs per doorbell" || note dissect-host-batch failed "see dissect/host-batch.log"
dissect host-1m --path host --op put,get --size 1048576 --iters $((iters / 10)) --wait poll --label 1MiB &&
    note dissect-host-1m ok "1 MiB put and get" || note dissect-host-1m failed "see dissect/host-1m.log"

# --- GPU ----------------------------------------------------------------------------------
if gpu_present; then
    echo "== device benchmark"
    dev_iters=20000; [ -n "$quick" ] && dev_iters=5000
    if "$top/contrib/bench/run-device-bench.sh" --out "$out/device" --iters "$dev_iters" \
            >"$out/device-bench.log" 2>&1 && [ -s "$out/device/results.csv" ]; then
        note device-bench ok "run-device-bench.sh --iters $dev_iters"
    else
        note device-bench failed "see device-bench.log"
    fi
    stream=$build/contrib/bench/stream_bench
    if [ -x "$stream" ]; then
        mkdir -p "$out/stream"
        eval "$("$top/contrib/mps.sh" start)"
        x=(); [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && x=(-x CUDA_MPS_PIPE_DIRECTORY)
        if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
                OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$build/stage/lib/openmpi" \
                timeout 600 mpirun -np 2 --oversubscribe --bind-to none --mca osc gpuic "${x[@]}" \
                "$stream" ${STREAM_BENCH_ARGS:-} >"$out/stream/stream_bench.txt" 2>&1; then
            note stream-bench ok "stream_bench ${STREAM_BENCH_ARGS:-}"
        else
            note stream-bench failed "see stream/stream_bench.txt"
        fi
        "$top/contrib/mps.sh" stop
    else
        note stream-bench skipped "contrib/bench/stream_bench not built"
    fi
    echo "== dissection, p2p and proxy paths"
    dissect p2p --path p2p --op all --iters "$iters" --keep-going && note dissect-p2p ok "" ||
        note dissect-p2p failed "$(tail -1 "$out/dissect/p2p.log")"
    dissect proxy --path proxy --op all --iters "$iters" --keep-going
    case $? in
    0) note dissect-proxy ok "GPU-posted entries" ;;
    3) note dissect-proxy skipped "$(tail -1 "$out/dissect/proxy.log")" ;;
    *) note dissect-proxy failed "see dissect/proxy.log" ;;
    esac
else
    for part in device-bench stream-bench dissect-p2p dissect-proxy; do
        note "$part" skipped "no GPU on this machine"
    done
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); $(($(date +%s) - start)) s in all" >>"$out/machine.txt"
if [ "$tidy" = 1 ]; then
    rm -rf "$out/host-bench/logs"
    rm -f "$out"/host-bench/*.png "$out/device/nvshmem_bench" "$out/device/nvshmem_stream_bench" \
        "$out/device/libnvshmem_host.so"
    # a benchmark's console log only where it did not pass (its results are in its folder)
    for part in host-bench device-bench; do
        grep -q "^$part|ok|" "$status" && rm -f "$out/$part.log"
    done
    grep -rlF "$top/" "$out" 2>/dev/null | while read -r f; do sed -i "s#$top/#./#g" "$f"; done
fi
python3 "$top/contrib/perf_report.py" "$out" || { echo "perf-report: report failed" >&2; exit 1; }
echo "report: $out/report.md"
