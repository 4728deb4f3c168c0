#!/bin/bash
# OSU micro-benchmarks' one-sided tests with CUDA buffers (-d cuda) under gpuic: builds OSU
# against the system Open MPI (mpicc) and runs each one-sided latency/bandwidth/atomic test
# for the buffer pairs D D, D H and H D, both window flavors (-w create, -w allocate) and each
# synchronization given (-s), two ranks on one GPU under MPS.  One log per run, a pass/fail
# line per run and a summary.
#
# Usage: contrib/bench/run-osu-cuda.sh --src OSU.tar.gz [--out DIR] [--max-bytes N] [--iters N]
#                                      [--syncs "lock_all flush fence pscw"] [--pairs "DD DH HD"]
#                                      [--timeout S]
#   --src        OSU micro-benchmarks source tarball (6.x or 7.x: c/mpi/one-sided layout)
#   --max-bytes  largest message (-m), default 4194304
#   --iters      iterations (-i) of each size; warm-up (-x) is a tenth of it; default 20
#   --timeout    seconds one run may take before it counts as failed (a hang), default 60
# A run passes when mpirun exits 0 and the benchmark printed a result row for its largest size.
# Exit status: 0 when every run passed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
src=
out="$top/bench-results/osu-$(date +%Y%m%d-%H%M%S)"
max_bytes=4194304
iters=20
syncs="lock_all flush fence pscw"
pairs="DD DH HD"
timeout_s=60
while [ $# -gt 0 ]; do
    case $1 in
        --src) src=$2; shift ;;
        --out) out=$2; shift ;;
        --max-bytes) max_bytes=$2; shift ;;
        --iters) iters=$2; shift ;;
        --syncs) syncs=$2; shift ;;
        --pairs) pairs=$2; shift ;;
        --timeout) timeout_s=$2; shift ;;
        *) sed -n '2,/^set -u/p' "$0" | sed '$d' >&2; exit 2 ;;
    esac
    shift
done
[ -n "$src" ] && [ -f "$src" ] || { echo "run-osu-cuda.sh: --src OSU.tar.gz is required" >&2; exit 2; }
src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}

echo "== building OSU from $src"
osu_build="$out/osu-build"
rm -rf "$osu_build"
mkdir -p "$osu_build"
tar -xzf "$src" -C "$osu_build" --strip-components=1 || { echo "cannot unpack $src"; exit 1; }
util="$osu_build/c/util/osu_util_mpi.c"
# CUDA 13 gives cudaMemPrefetchAsync a struct cudaMemLocation and a flags argument; OSU 6.x/7.x
# call the older form (device id, stream).  Rewrite that call so it compiles with either.
if grep -q 'cudaMemPrefetchAsync(buf, length, devid, um_stream)' "$util"; then
    sed -i 's|CUDA_CHECK(cudaMemPrefetchAsync(buf, length, devid, um_stream));|\
#if CUDART_VERSION >= 13000\
    {\
        struct cudaMemLocation loc = {cudaMemLocationTypeDevice, devid};\
        CUDA_CHECK(cudaMemPrefetchAsync(buf, length, loc, 0, um_stream));\
    }\
#else\
    CUDA_CHECK(cudaMemPrefetchAsync(buf, length, devid, um_stream));\
#endif|' "$util"
    echo "patched cudaMemPrefetchAsync in c/util/osu_util_mpi.c for CUDA >= 13" | tee "$out/patch.txt"
fi
# link against the driver stub where there is one (the loader then finds the driver's own
# libcuda.so.1): a machine may have only the versioned driver library
stubs=
[ -f "$cuda/lib64/stubs/libcuda.so" ] && stubs="LDFLAGS=-L$cuda/lib64/stubs"
# a tarball from git carries no timestamps that make automake think its outputs stale,
# but a configure without its generated files needs autoreconf (and libtool)
(cd "$osu_build" && { [ -x configure ] || autoreconf -fi; } &&
    ./configure CC=mpicc CXX=mpicxx --enable-cuda=basic --with-cuda="$cuda" $stubs \
        ${OSU_CONFIGURE_EXTRA:-} &&
    make -j"$(nproc)" -C c/mpi/one-sided) \
    >"$out/osu_build.log" 2>&1 || { echo "OSU build failed: see $out/osu_build.log"; tail -20 "$out/osu_build.log"; exit 1; }
bindir="$osu_build/c/mpi/one-sided"

. "$top/contrib/bench/mpirun-env.sh"
mpirun+=(--mca osc gpuic)

summary="$out/summary.txt"
: >"$summary"
pass=0
fail=0
skip=0
warm=$((iters / 10))
for b in osu_put_latency osu_get_latency osu_put_bw osu_get_bw osu_acc_latency osu_fop_latency \
         osu_cas_latency osu_get_acc_latency; do
    if [ ! -x "$bindir/$b" ]; then
        echo "SKIP $b (not in this OSU version)" | tee -a "$summary"
        skip=$((skip + 1))
        continue
    fi
    bpairs=$pairs
    note=
    # a test whose source never allocates through OSU's accelerator helpers keeps its buffers
    # in host memory whatever -d says: one pair is enough, and its log says so
    if ! grep -q 'allocate_memory_one_sided\|allocate_atomic_memory' "$bindir/$b.c"; then
        bpairs=${pairs%% *}
        note=" (this OSU version keeps $b's buffers in host memory)"
    fi
    sizes=(-m "$max_bytes")
    case $b in osu_fop_latency | osu_cas_latency) sizes=() ;; esac
    for p in $bpairs; do
        for w in create allocate; do
            # OSU's -w allocate with a host buffer on one side and device memory on the other
            # (allocate_memory_one_sided) makes the host rank call MPI_Win_create on a base it
            # never allocated (NULL, size > 0): an erroneous program, refused with MPI_ERR_WIN
            if [ "$w" = allocate ] && [ "${p:0:1}" != "${p:1:1}" ]; then
                echo "SKIP $b -d cuda ${p:0:1} ${p:1:1} -w allocate: OSU passes the host rank an unallocated window base" |
                    tee -a "$summary"
                skip=$((skip + 1))
                continue
            fi
            for s in $syncs; do
                name="$b.${p}.$w.$s"
                log="$out/logs/$name.log"
                # OSU stops reading options at the first operand: the buffer pair goes last
                timeout -k 10 "$timeout_s" "${mpirun[@]}" "$bindir/$b" -d cuda -w "$w" -s "$s" \
                    "${sizes[@]}" -i "$iters" -x "$warm" "${p:0:1}" "${p:1:1}" >"$log" 2>&1
                rc=$?
                # the last line of a complete run is the row of its largest size (or the
                # single row of fop/cas): a number first, then a figure
                last=$(grep -E '^[0-9]+[[:space:]]+[0-9.]+' "$log" | tail -1)
                if [ $rc -eq 0 ] && [ -n "$last" ] &&
                   { [ ${#sizes[@]} -eq 0 ] || [ "${last%%[[:space:]]*}" = "$max_bytes" ]; }; then
                    echo "PASS $b -d cuda ${p:0:1} ${p:1:1} -w $w -s $s: $last$note" | tee -a "$summary"
                    pass=$((pass + 1))
                else
                    why="exit $rc"
                    [ $rc -eq 124 ] && why="timed out after ${timeout_s}s"
                    echo "FAIL $b -d cuda ${p:0:1} ${p:1:1} -w $w -s $s: $why (log $log)$note" |
                        tee -a "$summary"
                    # the benchmark's own first lines of complaint, not mpirun's banner
                    grep -v -e '^---' -e '^ *$' -e 'mpirun\|Primary job\|Per user-direction' \
                        -e 'Process name\|Exit code\|non-zero\|job has been\|^#' "$log" |
                        head -3 | sed 's/^/    /' | tee -a "$summary"
                    fail=$((fail + 1))
                fi
            done
        done
    done
done
"$top/contrib/mps.sh" stop
echo "== summary: $pass passed, $fail failed, $skip skipped (logs in $out/logs)" | tee -a "$summary"
[ $fail -eq 0 ]
