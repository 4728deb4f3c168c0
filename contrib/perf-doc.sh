#!/bin/bash
# Rewrites the generated tables of docs/performance.md (the blocks between
# "<!-- BEGIN generated: NAME -->" and "<!-- END generated: NAME -->") from the benchmark CSVs:
# host RMA with gpuic / osc/ucx, osc/rdma, osc/pt2pt, the device API against NVSHMEM, the proxy
# path against the GPU -> CPU -> GPU floor, and the stream-triggered calls against NVSHMEM's
# on-stream calls.  Text outside the blocks is not touched; on the same CSVs a second run changes
# nothing.
#
# Usage: contrib/perf-doc.sh [--host-csv F] [--device-csv F] [--run-host] [--run-device]
#                            [--host-run TEXT] [--device-run TEXT] [--doc F]
#   --host-csv F    run-bench.sh's results.csv format (default docs/perf-host-2core.csv)
#   --device-csv F  run-device-bench.sh's results.csv format (default docs/perf-h100-device.csv);
#                   an empty F leaves that part's blocks as they are
#   --run-host      run contrib/bench/run-bench.sh --no-build first (after contrib/build.sh) and
#                   copy its results.csv to the --host-csv path (the document names its CSV)
#   --run-device    run contrib/bench/run-device-bench.sh --iters 2000 first (needs a GPU) and
#                   copy its results.csv to the --device-csv path
#   --host-run TEXT, --device-run TEXT
#                   the machine, date and command a block says it comes from; without them a
#                   block keeps what it says, and --run-host / --run-device write this machine's
#   --doc F         the document (default docs/performance.md)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
host_csv=$top/docs/perf-host-2core.csv
device_csv=$top/docs/perf-h100-device.csv
doc=$top/docs/performance.md
run_host=0 run_device=0 host_run="" device_run=""
have_host_run=0 have_device_run=0
while [ $# -gt 0 ]; do
    case $1 in
    --host-csv) host_csv=$2; shift ;;
    --device-csv) device_csv=$2; shift ;;
    --run-host) run_host=1 ;;
    --run-device) run_device=1 ;;
    --host-run) host_run=$2; have_host_run=1; shift ;;
    --device-run) device_run=$2; have_device_run=1; shift ;;
    --doc) doc=$2; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 0 ;;
    *) echo "perf-doc: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
command -v python3 >/dev/null 2>&1 || { echo "perf-doc: python3 is needed" >&2; exit 1; }

machine() {
    local cpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
    echo "$(hostname), $(nproc) cores, $cpu"
}

# run_bench NAME SCRIPT ARGS...: runs SCRIPT --out DIR ARGS, prints DIR/results.csv
run_bench() {
    local name=$1 script=$2 dir
    shift 2
    dir=$top/bench-results/perf-doc-$name-$(date +%Y%m%d-%H%M%S)
    if ! "$top/contrib/bench/$script" --out "$dir" "$@" >&2 || [ ! -s "$dir/results.csv" ]; then
        echo "perf-doc: $script failed (see $dir)" >&2
        return 1
    fi
    echo "$dir/results.csv"
}

if [ "$run_host" = 1 ]; then
    csv=$(run_bench host run-bench.sh --no-build) && cp "$csv" "$host_csv" || exit 1
    if [ "$have_host_run" = 0 ]; then
        host_run="$(machine), $(date -u +%Y-%m-%d), \`contrib/bench/run-bench.sh --no-build\`"
        have_host_run=1
    fi
fi
if [ "$run_device" = 1 ]; then
    csv=$(run_bench device run-device-bench.sh --iters 2000) && cp "$csv" "$device_csv" || exit 1
    if [ "$have_device_run" = 0 ]; then
        gpu=$(nvidia-smi -L 2>/dev/null | head -1 | sed 's/ (UUID.*//')
        device_run="$gpu, $(machine), $(date -u +%Y-%m-%d)"
        device_run+=", \`contrib/bench/run-device-bench.sh --iters 2000\`"
        have_device_run=1
    fi
fi

args=("$doc")
[ -n "$host_csv" ] && args+=(--host-csv "$host_csv")
[ -n "$device_csv" ] && args+=(--device-csv "$device_csv")
[ "$have_host_run" = 1 ] && args+=(--host-run "$host_run")
[ "$have_device_run" = 1 ] && args+=(--device-run "$device_run")
exec python3 "$top/contrib/bench/perf_doc.py" "${args[@]}"
