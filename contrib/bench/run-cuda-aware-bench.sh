#!/bin/bash
# Host MPI RMA calls on GPU windows (CUDA-aware one-sided codes) side by side in one command:
# gpuic (host MPI_Put/Get/Accumulate/Fetch_and_op/Compare_and_swap on a window in device
# memory, both window flavors), NVSHMEM's host-initiated API on symmetric GPU memory, and the
# CUDA runtime's floors (8-byte cudaMemcpyAsync, empty kernel launch, copy-engine
# device-to-device bandwidth).  Two ranks, device buffers at both ends; on a single GPU they
# share it through MPS, which this script starts (and stops) when it is not running.
#
# Usage: contrib/bench/run-cuda-aware-bench.sh [--out DIR] [--iters N] [--max-bytes N]
#   NVSHMEM_HOME=DIR    NVSHMEM install (default: the nvidia.nvshmem Python package, if any)
#   --iters N           repetitions of each row (fewer where a row would pass 0.5 s); default 1000
#   --max-bytes N       largest bandwidth size, default 67108864 (64 MiB)
# Builds what it needs: make in the build tree (gpu_window_bench, cuda_floor_bench) and nvcc
# for nvshmem_host_bench.  Writes DIR/results.csv (component,measure,size,value,unit) and
# DIR/ratios.md (gpuic / NVSHMEM and gpuic / floor for each comparable row), also printed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
out="$top/bench-results/cuda-aware-$(date +%Y%m%d-%H%M%S)"
iters=1000
max_bytes=$((64 << 20))
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=$2; shift ;;
        --iters) iters=$2; shift ;;
        --max-bytes) max_bytes=$2; shift ;;
        *) echo "usage: $0 [--out DIR] [--iters N] [--max-bytes N]" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
csv="$out/results.csv"
echo "component,measure,size,value,unit" >"$csv"
args=(--iters "$iters" --max-bytes "$max_bytes" --csv "$csv")

echo "== building"
make -C "$build/contrib/bench" gpu_window_bench cuda_floor_bench >"$out/build.log" 2>&1 ||
    { echo "build failed: see $out/build.log"; tail -20 "$out/build.log"; exit 1; }

. "$top/contrib/bench/mpirun-env.sh"

for flavor in allocate create; do
    echo "== gpuic, host MPI calls on a GPU window (MPI_Win_$flavor), device buffers (D D)"
    "${mpirun[@]}" --mca osc gpuic "$build/contrib/bench/gpu_window_bench" --origin cuda \
        --flavor "$flavor" --label "gpuic_$flavor" "${args[@]}" ||
        echo "gpu_window_bench ($flavor) failed (exit $?)"
done

echo "== floors: CUDA runtime alone"
"$build/contrib/bench/cuda_floor_bench" "${args[@]}" || echo "cuda_floor_bench failed (exit $?)"

nv=${NVSHMEM_HOME:-}
if [ -z "$nv" ]; then
    nv=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
fi
if [ -n "$nv" ] && [ -f "$nv/include/nvshmem.h" ]; then
    echo "== NVSHMEM host API ($nv)"
    # the wheel ships libnvshmem_host.so.N only: give the linker the unversioned name
    so=$(ls "$nv"/lib/libnvshmem_host.so.* 2>/dev/null | head -1)
    [ -e "$nv/lib/libnvshmem_host.so" ] || [ -z "$so" ] || ln -sf "$so" "$out/libnvshmem_host.so"
    nvbuild() {
        nvcc -arch=sm_90 -O2 -rdc=true -DOMPI_SKIP_MPICXX -I"$nv/include" $(mpicc --showme:compile) \
            "$@" "$top/contrib/bench/nvshmem_host_bench.cu" -o "$out/nvshmem_host_bench" -L"$out" \
            -L"$nv/lib" -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link) \
            -Xlinker -rpath -Xlinker "$nv/lib" >>"$out/nvshmem_build.log" 2>&1
    }
    { nvbuild || { echo "retrying without the host-called atomics" >>"$out/nvshmem_build.log";
                   nvbuild -DNVSHMEM_HOST_BENCH_NO_ATOMICS; }; }
    nvrun=(env NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_DISABLE_NVLS=1
           LD_LIBRARY_PATH="$nv/lib:${LD_LIBRARY_PATH:-}"
           "${mpirun[@]}" -x NVSHMEM_REMOTE_TRANSPORT -x NVSHMEM_DISABLE_NVLS -x LD_LIBRARY_PATH)
    if [ -x "$out/nvshmem_host_bench" ]; then
        "${nvrun[@]}" "$out/nvshmem_host_bench" "${args[@]}" ||
            echo "nvshmem_host_bench failed (exit $?)"
        # the atomics alone: an install that aborts on them loses only their rows
        "${nvrun[@]}" "$out/nvshmem_host_bench" --atomics "${args[@]}" >"$out/nvshmem_atomics.log" 2>&1
        rc=$?
        if [ $rc -ne 0 ]; then
            grep -q '^nvshmem_host,fop_flush,' "$csv" ||
                echo "nvshmem_host,fop_flush,8,NA,host-called atomics failed at run time (exit $rc)" >>"$csv"
            grep -q '^nvshmem_host,cas_flush,' "$csv" ||
                echo "nvshmem_host,cas_flush,8,NA,host-called atomics failed at run time (exit $rc)" >>"$csv"
        fi
        cat "$out/nvshmem_atomics.log"
    else
        echo "NVSHMEM host bench did not build (see $out/nvshmem_build.log)"; tail -5 "$out/nvshmem_build.log"
    fi
else
    echo "== NVSHMEM not found (set NVSHMEM_HOME): its column stays empty"
fi
"$top/contrib/mps.sh" stop

echo "== ratios"
python3 "$top/contrib/bench/cuda_aware_report.py" "$csv" | tee "$out/ratios.md"
echo "results in $out"
