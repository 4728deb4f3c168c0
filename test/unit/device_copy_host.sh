#!/bin/bash
# The device API's copy routine, every size 0..300 at every alignment and large skewed sizes,
# checked byte by byte on the host (test/device/test_device_copy_host.cu; no GPU needed).
# Skipped (77) in a build without nvcc.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
prog="$build/test/device/test_device_copy_host"
[ -x "$prog" ] || { echo "device_copy_host: not built (no nvcc): SKIP"; exit 77; }
exec "$prog"
