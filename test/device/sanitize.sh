#!/bin/bash
# The device tests under compute-sanitizer, two ranks: test_device_rma under memcheck, racecheck
# and synccheck, test_device_bad_input under memcheck (no call with bad input may touch memory
# it was refused).  Passes when every rank's every tool reports no error (racecheck: no hazard).
# Runs without MPS (the sanitizer does not attach to MPS clients); the cross-process waits are
# then slower.
set -u
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
[ -n "$cs" ] || { echo "compute-sanitizer not found"; exit 77; }
unset CUDA_MPS_PIPE_DIRECTORY
rc=0
sanitize() { # program tool
    local prog=$1 tool=$2 out clean
    out=$($GPUIC_TEST_MPIRUN -np 2 "$cs" --tool "$tool" --print-limit 20 \
          "$GPUIC_TEST_BUILD/test/device/$prog" 2>&1)
    echo "$out" | grep -E "ERROR SUMMARY|$prog: (PASS|FAIL)"
    clean=$(echo "$out" | grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors")
    if [ "$clean" -ne 2 ] || ! echo "$out" | grep -q "$prog: PASS"; then
        echo "$out" | grep -B2 -A12 "^========= [A-Z]" | head -60
        echo "$prog $tool: FAIL"
        rc=1
    else
        echo "$prog $tool: clean"
    fi
}
for tool in memcheck racecheck synccheck; do
    sanitize test_device_rma "$tool"
done
sanitize test_device_bad_input memcheck
exit $rc
