#!/bin/bash
# Two GPUs of one host, in one command (about 8 minutes at most): builds if needed, runs the
# device test list at 2 ranks (one per GPU) and at 4 ranks (two per GPU, under MPS), the
# rank-to-GPU binding test, then the device benchmarks across the two GPUs beside NVSHMEM and
# the copy engines' floor (cudaMemcpyPeer).
#
# Usage: contrib/bench/run-2gpu.sh OUTDIR
#   NVSHMEM_HOME=DIR            NVSHMEM install (default: the nvidia.nvshmem Python package)
#   GPUIC_CONFIGURE_ARGS="..."  configure options for a first build (e.g. --with-ucx=DIR)
#   GPUIC_2GPU_ITERS=N          iterations of the latency loops (default 10000)
#   GPUIC_2GPU_BUDGET=S         seconds the whole run may take (default 480)
#   GPUIC_2GPU_MPS=0            run the 4-rank pass without MPS (kernels of two ranks on one
#                               GPU are then time-sliced: slow cross-process waits)
# Writes OUTDIR/results.csv (component,measure,size,value,unit), OUTDIR/ratios.md (targets,
# latency, bandwidth and stream tables, then the test results: contrib/bench/twogpu-table.sh),
# OUTDIR/tests.txt, OUTDIR/test-logs-*/, OUTDIR/topology.txt and OUTDIR/run.log.
# docs/perf-2gpu.md is this run's ratios.md:  cp OUTDIR/ratios.md docs/perf-2gpu.md
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
out=${1:?usage: $0 OUTDIR}
iters=${GPUIC_2GPU_ITERS:-10000}
budget=${GPUIC_2GPU_BUDGET:-480}
big=$((256 << 20))
start=$(date +%s)
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee "$out/run.log") 2>&1

elapsed() { echo $(($(date +%s) - start)); }
say() { echo "[$(elapsed) s] $*"; }
# seconds left before the run must end, less what later steps keep back
left() { echo $((budget - $(elapsed) - ${1:-0})); }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset CUDA_MPS_PIPE_DIRECTORY CUDA_VISIBLE_DEVICES

say "build"
# shellcheck disable=SC2086  # configure options are words
"$top/contrib/build.sh" ${GPUIC_CONFIGURE_ARGS:-} || { say "build failed"; exit 1; }
{ nvidia-smi -L; nvidia-smi topo -m; } >"$out/topology.txt" 2>&1
cat "$out/topology.txt"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 2 ] || say "only $ngpu GPU(s): the runs below put both ranks on one GPU"

# NVSHMEM peers compile while the tests run (they take longer to build than gpuic)
nv=${NVSHMEM_HOME:-}
[ -n "$nv" ] || nv=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
nvpid=
if [ -n "$nv" ] && [ -f "$nv/include/nvshmem.h" ]; then
    [ -e "$nv/lib/libnvshmem_host.so" ] ||
        ln -sf "$(ls "$nv"/lib/libnvshmem_host.so.* | head -1)" "$out/libnvshmem_host.so"
    nvbuild() { # source output [flags]
        local src=$1 exe=$2
        shift 2
        timeout 240 nvcc -arch=sm_90 -O2 -rdc=true -DOMPI_SKIP_MPICXX -I"$nv/include" $(mpicc --showme:compile) \
            "$@" "$top/contrib/bench/$src" -o "$out/$exe" -L"$out" -L"$nv/lib" \
            -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link) \
            -Xlinker -rpath -Xlinker "$nv/lib"
    }
    (
        { nvbuild nvshmem_bench.cu nvshmem_bench ||
          nvbuild nvshmem_bench.cu nvshmem_bench -DNVSHMEM_BENCH_NO_ATOMICS; } &
        nvbuild nvshmem_stream_bench.cu nvshmem_stream_bench &
        wait
    ) >"$out/nvshmem_build.log" 2>&1 &
    nvpid=$!
else
    say "NVSHMEM not found (NVSHMEM_HOME): its columns stay empty"
fi

# Tests: each pass ends by its deadline; what has not started by then is skipped.  The
# benchmarks keep the last third of the budget.
: >"$out/tests.txt.raw"
tests() { # label deadline-offset regex [VAR=value ...]
    local label=$1 keep=$2 regex=$3
    shift 3
    say "tests: $label"
    rm -rf "$build/test-logs" "$out/summary.$label"
    env "$@" GPUIC_TEST_KINDS=device GPUIC_TEST_TIMEOUT=120 GPUIC_TEST_LABEL="$label" \
        GPUIC_TEST_DEADLINE=$((start + budget - keep)) GPUIC_TEST_SUMMARY="$out/summary.$label" \
        "$top/test/run-tests.sh" "$regex" | tee "$out/tests.$label.log"
    cp -r "$build/test-logs" "$out/test-logs-$label" 2>/dev/null
    read -r p f s <"$out/summary.$label" 2>/dev/null || { p=0 f=0 s=0; }
    echo "| $label | $p | $f | $s | $(sed -n 's/^FAIL \(.*\) (exit .*/\1;/p' "$out/tests.$label.log" |
        tr '\n' ' ') |" >>"$out/tests.txt.raw"
}
list='device/(test_device_rma|test_stream_rma|test_device_bad_input|example_device_put)'
# what each pass leaves to the later ones, in proportion to the budget (300, 220 and 150 s of
# the default 480 s)
tests np2 $((budget * 5 / 8)) "$list" GPUIC_TEST_RANKS=2
if [ "${GPUIC_2GPU_MPS:-1}" = 1 ]; then
    tests np4-mps $((budget * 11 / 24)) "$list" GPUIC_TEST_RANKS=4 GPUIC_MPS_ANY_GPUS=1
else
    tests np4 $((budget * 11 / 24)) "$list" GPUIC_TEST_RANKS=4
fi
tests binding $((budget * 5 / 16)) 'device/bind_device'
{
    echo "| pass | passed | failed | skipped | failed tests |"
    echo "|---|---:|---:|---:|---|"
    cat "$out/tests.txt.raw"
} >"$out/tests.txt"
rm -f "$out/tests.txt.raw"

# Benchmarks: 2 ranks, one per GPU, no MPS.
csv="$out/results.csv"
echo "component,measure,size,value,unit" >"$csv"
export OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$build/stage/lib/openmpi"
mpirun=(mpirun -np 2 --bind-to none)
bench() { # label keep command...
    local label=$1 keep=$2 t
    shift 2
    t=$(left "$keep")
    if [ "$t" -lt 10 ]; then
        say "$label: no time left, not run"
        return
    fi
    say "$label (at most $t s)"
    timeout "$t" "$@" || say "$label: exit $?"
}
bench "device_bench: device API across the GPUs, put bandwidth to 256 MiB, cudaMemcpyPeer" 90 \
    "${mpirun[@]}" --mca osc gpuic "$build/contrib/bench/device_bench" --iters "$iters" \
    --csv "$csv" --max-bytes "$big" --memcpy-peer
bench "stream_bench: enqueued calls across the GPUs" 60 \
    "${mpirun[@]}" --mca osc gpuic "$build/contrib/bench/stream_bench" --iters "$iters" --csv "$csv"
if [ -n "$nvpid" ]; then
    say "waiting for the NVSHMEM builds"
    wait "$nvpid"
    tail -3 "$out/nvshmem_build.log"
    nvenv=(env NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_DISABLE_NVLS=1
           LD_LIBRARY_PATH="$nv/lib:${LD_LIBRARY_PATH:-}")
    nvx=(-x NVSHMEM_REMOTE_TRANSPORT -x NVSHMEM_DISABLE_NVLS -x LD_LIBRARY_PATH)
    [ -x "$out/nvshmem_bench" ] &&
        bench "nvshmem_bench across the GPUs" 30 "${nvenv[@]}" "${mpirun[@]}" "${nvx[@]}" \
            "$out/nvshmem_bench" --iters "$iters" --csv "$csv" --max-bytes "$big"
    [ -x "$out/nvshmem_stream_bench" ] &&
        bench "nvshmem_stream_bench across the GPUs" 5 "${nvenv[@]}" "${mpirun[@]}" "${nvx[@]}" \
            "$out/nvshmem_stream_bench" --iters "$iters" --csv "$csv"
fi

say "tables"
"$top/contrib/bench/twogpu-table.sh" "$csv" "$out/tests.txt" | tee "$out/ratios.md"
say "done: results in $out"
