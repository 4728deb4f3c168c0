#!/bin/bash
# GPU windows across nodes, side by side in one command on one machine: two ranks on two
# emulated nodes (osc_gpuic_emulate_nodes=1, every byte through UCX), same UCX build and
# UCX_TLS for every column:
#   - gpuic's device API to the other node's GPU window (device_bench, label "remote": the
#     proxy path, executed with UCX) and the GPU -> CPU -> GPU floor measured in that run;
#   - host MPI calls on the other node's GPU window (gpu_window_bench, device buffers, both
#     window flavors, labels "remote_allocate" / "remote_create");
#   - raw UCX between the two processes' device buffers (ucx_floor, label "ucx": ucp_put_nbx +
#     ucp_ep_flush_nbx, ucp_get_nbx, put bandwidth);
#   - NVSHMEM over its UCX remote transport (NVSHMEM_REMOTE_TRANSPORT=ucx, NVSHMEM_DISABLE_P2P=1,
#     label "nvshmem_ucx"): puts, gets, quiet, message rate and bandwidth; its atomics and
#     signals abort on that transport without GDRCopy, so those rows have no NVSHMEM figure.
#
# With --hosts A,B the two ranks run on two real nodes instead (one each, no emulation, no MPS;
# the build tree at the same path on both, e.g. a shared file system): the same columns over
# the site's network, which is how GPUDirect RDMA and a real fabric are measured.
#
# Usage: contrib/bench/run-remote-bench.sh [--out DIR] [--iters N] [--max-bytes N] [--hosts A,B]
#   UCX_HOME=DIR       a CUDA-enabled UCX (DIR/lib goes first on LD_LIBRARY_PATH for every rank;
#                      default: whichever libucp the loader finds)
#   UCX_TLS            emulated nodes: default tcp,cuda_copy,self (a network transport between
#                      the two nodes); --hosts: UCX's own choice unless set (e.g.
#                      rc,cuda_copy,gdr_copy)
#   NVSHMEM_HOME=DIR   NVSHMEM install (default: the nvidia.nvshmem Python package, if any)
#   UCX_RMA_PPLN_ENABLE  passed to every column; unset, y where UCX_HOME's UCX is 1.22 or
#                      later, as gpuic's own UCX context does (README, "GPU windows across
#                      nodes"), so that raw UCX, NVSHMEM and gpuic move GPU memory the same way
# Writes DIR/results.csv (component,measure,size,value,unit) and DIR/ratios.md (also printed):
# gpuic beside NVSHMEM-over-UCX and raw UCX for each comparable row, with the issue's targets.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
out="$top/bench-results/remote-$(date +%Y%m%d-%H%M%S)"
iters=2000
max_bytes=$((16 << 20))
hosts=
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=$2; shift ;;
        --iters) iters=$2; shift ;;
        --max-bytes) max_bytes=$2; shift ;;
        --hosts) hosts=$2; shift ;;
        *) echo "usage: $0 [--out DIR] [--iters N] [--max-bytes N] [--hosts A,B]" >&2; exit 2 ;;
    esac
    shift
done
case $hosts in
    "" | *,*) ;;
    *) echo "--hosts takes two host names, A,B" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
csv="$out/results.csv"
echo "component,measure,size,value,unit" >"$csv"

echo "== building"
make -C "$build/contrib/bench" ucx_floor gpu_window_bench >"$out/build.log" 2>&1 ||
    { echo "build failed: see $out/build.log"; tail -20 "$out/build.log"; exit 1; }

. "$top/contrib/bench/mpirun-env.sh"
if [ -n "$hosts" ]; then
    # one rank on each real node, each with its own GPU: no MPS, no emulation
    "$top/contrib/mps.sh" stop
    unset CUDA_MPS_PIPE_DIRECTORY
    mpirun=(mpirun -np 2 --host "$hosts" --bind-to none)
    emul=(--mca osc gpuic)
    where="Two ranks on two nodes ($hosts)"
else
    export UCX_TLS=${UCX_TLS:-tcp,cuda_copy,self}
    emul=(--mca osc gpuic --mca osc_gpuic_emulate_nodes 1)
    where="Two ranks on two emulated nodes"
fi
if [ -n "${UCX_HOME:-}" ]; then
    export LD_LIBRARY_PATH="$UCX_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
ucx_version=$( { [ -n "${UCX_HOME:-}" ] && "$UCX_HOME/bin/ucx_info" -v; } 2>/dev/null | head -1)
# gpuic's UCX context turns UCX's RMA pipeline on from UCX 1.22 unless the environment says
# otherwise: the raw UCX and NVSHMEM columns get the same protocol
ucx_minor=$(echo "$ucx_version" | sed -n 's/.*version: 1\.\([0-9]*\).*/\1/p')
if [ -z "${UCX_RMA_PPLN_ENABLE:-}" ] && [ "${ucx_minor:-0}" -ge 22 ]; then
    export UCX_RMA_PPLN_ENABLE=y
fi
[ -n "${UCX_RMA_PPLN_ENABLE:-}" ] && mpirun+=(-x UCX_RMA_PPLN_ENABLE)
[ -n "${UCX_TLS:-}" ] && mpirun+=(-x UCX_TLS)
[ -n "${LD_LIBRARY_PATH:-}" ] && mpirun+=(-x LD_LIBRARY_PATH)
echo "UCX_TLS=${UCX_TLS:-UCX-default} UCX_RMA_PPLN_ENABLE=${UCX_RMA_PPLN_ENABLE:-UCX-default} ${ucx_version:+($ucx_version)}" | tee "$out/ucx.txt"
timed() { timeout 300 "$@"; }

echo "== raw UCX, device memory to device memory (ucx_floor)"
timed "${mpirun[@]}" "$build/contrib/bench/ucx_floor" --mem cuda --origin cuda --iters "$iters" \
    --max-bytes $((2 * max_bytes)) --csv "$csv" || echo "ucx_floor failed (exit $?)"

echo "== gpuic device API to the other node's GPU window (device_bench)"
timed "${mpirun[@]}" "${emul[@]}" "$build/contrib/bench/device_bench" --label remote --bw-spread \
    --iters "$iters" --max-bytes "$max_bytes" --csv "$csv" || echo "device_bench failed (exit $?)"

for flavor in allocate create; do
    echo "== gpuic host MPI calls on the other node's GPU window (MPI_Win_$flavor, D D)"
    timed "${mpirun[@]}" "${emul[@]}" "$build/contrib/bench/gpu_window_bench" --origin cuda \
        --flavor "$flavor" --label "remote_$flavor" --iters "$iters" --min-bw-bytes 8 \
        --max-bytes "$max_bytes" --csv "$csv" || echo "gpu_window_bench ($flavor) failed (exit $?)"
done

nv=${NVSHMEM_HOME:-}
if [ -z "$nv" ]; then
    nv=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
fi
if [ -n "$nv" ] && [ -f "$nv/include/nvshmem.h" ]; then
    echo "== NVSHMEM over its UCX remote transport ($nv)"
    so=$(ls "$nv"/lib/libnvshmem_host.so.* 2>/dev/null | head -1)
    [ -e "$nv/lib/libnvshmem_host.so" ] || [ -z "$so" ] || ln -sf "$so" "$out/libnvshmem_host.so"
    nvcc -arch=sm_90 -O2 -rdc=true -DOMPI_SKIP_MPICXX -DNVSHMEM_BENCH_NO_ATOMICS -I"$nv/include" \
        $(mpicc --showme:compile) "$top/contrib/bench/nvshmem_bench.cu" -o "$out/nvshmem_bench" \
        -L"$out" -L"$nv/lib" -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link) \
        -Xlinker -rpath -Xlinker "$nv/lib" >"$out/nvshmem_build.log" 2>&1 &&
    NVSHMEM_REMOTE_TRANSPORT=${NVSHMEM_REMOTE_TRANSPORT:-ucx} NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_NVLS=1 \
        LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$nv/lib" \
        timed "${mpirun[@]}" -x NVSHMEM_REMOTE_TRANSPORT -x NVSHMEM_DISABLE_P2P \
        -x NVSHMEM_DISABLE_NVLS -x LD_LIBRARY_PATH "$out/nvshmem_bench" --label nvshmem_ucx \
        --no-signal --rate-per 8 --iters "$iters" --max-bytes "$max_bytes" --csv "$csv" ||
        { echo "NVSHMEM peer failed (see $out/nvshmem_build.log)"; tail -5 "$out/nvshmem_build.log"; }
else
    echo "== NVSHMEM not found (set NVSHMEM_HOME): its column stays empty"
fi
"$top/contrib/mps.sh" stop

echo "== ratios"
awk -F, -v tls="${UCX_TLS:-UCX-default}" -v where="$where" '
    NR > 1 && $4 != "NA" { v[$1 "," $2 "," $3] = $4 }
    function cell(x) { return x == "" ? "" : sprintf("%.3f", x) }
    function ratio(a, b) { return a == "" || b == "" || b == 0 ? "" : sprintf("%.2f", a / b) }
    function lat(name, meas, g, nvm, um) {
        gv = v[g "," meas ",8"]; n = v["nvshmem_ucx," nvm ",8"]; u = v["ucx," um ",8"]
        if (gv == "") return
        printf "| %s | %s | %s | %s | %s | %s |\n", name, cell(gv), cell(n), cell(u),
               ratio(gv, n), u == "" ? "" : sprintf("%+.2f", gv - u)
    }
    function bw(name, meas, g, size) {
        gv = v[g "," meas "," size]; n = v["nvshmem_ucx,put_bw," size]; u = v["ucx,put_bw," size]
        if (gv == "") return
        printf "| %s | %d | %s | %s | %s | %s | %s |\n", name, size, cell(gv), cell(n),
               cell(u), ratio(gv, n), ratio(gv, u)
    }
    END {
        printf "%s, UCX_TLS=%s.\n\n", where, tls
        print "Latency (us, 8 B): target gpuic <= NVSHMEM-UCX and <= raw UCX + 2 us\n"
        print "| row | gpuic | NVSHMEM-UCX | raw UCX | gpuic/NVSHMEM | gpuic - UCX |"
        print "|---|---:|---:|---:|---:|---:|"
        lat("device put + flush, by rank", "put_flush", "remote", "put_flush", "put_flush")
        lat("device put + flush, resolved", "put_flush_resolved", "remote", "put_flush", "put_flush")
        lat("device get, by rank", "get", "remote", "get", "get")
        lat("device get, resolved", "get_resolved", "remote", "get", "get")
        lat("device put-with-signal ping-pong, one way", "pingpong_signal", "remote", "-", "put_flush")
        lat("device fetch-and-add", "fetch_add", "remote", "-", "-")
        lat("host MPI_Put + flush (allocate)", "put_flush", "remote_allocate", "-", "put_flush")
        lat("host MPI_Get + flush (allocate)", "get_flush", "remote_allocate", "-", "get")
        lat("host MPI_Put + flush (create)", "put_flush", "remote_create", "-", "put_flush")
        lat("host MPI_Fetch_and_op (allocate)", "fop_flush", "remote_allocate", "-", "-")
        lat("host MPI_Compare_and_swap (allocate)", "cas_flush", "remote_allocate", "-", "-")
        lat("host MPI_Accumulate 8 B (allocate)", "acc_flush", "remote_allocate", "-", "-")
        f = v["floor,gpu_cpu_gpu_rtt,8"]
        if (f != "") printf "\nGPU -> CPU -> GPU round trip floor: %.3f us\n", f
        print "\nMessage rate (M msg/s, 8 B puts, then a flush each)\n"
        print "| shape | gpuic | NVSHMEM-UCX | gpuic/NVSHMEM |"
        print "|---|---:|---:|---:|"
        split("1x32 8x256 132x256 132x1024", shapes, " ")
        for (i = 1; i <= 4; ++i) {
            g = v["remote,msg_rate_" shapes[i] ",8"]; n = v["nvshmem_ucx,msg_rate_" shapes[i] ",8"]
            if (g != "") printf "| %s | %s | %s | %s |\n", shapes[i], cell(g), cell(n), ratio(g, n)
        }
        print "\nPut bandwidth (GB/s): targets device >= 0.8x raw UCX at 1 MiB and above, host MPI_Put >= 0.8x raw UCX\n"
        print "| row | size | gpuic | NVSHMEM-UCX | raw UCX | gpuic/NVSHMEM | gpuic/UCX |"
        print "|---|---:|---:|---:|---:|---:|---:|"
        for (s = 8; s <= 67108864; s *= 4) bw("device, 132 blocks", "put_bw", "remote", s)
        for (s = 8; s <= 67108864; s *= 2) bw("host MPI_Put (allocate)", "put_bw", "remote_allocate", s)
        bw("device, one block", "put_bw_1block", "remote", 8388608)
    }' "$csv" | tee "$out/ratios.md"
echo "results in $out"
