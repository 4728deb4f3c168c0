#!/bin/bash
# A rank killed (SIGKILL) inside an epoch, or before a fence: the survivors' waits fail with
# MPI_ERR_OTHER after osc_gpuic_timeout (3 s here) instead of hanging.  Open MPI 4.1's launcher
# aborts the whole job when a rank dies; --enable-recovery keeps the survivors running so they
# can report.  The verdict comes from the survivors' lines (test_peer_death.c), not from
# mpirun's exit status.
prog="$GPUIC_TEST_BUILD/test/mpi/test_peer_death"
[ -x "$prog" ] || { echo "not built: $prog"; exit 1; }
start=$(date +%s)
out=$(timeout -k 5 200 $GPUIC_TEST_MPIRUN --enable-recovery -x OMPI_MCA_osc_gpuic_timeout=3 \
      -np 3 "$prog" 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
echo "$out"
echo "peer_death: mpirun exit $rc after ${took} s"
[ $rc -eq 124 ] || [ $rc -eq 137 ] && { echo "FAIL: the job hung"; exit 1; }
pass=$(echo "$out" | grep -c '^peer_death: rank [01] .*: PASS$')
echo "$out" | grep -q '^peer_death: rank .*: FAIL$' && { echo "FAIL: a survivor failed"; exit 1; }
# rank 0 reports MPI_Win_wait, its lock and the fence, rank 1 its lock and the fence
[ "$pass" -eq 5 ] || { echo "FAIL: $pass of 5 survivor verdicts"; exit 1; }
echo "$out" | grep -q "rank 2 did not signal within" || { echo "FAIL: no timeout log line"; exit 1; }
echo "peer_death: PASS"
