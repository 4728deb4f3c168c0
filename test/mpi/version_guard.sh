#!/bin/bash
# The component refuses to open, with one clear line, under an Open MPI version other than the
# one it was built for; window creation then finds no osc component.
out=$(GPUIC_TEST_OMPI_VERSION=9.9.9 $GPUIC_TEST_MPIRUN -x GPUIC_TEST_OMPI_VERSION -np 1 \
      "$GPUIC_TEST_BUILD/test/mpi/test_mpix" 2>&1)
rc=$?
echo "$out"
echo "$out" | grep -q "osc/gpuic: built for Open MPI .* but running under 9.9.9" || {
    echo "FAIL: no refusal line"; exit 1; }
[ $rc -ne 0 ] || { echo "FAIL: the program succeeded without a component"; exit 1; }
# and without the override the same program passes
$GPUIC_TEST_MPIRUN -np 1 "$GPUIC_TEST_BUILD/test/mpi/test_mpix" >/dev/null 2>&1 || {
    echo "FAIL: the program fails under the right version"; exit 1; }
echo "version_guard: PASS"
