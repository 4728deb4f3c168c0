#!/bin/bash
# Runs gpuic's test suite from a built tree (contrib/build.sh) and ends with one line:
#   N passed, N failed, N skipped
#
# Usage: test/run-tests.sh [REGEX]   (only tests whose name matches REGEX, e.g. "unit/|accumulate")
#
# Environment: GPUIC_BUILD_DIR (default _build), GPUIC_TEST_KINDS (default "unit mpi device"),
# GPUIC_TEST_LABEL (prefix for test names, e.g. "asan"), GPUIC_TEST_TIMEOUT (seconds per MPI or
# device test, default 300), GPUIC_TEST_RANKS (run every mpi and device entry at this many ranks
# instead of its own; entries that become identical run once), GPUIC_TEST_DEADLINE (a time in
# seconds since the epoch: tests are cut to end by then, and those not started are skipped, for
# a caller with a fixed time budget), GPUIC_TEST_SUMMARY (a file to which
# "passed failed skipped" is appended, for a caller that adds several runs up).
#
# Test lists: test/unit/testlist   "program [timeout]"  (or a script under test/, e.g. fuzz/run-fuzz.sh;
#                                   timeout default 300 s: limits are hang guards for a loaded machine)
#             test/mpi/testlist    "program ranks [VAR=value ...]"  (program.sh: a script)
#             test/device/testlist "program ranks [VAR=value ...]"  (skipped without a GPU)
# A program passes with exit 0, is skipped with exit 77, and fails otherwise.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
pattern=${1:-}
logdir="$build/test-logs"
mkdir -p "$logdir"
pass=0 fail=0 skip=0
failed_names=()

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$build/stage/lib/openmpi"
# Open MPI's own progress yielding for oversubscribed runs.
export OMPI_MCA_mpi_yield_when_idle=1
MPIRUN=(mpirun --oversubscribe --bind-to none --mca osc gpuic)
# Sanitizer settings and UCX's transport choice reach every rank (mpirun forwards OMPI_MCA_*
# itself).
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose \
         CUDA_MPS_PIPE_DIRECTORY UCX_TLS; do
    [ -n "${!v:-}" ] && MPIRUN+=(-x "$v")
done
export GPUIC_TEST_MPIRUN="${MPIRUN[*]}"
export GPUIC_TEST_BUILD="$build"

gpu_present() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'
}

record() { # name rc log
    local name=$1 rc=$2 log=$3
    case $rc in
        0)  pass=$((pass + 1)); echo "PASS $name" ;;
        77) skip=$((skip + 1)); echo "SKIP $name" ;;
        *)  fail=$((fail + 1)); failed_names+=("$name"); echo "FAIL $name (exit $rc, log: $log)"
            sed 's/^/    | /' "$log" | tail -20 ;;
    esac
}

# A device test still running shortly before its timeout: its processes print their threads'
# stacks into the log (SIGUSR2, test/device/device_test.h).  Sets watcher (a pid or empty).
watch_hang() { # kind program timeout log
    watcher=
    : >"$4"
    [ "$1" = device ] && [ "$3" -gt 20 ] || return 0
    # one process at a time, so that their lines do not mix
    ( sleep $(($3 - 8))
      for p in $(pgrep -f "^$2( |\$)"); do kill -USR2 "$p"; sleep 1; done ) >/dev/null 2>&1 &
    watcher=$!
}

# After a test: stop the watcher; after a timeout, kill what is left of the test's processes
# (a rank stuck in the CUDA driver may outlive mpirun) and, for a device test, restart MPS,
# whose server can refuse new clients ("busy or unavailable") after killed ones.
after_hang() { # kind program rc
    [ -n "${watcher:-}" ] && { kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null; }
    watcher=
    [ "$3" = 124 ] || [ "$3" = 137 ] || return 0
    pkill -KILL -f "^$2( |\$)" 2>/dev/null
    for _ in $(seq 50); do pgrep -f "^$2( |\$)" >/dev/null || break; sleep 0.1; done
    if [ "$1" = device ] && [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
        "$top/contrib/mps.sh" stop >/dev/null 2>&1
        eval "$("$top/contrib/mps.sh" start)"
    fi
}

run_list() { # kind list
    local kind=$1 list=$2 line prog arg1 rest name log rc t np envs left
    local -A seen=()
    [ -f "$list" ] || return 0
    while read -r line; do
        line=${line%%#*}
        [ -z "${line// }" ] && continue
        read -r prog arg1 rest <<<"$line"
        if [ "$kind" = unit ]; then
            name="unit/$prog"; t=${arg1:-300}
        else
            np=${GPUIC_TEST_RANKS:-$arg1}; name="$kind/$prog.np$np${rest:+ $rest}"
            t=${GPUIC_TEST_TIMEOUT:-300}
        fi
        [ -n "${seen[$name]:-}" ] && continue
        seen[$name]=1
        [ -n "$pattern" ] && ! [[ $name =~ $pattern ]] && continue
        [ -n "${GPUIC_TEST_LABEL:-}" ] && name="$GPUIC_TEST_LABEL:$name"
        log="$logdir/$(echo "$name" | tr ' /=' '___').log"
        if [ "$kind" = device ] && ! gpu_present; then
            echo "no GPU on this machine" >"$log"; record "$name" 77 "$log"; continue
        fi
        if [ -n "${GPUIC_TEST_DEADLINE:-}" ]; then
            left=$((GPUIC_TEST_DEADLINE - $(date +%s)))
            if [ "$left" -lt 5 ]; then
                echo "not started: GPUIC_TEST_DEADLINE reached" >"$log"; record "$name" 77 "$log"
                continue
            fi
            [ "$left" -lt "$t" ] && t=$left
        fi
        case $kind in
        unit)
            if [[ $prog == *.sh ]]; then   # a script, path relative to test/
                GPUIC_BUILD_DIR="$build" timeout "$t" bash "$top/test/$prog" </dev/null >"$log" 2>&1; rc=$?
            elif [ -x "$build/test/unit/$prog" ]; then
                timeout "$t" "$build/test/unit/$prog" </dev/null >"$log" 2>&1; rc=$?
            else
                echo "not built: $prog" >"$log"; rc=1
            fi ;;
        *)
            envs=()
            for e in $rest; do envs+=(-x "$e"); done
            if [[ $prog == *.sh ]]; then
                ( for e in $rest; do export "${e?}"; done
                  GPUIC_TEST_NP=$np timeout "$t" bash "$top/test/$kind/$prog" ) </dev/null >"$log" 2>&1; rc=$?
            elif [ -x "$build/test/$kind/$prog" ]; then
                watch_hang "$kind" "$build/test/$kind/$prog" "$t" "$log"
                ( for e in $rest; do export "${e?}"; done
                  timeout -k 10 "$t" "${MPIRUN[@]}" "${envs[@]}" -np "$np" "$build/test/$kind/$prog" ) \
                    </dev/null >>"$log" 2>&1
                rc=$?
                after_hang "$kind" "$build/test/$kind/$prog" "$rc"
            else
                # a listed test that was not built is a failure (device tests without a GPU
                # were counted as skipped above)
                echo "not built: $prog" >"$log"; rc=1
            fi ;;
        esac
        record "$name" "$rc" "$log"
    done <"$list"
}

if [ ! -f "$build/stage/lib/openmpi/mca_osc_gpuic.so" ]; then
    echo "run-tests: no staged build in $build (run contrib/build.sh first)" >&2
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
fi
for kind in ${GPUIC_TEST_KINDS:-unit mpi device}; do
    if [ "$kind" = device ] && gpu_present; then
        # several ranks share a single GPU through MPS
        eval "$("$top/contrib/mps.sh" start)"
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && MPIRUN+=(-x CUDA_MPS_PIPE_DIRECTORY)
    fi
    run_list "$kind" "$top/test/$kind/testlist"
done
gpu_present && "$top/contrib/mps.sh" stop
[ ${#failed_names[@]} -gt 0 ] && printf 'failed: %s\n' "${failed_names[@]}"
[ -n "${GPUIC_TEST_SUMMARY:-}" ] && echo "$pass $fail $skip" >>"$GPUIC_TEST_SUMMARY"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
