#!/bin/bash
# A target killed (SIGKILL) while a kernel puts to it through the proxy and UCX (2 emulated
# nodes): the kernel's MPIX_Win_flush_device and the host's next MPI_Win_flush return an error
# class instead of hanging or succeeding, within osc_gpuic_timeout (3 s here).  --enable-recovery keeps the
# survivor running after the launcher sees the death; the verdict comes from its lines
# (test_device_peer_death.cu), not from mpirun's exit status.
prog="$GPUIC_TEST_BUILD/test/device/test_device_peer_death"
[ -x "$prog" ] || { echo "FAIL: not built: $prog"; exit 1; }
start=$(date +%s)
out=$(timeout -k 5 120 $GPUIC_TEST_MPIRUN --enable-recovery -x OMPI_MCA_osc_gpuic_timeout=3 \
      -x OMPI_MCA_osc_gpuic_emulate_nodes=1 -x UCX_TLS=${UCX_TLS:-tcp,cuda_copy,self} \
      -np 2 "$prog" 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
echo "$out"
echo "peer_death_device: mpirun exit $rc after ${took} s"
echo "$out" | grep -q ": no CUDA device: SKIP" && exit 77
[ $rc -eq 124 ] || [ $rc -eq 137 ] && { echo "FAIL: the job hung"; exit 1; }
echo "$out" | grep -q '^peer_death_device: rank 0 .*: FAIL$' && { echo "FAIL: the survivor failed"; exit 1; }
pass=$(echo "$out" | grep -c '^peer_death_device: rank 0 .*: PASS$')
[ "$pass" -eq 2 ] || { echo "FAIL: $pass of 2 survivor verdicts"; exit 1; }
echo "peer_death_device: PASS"
