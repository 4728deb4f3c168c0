#!/bin/bash
# The device tests under compute-sanitizer, two ranks; passes when every rank's every tool
# reports no error (racecheck: no hazard) and the test itself passes:
#  - test_device_rma on the P2P path (GPU window): memcheck, racecheck, synccheck;
#  - test_device_rma on the proxy path (host window, GPUIC_TEST_HOST_WINDOW=1): memcheck,
#    synccheck (the device queue: reservation, staging, markers, completion index);
#  - test_stream_rma: memcheck, synccheck (the enqueued calls' kernels);
#  - test_device_bad_input: memcheck (no call with bad input may touch memory it was refused).
# Runs without MPS (the sanitizer does not attach to MPS clients); the cross-process waits are
# then slower.  GPUIC_SANITIZE_ONLY=REGEX runs the matching "program tool [VAR=value]" lines only.
set -u
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
[ -n "$cs" ] || { echo "compute-sanitizer not found"; exit 77; }
unset CUDA_MPS_PIPE_DIRECTORY
rc=0
sanitize() { # program tool [VAR=value ...]
    local prog=$1 tool=$2 out clean
    shift 2
    if [ -n "${GPUIC_SANITIZE_ONLY:-}" ] && ! echo "$prog $tool $*" | grep -qE "$GPUIC_SANITIZE_ONLY"; then
        return
    fi
    # --report-api-errors no: a CUDA-enabled UCX probes the driver with calls that fail by
    # design (cuPointerGetAttribute on host memory, cuMemCreate where the fabric handle type
    # is not permitted), which the sanitizer would count as errors; gpuic checks the result
    # of each of its own CUDA calls, and the tools' subject here is device memory access
    out=$(env "$@" $GPUIC_TEST_MPIRUN -np 2 "$cs" --tool "$tool" --print-limit 20 \
          --report-api-errors no \
          "$GPUIC_TEST_BUILD/test/device/$prog" 2>&1)
    echo "$out" | grep -E "ERROR SUMMARY|$prog: (PASS|FAIL)"
    clean=$(echo "$out" | grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors")
    if [ "$clean" -ne 2 ] || ! echo "$out" | grep -q "$prog: PASS"; then
        echo "$out" | grep -B2 -A12 "^========= [A-Z]" | head -60
        echo "$prog $tool $*: FAIL"
        rc=1
    else
        echo "$prog $tool $*: clean"
    fi
}
for tool in memcheck racecheck synccheck; do
    sanitize test_device_rma "$tool"
done
for tool in memcheck synccheck; do
    sanitize test_device_rma "$tool" GPUIC_TEST_HOST_WINDOW=1
    sanitize test_stream_rma "$tool"
done
sanitize test_device_bad_input memcheck
exit $rc
