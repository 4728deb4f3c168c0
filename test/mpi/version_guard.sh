#!/bin/bash
# The component refuses to open, with one clear line, under an Open MPI version other than the
# one it was built for; window creation then finds no osc component.  The other version is
# made by preloading a library whose PMPI_Get_library_version reports 9.9.9.
fake="$GPUIC_TEST_BUILD/test/mpi/.libs/libfake_library_version.so"
[ -f "$fake" ] || { echo "FAIL: $fake not built"; exit 1; }
# A sanitizer runtime insists on coming first in the library list, before a preloaded one;
# the guard is the same in every build, and the plain pass checks it.
if ldd "$GPUIC_TEST_BUILD/stage/lib/openmpi/mca_osc_gpuic.so" 2>/dev/null | grep -qE 'lib(a|t|ub)san'; then
    echo "sanitizer build: checked in the plain pass"; exit 77
fi
out=$($GPUIC_TEST_MPIRUN -x LD_PRELOAD="$fake" -np 1 "$GPUIC_TEST_BUILD/test/mpi/test_mpix" 2>&1)
rc=$?
echo "$out"
echo "$out" | grep -q "osc/gpuic: built for Open MPI .* but running under 9.9.9" || {
    echo "FAIL: no refusal line"; exit 1; }
[ $rc -ne 0 ] || { echo "FAIL: the program succeeded without a component"; exit 1; }
# and without the override the same program passes
$GPUIC_TEST_MPIRUN -np 1 "$GPUIC_TEST_BUILD/test/mpi/test_mpix" >/dev/null 2>&1 || {
    echo "FAIL: the program fails under the right version"; exit 1; }
echo "version_guard: PASS"
