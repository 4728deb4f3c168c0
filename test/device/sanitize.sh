#!/bin/bash
# The device test under compute-sanitizer: memcheck, racecheck and synccheck, two ranks.
# Passes when every rank's every tool reports no error (racecheck: no hazard).  Runs without MPS
# (the sanitizer does not attach to MPS clients); the cross-process waits are then slower.
set -u
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
[ -n "$cs" ] || { echo "compute-sanitizer not found"; exit 77; }
unset CUDA_MPS_PIPE_DIRECTORY
rc=0
for tool in memcheck racecheck synccheck; do
    out=$($GPUIC_TEST_MPIRUN -np 2 "$cs" --tool $tool --print-limit 20 \
          "$GPUIC_TEST_BUILD/test/device/test_device_rma" 2>&1)
    echo "$out" | grep -E "ERROR SUMMARY|test_device_rma:"
    clean=$(echo "$out" | grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors")
    if [ "$clean" -ne 2 ] || ! echo "$out" | grep -q "test_device_rma: PASS"; then
        echo "$out" | grep -B2 -A12 "^========= [A-Z]" | head -60
        echo "$tool: FAIL"
        rc=1
    else
        echo "$tool: clean"
    fi
done
exit $rc
