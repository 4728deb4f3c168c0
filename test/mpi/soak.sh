#!/bin/bash
# A short soak (test_soak: mixed random RMA over every window flavor and sync mode, every
# result checked, RSS sampled) at $GPUIC_TEST_NP ranks: 20 s with direct loads and stores to
# same-node peers, then 15 s with osc_gpuic_direct=0 (UCX only).  contrib/soak.sh is the long run.
prog="$GPUIC_TEST_BUILD/test/mpi/test_soak"
[ -x "$prog" ] || { echo "not built: $prog"; exit 1; }
np=${GPUIC_TEST_NP:-8}
run() { # seconds [mpirun args]
    local seconds=$1
    shift
    $GPUIC_TEST_MPIRUN "$@" -np "$np" "$prog" --seconds "$seconds" --rss-interval 5 ||
        { echo "FAIL: test_soak --seconds $seconds $* exited with $?"; exit 1; }
}
run 20
run 15 -x OMPI_MCA_osc_gpuic_direct=0
echo "soak: PASS"
