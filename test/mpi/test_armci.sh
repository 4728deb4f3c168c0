#!/bin/bash
# test_armci (ARMCI-MPI on gpuic windows) at $GPUIC_TEST_NP ranks.  Skipped where configure
# found no ARMCI-MPI (libarmci-mpi-dev).  ARMCI_* settings from the testlist line select the
# library's RMA paths (window allocation, strided and I/O-vector methods, atomicity).  ARMCI
# keeps its windows to itself, so gpuic's one line per created window shows who served them.
prog="$GPUIC_TEST_BUILD/test/mpi/test_armci"
[ -x "$prog" ] || { echo "skip: test_armci not built (install libarmci-mpi-dev and reconfigure)"; exit 77; }
fwd=()
for v in $(env | sed -n 's/^\(ARMCI_[A-Z_]*\)=.*/\1/p'); do fwd+=(-x "$v"); done
out=$($GPUIC_TEST_MPIRUN --mca osc_gpuic_verbose 3 "${fwd[@]}" -np "$GPUIC_TEST_NP" "$prog" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: test_armci exited with $rc"; exit 1; }
echo "$out" | grep -q "^test_armci: PASS" || { echo "FAIL: no PASS line"; exit 1; }
# ARMCI_Malloc was called 4 times and ARMCI_Create_mutexes once, collectively
n=$(echo "$out" | grep -c "info: rank 0: window [0-9]* created")
[ "$n" -ge 5 ] || { echo "FAIL: gpuic served $n windows on rank 0, expected at least 5"; exit 1; }
echo "test_armci.sh: PASS ($n windows on rank 0 served by gpuic)"
