#!/bin/bash
# examples/device_put (a kernel's put + flush and put-with-signal into a GPU window, checked
# on the host by the program) must report "verified".
prog="$GPUIC_TEST_BUILD/examples/device_put"
np=${GPUIC_TEST_NP:-2}
[ -x "$prog" ] || { echo "FAIL: not built: $prog"; exit 1; }
out=$($GPUIC_TEST_MPIRUN -np "$np" "$prog" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: device_put exited with $rc"; exit 1; }
echo "$out" | grep -q "^device_put: $np ranks, .*: verified$" || { echo "FAIL: not verified"; exit 1; }
echo "example_device_put: PASS"
