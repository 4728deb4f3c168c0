#!/bin/bash
# Device benchmarks side by side in one command: gpuic's device API on GPU windows and
# NVSHMEM on the same GPU(s), with the raw floors (CUDA IPC store ping-pong, GPU->CPU->GPU
# round trip, cudaMemcpy) measured in gpuic's run.  Two ranks; on a single GPU they share it
# through MPS, which this script starts (and stops) when it is not running.
#
# Usage: contrib/bench/run-device-bench.sh [--out DIR] [--iters N]
#   NVSHMEM_HOME=DIR    NVSHMEM install (default: the nvidia.nvshmem Python package, if any)
# Also runs stream_bench (MPIX_*_enqueue) and its NVSHMEM peer (on-stream calls).
# Writes DIR/results.csv, DIR/ratios.md (gpuic / NVSHMEM, and gpuic / floor),
# DIR/stream_ratios.md (the stream-triggered calls' targets) and
# DIR/registers.txt (register cost of one MPIX_Put_device in a kernel).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
out="$top/bench-results/device-$(date +%Y%m%d-%H%M%S)"
iters=20000
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=$2; shift ;;
        --iters) iters=$2; shift ;;
        *) echo "usage: $0 [--out DIR] [--iters N]" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$out"
csv="$out/results.csv"
echo "component,measure,size,value,unit" >"$csv"

. "$top/contrib/bench/mpirun-env.sh"

echo "== gpuic device API (P2P path) and floors"
"${mpirun[@]}" --mca osc gpuic "$build/contrib/bench/device_bench" --iters "$iters" --csv "$csv"
echo "== gpuic device API, proxy path (host-memory window)"
"${mpirun[@]}" --mca osc gpuic "$build/contrib/bench/device_bench" --iters "$iters" --csv "$csv" \
    --host-window
echo "== gpuic device API, proxy path forced on the GPU window (osc_gpuic_device_proxy)"
"${mpirun[@]}" --mca osc gpuic --mca osc_gpuic_device_proxy 1 \
    "$build/contrib/bench/device_bench" --iters "$iters" --csv "$csv" --label proxy_gpuwin \
    --latency-only

echo "== gpuic stream-triggered calls (MPIX_*_enqueue) and the host-driven loop"
"${mpirun[@]}" --mca osc gpuic "$build/contrib/bench/stream_bench" --iters "$iters" --csv "$csv" ||
    echo "stream_bench failed or was skipped (exit $?)"

nv=${NVSHMEM_HOME:-}
if [ -z "$nv" ]; then
    nv=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
fi
if [ -n "$nv" ] && [ -f "$nv/include/nvshmem.h" ]; then
    echo "== NVSHMEM ($nv)"
    [ -e "$nv/lib/libnvshmem_host.so" ] || ln -sf "$(ls "$nv"/lib/libnvshmem_host.so.* | head -1)" "$out/libnvshmem_host.so"
    nvbuild() {
        nvcc -arch=sm_90 -O2 -rdc=true -DOMPI_SKIP_MPICXX -I"$nv/include" $(mpicc --showme:compile) \
            "$@" "$top/contrib/bench/nvshmem_bench.cu" -o "$out/nvshmem_bench" -L"$out" -L"$nv/lib" \
            -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link) \
            -Xlinker -rpath -Xlinker "$nv/lib" >>"$out/nvshmem_build.log" 2>&1
    }
    { nvbuild || { echo "retrying without the typed atomics" >>"$out/nvshmem_build.log";
                   nvbuild -DNVSHMEM_BENCH_NO_ATOMICS; }; } &&
    NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_DISABLE_NVLS=1 LD_LIBRARY_PATH="$nv/lib:${LD_LIBRARY_PATH:-}" \
        "${mpirun[@]}" -x NVSHMEM_REMOTE_TRANSPORT -x NVSHMEM_DISABLE_NVLS -x LD_LIBRARY_PATH \
        "$out/nvshmem_bench" --iters "$iters" --csv "$csv" ||
        { echo "NVSHMEM peer failed (see $out/nvshmem_build.log)"; tail -5 "$out/nvshmem_build.log"; }
    echo "== NVSHMEM on-stream calls"
    nvcc -arch=sm_90 -O2 -rdc=true -DOMPI_SKIP_MPICXX -I"$nv/include" $(mpicc --showme:compile) \
        "$top/contrib/bench/nvshmem_stream_bench.cu" -o "$out/nvshmem_stream_bench" -L"$out" \
        -L"$nv/lib" -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link) \
        -Xlinker -rpath -Xlinker "$nv/lib" >>"$out/nvshmem_build.log" 2>&1 &&
    NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_DISABLE_NVLS=1 LD_LIBRARY_PATH="$nv/lib:${LD_LIBRARY_PATH:-}" \
        "${mpirun[@]}" -x NVSHMEM_REMOTE_TRANSPORT -x NVSHMEM_DISABLE_NVLS -x LD_LIBRARY_PATH \
        "$out/nvshmem_stream_bench" --iters "$iters" --csv "$csv" ||
        { echo "NVSHMEM stream peer failed (see $out/nvshmem_build.log)"; tail -5 "$out/nvshmem_build.log"; }
else
    echo "== NVSHMEM not found: peer column left empty"
fi
"$top/contrib/mps.sh" stop

echo "== the parts of a device put through the proxy, alone (queue_floor, a study built on request)"
make -C "$build/contrib/bench" queue_floor >/dev/null 2>&1 &&
    "$build/contrib/bench/queue_floor" --iters "$iters" | tee "$out/queue_floor.txt" ||
    echo "queue_floor failed or was skipped (exit $?)"

echo "== register cost"
nvcc -arch=sm_90 -O2 -DOMPI_SKIP_MPICXX $(mpicc --showme:compile) -I"$top/ompi/include/gpuic_shared" \
    -I"$top/opal" -Xptxas -v -c "$top/contrib/bench/regcount.cu" -o /dev/null 2>&1 |
    awk '/Compiling entry/ {k=$0; sub(/.*entry function .?/, "", k); sub(/. for.*/, "", k)}
         /Used [0-9]+ registers/ {print k ": " $5 " registers"}' | tee "$out/registers.txt"

echo "== ratios"
awk -F, 'NR > 1 { key = $2 "," $3; v[$1 "," key] = $4; u[key] = $5
                  if (!(key in seen)) { seen[key] = 1; order[++n] = key }
                  if ($1 != "gpuic" && $1 != "nvshmem" && !(key in other)) other[key] = $1 }
    END {
        print "| measure | size | gpuic | NVSHMEM | gpuic/NVSHMEM | unit |"
        print "|---|---:|---:|---:|---:|---|"
        for (i = 1; i <= n; ++i) {
            k = order[i]; split(k, p, ",")
            g = v["gpuic," k]; nv = v["nvshmem," k]; f = v["floor," k]
            if (nv == "" && p[1] ~ /_resolved$/) { b = p[1]; sub(/_resolved$/, "", b); nv = v["nvshmem," b "," p[2]] }
            # rows gpuic has no figure for (floors, the host-driven loop, ratios): their source
            if (g == "" && (k in other)) { printf "| %s (%s) | %s | %s | | | %s |\n", p[1], other[k], p[2], v[other[k] "," k], u[k]; continue }
            r = (g != "" && nv != "" && nv > 0) ? sprintf("%.2f", g / nv) : "-"
            printf "| %s | %s | %s | %s | %s | %s |\n", p[1], p[2], g, nv, r, u[k]
        }
    }' "$csv" | tee "$out/ratios.md"
echo
echo "== proxy path against the GPU -> CPU -> GPU round trip"
awk -F, 'NR > 1 { v[$1 "," $2 "," $3] = $4; u[$2 "," $3] = $5
                  if ($1 ~ /^proxy/ && !(($1 "," $2 "," $3) in seen)) {
                      seen[$1 "," $2 "," $3] = 1; order[++n] = $1 "," $2 "," $3 } }
    END {
        f = v["floor,gpu_cpu_gpu_rtt,8"]
        print "| run | measure | size | value | P2P (gpuic) | value / GPU-CPU-GPU RTT (" f " us) | unit |"
        print "|---|---|---:|---:|---:|---:|---|"
        for (i = 1; i <= n; ++i) {
            split(order[i], p, ","); k = p[2] "," p[3]
            r = (u[k] == "us" && f > 0) ? sprintf("%.2f", v[order[i]] / f) : "-"
            printf "| %s | %s | %s | %s | %s | %s | %s |\n", p[1], p[2], p[3], v[order[i]], v["gpuic," k], r, u[k]
        }
    }' "$csv" | tee -a "$out/ratios.md"
echo "== stream-triggered targets (enqueued put+flush <= 0.5 x NVSHMEM on-stream put; graph epoch <= 0.25 x host loop)"
awk -F, 'NR > 1 { v[$1 "," $2] = $4 }
    function show(name, a, b, goal) {
        if (a == "" || b == "" || b <= 0) { printf "| %s | - | goal %s |\n", name, goal; return }
        printf "| %s | %.2f | goal %s |\n", name, a / b, goal
    }
    END {
        print "| ratio | value | |"
        print "|---|---:|---|"
        show("gpuic stream_put_flush / nvshmem stream_put", v["gpuic,stream_put_flush"], v["nvshmem,stream_put"], "<= 0.5")
        show("gpuic stream_put_flush / nvshmem stream_put_flush", v["gpuic,stream_put_flush"], v["nvshmem,stream_put_flush"], "<= 0.5")
        show("gpuic graph_epoch / host host_put_fence_epoch", v["gpuic,graph_epoch"], v["host,host_put_fence_epoch"], "<= 0.25")
        show("gpuic graph_epoch / host host_put_flush", v["gpuic,graph_epoch"], v["host,host_put_flush"], "<= 0.25")
        show("gpuic graph_epoch / nvshmem graph_epoch", v["gpuic,graph_epoch"], v["nvshmem,graph_epoch"], "report")
        show("gpuic stream_put_flush / floor cudaMemcpyAsync_8B", v["gpuic,stream_put_flush"], v["floor,cudaMemcpyAsync_8B"], "report")
    }' "$csv" | tee "$out/stream_ratios.md"
echo "results in $out"
