#!/bin/bash
# The dissection of the device proxy path on a GPU: contrib/gpuic-dissect --path proxy runs
# dissect_proxy for every operation and checks the structure of what it measured (every entry
# stamped at all eight stages by the GPU producer and the proxy, stamps in stage order within
# the calibration's uncertainty, a well-formed table), never its speed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null 2>&1 || { echo "dissect_proxy: no python3"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GPUIC_BUILD_DIR=${GPUIC_BUILD_DIR:-$top/_build}
python3 "$top/contrib/gpuic-dissect" --path proxy --op all --iters 200 --check --out "$out"
rc=$?
[ "$rc" -eq 3 ] && exit 77 # not built (no nvcc) or no GPU: said why above
[ "$rc" -eq 0 ] || { echo "dissect_proxy: FAIL (exit $rc)"; exit 1; }
# the program's target is reached through UCX (not mapped): from 8 KiB a put names the device
# buffer (zero copy, its fence before the entry is built), below that it is staged
python3 "$top/contrib/gpuic-dissect" --path proxy --op put --size 32768 --iters 50 --check ||
    { echo "dissect_proxy: FAIL (32 KiB zero-copy put)"; exit 1; }
python3 "$top/contrib/gpuic-dissect" --path proxy --op put --size 6144 --iters 50 --check ||
    { echo "dissect_proxy: FAIL (6 KiB put through staging)"; exit 1; }
echo "dissect_proxy: PASS"
