#!/bin/bash
# test_petsc_sf (PETSc's star forests on MPI windows) at $GPUIC_TEST_NP ranks, for each window
# flavor and synchronization PETSc's window backend offers (create and shared windows; fence,
# lock and active-target synchronization).  Skipped where configure did not build the program.
prog="$GPUIC_TEST_BUILD/test/mpi/test_petsc_sf"
[ -x "$prog" ] || { echo "skip: test_petsc_sf not built (install libpetsc-real3.18-dev and reconfigure)"; exit 77; }
fail=0
for flavor in create shared; do
    for sync in fence lock active; do
        out=$($GPUIC_TEST_MPIRUN --mca osc_gpuic_verbose 3 -np "$GPUIC_TEST_NP" "$prog" \
              -sf_type window -sf_window_flavor $flavor -sf_window_sync $sync 2>&1)
        rc=$?
        if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^test_petsc_sf: PASS"; then
            echo "$out" | tail -20
            echo "FAIL: $flavor windows, $sync synchronization (exit $rc)"
            fail=1
            continue
        fi
        # PETSc keeps its windows to itself: gpuic's line per created window shows who served
        echo "$out" | grep -q "info: rank 0: window [0-9]* created" || {
            echo "FAIL: $flavor/$sync: no window served by gpuic"; fail=1; continue; }
        echo "$flavor windows, $sync synchronization: PASS"
    done
done
[ $fail -eq 0 ] && echo "test_petsc_sf: PASS"
exit $fail
