#!/bin/bash
# Runs osc_bench under gpuic and under Open MPI's own osc components, side by side: same binary,
# same machine, same mpirun invocation apart from --mca osc NAME.  Writes into the output dir:
#   results.csv   every measurement   (component,op,sync,size,metric,value,note)
#   ratios.md     gpuic / best peer per (op, sync, size), headline rows first
#   osc_bench_<sync>.png   plots, when python3 has matplotlib (skipped with a note otherwise)
#   logs/         each mpirun's stdout and stderr
# and prints a short summary of the headline targets.
#
# Usage: contrib/bench/run-bench.sh [--quick] [--out DIR] [--components "gpuic ucx rdma pt2pt"]
#                                   [--rounds N] [--timeout SECONDS] [--no-build]
#                                   [--patterns-only | --no-patterns] [-- osc_bench options...]
#
# After the two-rank operations come the patterns (osc_bench --patterns): per-iteration p50,
# p99 and max on 2, 4 and 8 ranks, on MPI_Win_allocate and MPI_Win_create windows (the jobs
# are listed at PATTERN_JOBS below).
#
# Each (component, operation) runs in its own mpirun, so a component that crashes loses only
# the measurement it crashed in: the run is resumed after it and the lost cell is recorded as
# "crash" (or "timeout").  A benchmark reports; this script fails only when it cannot run at all.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
bench="$build/contrib/bench/osc_bench"

invocation="contrib/bench/run-bench.sh"
for arg in "$@"; do
    if [[ $arg =~ ^[A-Za-z0-9_./,=:+-]+$ ]]; then invocation+=" $arg"; else invocation+=" $(printf '%q' "$arg")"; fi
done
out="" quick="" do_build=1 run_timeout=180 rounds=1 do_ops=1 do_patterns=1
components="gpuic ucx rdma pt2pt"
bench_args=()
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=--quick ;;
    --out) out=$2; shift ;;
    --components) components=$2; shift ;;
    --timeout) run_timeout=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --no-build) do_build=0 ;;
    --patterns-only) do_ops=0 ;;
    --no-patterns) do_patterns=0 ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "run-bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
out=${out:-$top/bench-results/$(date +%Y%m%d-%H%M%S)}

if [ "$do_build" = 1 ]; then
    "$top/contrib/build.sh" || { echo "run-bench: build failed" >&2; exit 1; }
fi
[ -x "$bench" ] || { echo "run-bench: $bench not built" >&2; exit 1; }
mkdir -p "$out/logs"

# --- How every component is run ---------------------------------------------------------
# Debian's /etc/openmpi/openmpi-mca-params.conf excludes "osc ucx,pt2pt" and "pml ucx"; the
# command-line --mca osc NAME overrides the exclusion.  Flags each peer needs on one node:
#   gpuic: the staged component, found through mca_base_component_path below.
#   ucx:   nothing more: osc/ucx runs beside pml ob1 and UCX picks its shared-memory
#          transports itself (pml ucx stays excluded, the same for everybody).
#   rdma:  nothing more: with no RDMA-capable btl in osc_rdma_btls it drives btl vader.
#   pt2pt: nothing more: its messages go through pml ob1 over btl vader.
# pml ob1 and btl self,vader are pinned for everybody so that no component gets a different
# transport underneath the collectives the benchmark itself uses.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$build/stage/lib/openmpi"
if [ "$(nproc)" -ge 2 ]; then bind=core; else bind=none; fi
MPIRUN=(mpirun -np 2 --oversubscribe --bind-to "$bind" --mca pml ob1 --mca btl self,vader)

ALL_OPS="put get accumulate get_accumulate fetch_and_op compare_and_swap put_bw get_bw put_bibw get_bibw"
ALL_SYNCS="fence lock lock_all pscw"
csv="$out/results.csv"
echo "component,op,sync,size,metric,value,note" >"$csv"

metric_of() { case $1 in *_bw|*_bibw) echo bandwidth_MBps ;; *) echo latency_us ;; esac; }

# Which osc_bench options a run got from the user, so that resumed runs keep them.
user_opt() { # name -> value or empty
    local i
    for ((i = 0; i < ${#bench_args[@]}; ++i)); do
        [ "${bench_args[i]}" = "$1" ] && { echo "${bench_args[i + 1]:-}"; return; }
    done
}
user_ops=$(user_opt --ops); user_syncs=$(user_opt --sync); user_min=$(user_opt --min)
# Options other than --ops/--sync/--min pass through unchanged.
pass_args=()
for ((i = 0; i < ${#bench_args[@]}; ++i)); do
    case ${bench_args[i]} in
    --ops|--sync|--min) ((++i)) ;;
    *) pass_args+=("${bench_args[i]}") ;;
    esac
done
ops=${user_ops:-$ALL_OPS}; ops=${ops//,/ }; [ "$ops" = all ] && ops=$ALL_OPS
syncs=${user_syncs:-$ALL_SYNCS}; syncs=${syncs//,/ }; [ "$syncs" = all ] && syncs=$ALL_SYNCS

# One mpirun; appends its rows to the CSV.  Prints "SYNC SIZE RC" of the measurement it died
# in, or nothing when every measurement it began also ended.
run_once() { # component op "syncs" min log
    local comp=$1 op=$2 sync_list=$3 min=$4 log=$5 rc begun=""
    timeout -k 10 "$run_timeout" "${MPIRUN[@]}" --mca osc "$comp" "$bench" --label "$comp" \
        --ops "$op" --sync "${sync_list// /,}" ${min:+--min "$min"} $quick "${pass_args[@]}" \
        </dev/null >"$log.out" 2>"$log.err"
    rc=$?
    grep -v '^#' "$log.out" | grep -E '^[^,]+(,[^,]*){6}$' >>"$csv"
    begun=$(awk '$1 == "#" && $2 == "begin" { open = $4 " " $5 }
                 $1 == "#" && $2 == "end"   { open = "" }
                 END { print open }' "$log.out")
    if [ -n "$begun" ]; then
        echo "$begun $rc"
    elif [ "$rc" -ne 0 ] && ! grep -q '^# begin' "$log.out"; then
        echo "- - $rc" # died before its first measurement
    elif [ "$rc" -ne 0 ]; then
        echo "run-bench: $comp $op exited with $rc after its last measurement (rows kept)" >&2
    fi
}

failure_note() { # rc
    case $1 in
    124|137) echo "timeout (over ${run_timeout}s)" ;;
    *) if [ "$1" -gt 128 ]; then echo "crash (signal $(($1 - 128)))"; else echo "crash (exit $1)"; fi ;;
    esac
}

# Runs one (component, op) over the requested syncs.  Work items are "SYNCS|MIN"; after a crash
# the lost cell is recorded and two items are queued: the same sync from the next size on
# (osc_bench --min SIZE+1 starts at the next size of its sequence), then the syncs after it.
run_op() { # component op
    local comp=$1 op=$2 queue=("$syncs|$user_min") i=0 item list min died sync size rc rest s found
    while [ $i -lt ${#queue[@]} ]; do
        item=${queue[i]}; list=${item%|*}; min=${item#*|}
        died=$(run_once "$comp" "$op" "$list" "$min" "$out/logs/$comp.$op.r$round.$i")
        i=$((i + 1))
        [ -z "$died" ] && continue
        read -r sync size rc <<<"$died"
        if [ "$sync" = - ]; then
            for s in $list; do
                echo "$comp,$op,$s,all,$(metric_of "$op"),NA,$(failure_note "$rc") before any measurement" >>"$csv"
            done
            echo "  $comp $op: $(failure_note "$rc") before any measurement (log $out/logs/$comp.$op.r$round.$((i - 1)).err)"
            continue
        fi
        echo "$comp,$op,$sync,$size,$(metric_of "$op"),NA,$(failure_note "$rc")" >>"$csv"
        echo "  $comp $op $sync $size: $(failure_note "$rc") (log $out/logs/$comp.$op.r$round.$((i - 1)).err)"
        case $op in
        accumulate|get_accumulate|fetch_and_op|compare_and_swap) ;; # one size only
        *) [ $((size + 1)) -le "$(max_bytes)" ] && queue+=("$sync|$((size + 1))") ;;
        esac
        rest="" found=0
        for s in $list; do
            [ $found = 1 ] && rest="$rest${rest:+ }$s"
            [ "$s" = "$sync" ] && found=1
        done
        [ -n "$rest" ] && queue+=("$rest|$user_min")
    done
}

max_bytes() {
    local m=$(user_opt --max) v
    m=${m:-4M}
    case $m in
    *[kK]) v=$((${m%?} << 10)) ;;
    *[mM]) v=$((${m%?} << 20)) ;;
    *) v=$m ;;
    esac
    echo "$v"
}

# Other work on the machine shows up as noise; say so rather than hide it.
machine_load() {
    local others
    others=$(pgrep -c -f 'mpirun|orted' 2>/dev/null)
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg), other mpirun/orted processes: ${others:-0}"
}

start=$(date +%s)
{
    echo "command: $invocation"
    echo "mpirun: ${MPIRUN[*]} --mca osc NAME $bench --label NAME --ops OP --sync LIST ${quick} ${pass_args[*]}"
    echo "host: $(hostname), $(nproc) cores, $(mpirun --version 2>/dev/null | head -1), git $(git -C "$top" rev-parse --short HEAD 2>/dev/null)"
    echo "before: $(machine_load)"
} | tee "$out/README.txt"
echo "osc_bench: components [$components], $rounds round(s), output $out"
# Components take turns per operation, so that background load drifting over the run hits
# them alike; with --rounds N every cell is measured N times and the report keeps the best.
for ((round = 1; round <= rounds && do_ops; ++round)); do
    for op in $ops; do
        t0=$(date +%s)
        for comp in $components; do
            run_op "$comp" "$op"
        done
        echo "  round $round $op: $(($(date +%s) - t0)) s"
    done
done

# --- Patterns: several ranks, p50/p99/max per iteration -----------------------------------
# "RANKS FLAVOR PATTERNS": 2 ranks for put/get + flush, accumulates, PSCW rounds and the
# many-target patterns; 4 for the tail latency of put and fetch_and_op + flush; 8 for
# fetch_and_op throughput on one counter.
PATTERN_JOBS=(
    "2 allocate put_flush,get_flush,acc_sum,gacc_sum,pscw_round,get_all,get_nbr,get_one_all,put_all,put_bidir,lock_put_unlock"
    "2 create acc_sum,gacc_sum,get_all,get_nbr,get_one_all,put_all,put_bidir,lock_put_unlock,put_flush,get_flush"
    "4 allocate put_flush,fop_flush"
    "8 allocate fop_rate"
    "8 create fop_rate"
)

# One job under one component; after a crash the pattern it died in is recorded and the job
# goes on with the patterns after it.
run_patterns() { # component ranks flavor patterns
    local comp=$1 np=$2 flavor=$3 left=$4 log begun rc i=0 bind=$bind pat sync size rest p m
    [ "$np" -gt "$(nproc)" ] && bind=none
    while [ -n "$left" ]; do
        log="$out/logs/$comp.patterns.np$np.$flavor.r$round.$i"
        i=$((i + 1))
        timeout -k 10 "$run_timeout" mpirun -np "$np" --oversubscribe --bind-to "$bind" \
            --mca pml ob1 --mca btl self,vader --mca osc "$comp" "$bench" --label "$comp" \
            --patterns "$left" --flavor "$flavor" $quick "${pass_args[@]}" \
            </dev/null >"$log.out" 2>"$log.err"
        rc=$?
        grep -v '^#' "$log.out" | grep -E '^[^,]+(,[^,]*){6}$' >>"$csv"
        begun=$(awk '$1 == "#" && $2 == "begin" { open = $3 " " $4 " " $5 }
                     $1 == "#" && $2 == "end"   { open = "" }
                     END { print open }' "$log.out")
        [ -z "$begun" ] && { [ "$rc" -ne 0 ] && echo "  $comp patterns np$np $flavor: exit $rc (log $log.err)"; break; }
        read -r pat sync size <<<"$begun"
        for m in p50_us p99_us max_us; do
            echo "$comp,$pat,$sync,$size,$m,NA,$(failure_note "$rc")" >>"$csv"
        done
        echo "  $comp $pat $sync $size: $(failure_note "$rc") (log $log.err)"
        # osc_bench runs patterns in its own order: drop every one this run began
        rest=""
        for p in ${left//,/ }; do
            grep -q "^# begin $p " "$log.out" || rest="$rest${rest:+,}$p"
        done
        left=$rest
    done
}

for ((round = 1; round <= rounds && do_patterns; ++round)); do
    for job in "${PATTERN_JOBS[@]}"; do
        read -r np flavor pats <<<"$job"
        t0=$(date +%s)
        for comp in $components; do
            run_patterns "$comp" "$np" "$flavor" "$pats"
        done
        echo "  round $round patterns np$np $flavor: $(($(date +%s) - t0)) s"
    done
done
echo "after: $(machine_load)" | tee -a "$out/README.txt"
echo "  total $(($(date +%s) - start)) s"

# --- Report: ratios, summary, plots ----------------------------------------------------------
py=""
for cand in python3 /usr/bin/python3; do
    command -v "$cand" >/dev/null 2>&1 || continue
    [ -z "$py" ] && py=$cand
    if "$cand" -c 'import matplotlib' >/dev/null 2>&1; then py=$cand; break; fi
done
if [ -z "$py" ]; then
    echo "run-bench: no python3: no ratio table or plot (the CSV is $csv)"
    exit 0
fi
OSC_BENCH_COMMAND="$invocation" "$py" "$top/contrib/bench/bench_report.py" "$csv" "$out" ||
    echo "run-bench: report failed"
exit 0
