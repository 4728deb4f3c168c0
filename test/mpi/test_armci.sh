#!/bin/bash
# test_armci (ARMCI-MPI on gpuic windows) at $GPUIC_TEST_NP ranks, or another program on
# ARMCI-MPI named by RMA_USER_PROG (test_ga.sh), which must see at least RMA_USER_WINDOWS
# windows created on rank 0.  Skipped where configure did not build the program.  ARMCI_* settings from the testlist line select the
# library's RMA paths (window allocation, strided and I/O-vector methods, atomicity).  ARMCI
# keeps its windows to itself, so gpuic's one line per created window shows who served them.
name=${RMA_USER_PROG:-test_armci}
prog="$GPUIC_TEST_BUILD/test/mpi/$name"
[ -x "$prog" ] || { echo "skip: $name not built (install its -dev package and reconfigure)"; exit 77; }
fwd=()
for v in $(env | sed -n 's/^\(ARMCI_[A-Z_]*\)=.*/\1/p'); do fwd+=(-x "$v"); done
out=$($GPUIC_TEST_MPIRUN --mca osc_gpuic_verbose 3 "${fwd[@]}" -np "$GPUIC_TEST_NP" "$prog" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: $name exited with $rc"; exit 1; }
echo "$out" | grep -q "^$name: PASS" || { echo "FAIL: no PASS line"; exit 1; }
# test_armci: ARMCI_Malloc 4 times and ARMCI_Create_mutexes once, collectively
want=${RMA_USER_WINDOWS:-5}
n=$(echo "$out" | grep -c "info: rank 0: window [0-9]* created")
[ "$n" -ge "$want" ] || { echo "FAIL: gpuic served $n windows on rank 0, expected at least $want"; exit 1; }
echo "$name: PASS ($n windows on rank 0 served by gpuic)"
