#!/bin/bash
# Rank-to-GPU binding on this machine's GPUs (test_bind_device), at GPUIC_TEST_NP ranks:
#   1. gpuic picks (no CUDA call before the first GPU window): node-local rank modulo devices;
#   2. MPIX_Gpuic_bind_device: the same rule, answered by the call;
#   3. the program's own cudaSetDevice wins, even over osc_gpuic_device;
#   4. osc_gpuic_device names the last device: every rank on it;
#   5. with two or more GPUs, CUDA_VISIBLE_DEVICES=1,0: ordinal 0 is physical GPU 1, checked
#      by UUID against nvidia-smi.
# The program checks each rank's device itself; this script checks the UUIDs of scenario 5.
prog="$GPUIC_TEST_BUILD/test/device/test_bind_device"
np=${GPUIC_TEST_NP:-2}
[ -x "$prog" ] || { echo "FAIL: not built: $prog"; exit 1; }
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 1 ] || { echo "no GPU"; exit 77; }
fail=0

run() { # label mpirun-arguments...
    local label=$1 out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    echo "== $label"
    echo "$out"
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^test_bind_device: PASS"; then
        echo "FAIL: $label (exit $rc)"
        fail=1
    fi
    last=$out
}

# shellcheck disable=SC2086  # GPUIC_TEST_MPIRUN is a command line
run "gpuic picks" $GPUIC_TEST_MPIRUN -np "$np" -x GPUIC_TEST_BIND_MODE=auto "$prog"
run "MPIX_Gpuic_bind_device" $GPUIC_TEST_MPIRUN -np "$np" -x GPUIC_TEST_BIND_MODE=mpix "$prog"
run "program's cudaSetDevice over osc_gpuic_device=0" $GPUIC_TEST_MPIRUN -np "$np" \
    -x GPUIC_TEST_BIND_MODE=program -x OMPI_MCA_osc_gpuic_device=0 "$prog"
run "osc_gpuic_device=$((ngpu - 1))" $GPUIC_TEST_MPIRUN -np "$np" -x GPUIC_TEST_BIND_MODE=auto \
    -x OMPI_MCA_osc_gpuic_device=$((ngpu - 1)) "$prog"
if [ "$ngpu" -ge 2 ]; then
    # without MPS: its clients' device list is the daemon's
    mpirun_nomps=${GPUIC_TEST_MPIRUN/-x CUDA_MPS_PIPE_DIRECTORY/}
    run "CUDA_VISIBLE_DEVICES=1,0" env -u CUDA_MPS_PIPE_DIRECTORY $mpirun_nomps -np "$np" \
        -x GPUIC_TEST_BIND_MODE=auto -x CUDA_VISIBLE_DEVICES=1,0 "$prog"
    uuid0=$(echo "$last" | awk '/^bind: rank .* local 0 /{print $NF; exit}')
    uuid1=$(echo "$last" | awk '/^bind: rank .* local 1 /{print $NF; exit}')
    phys1=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader | awk -F', ' '$1 == 1 {print $2}')
    phys0=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader | awk -F', ' '$1 == 0 {print $2}')
    echo "local rank 0 on $uuid0 (physical GPU 1: $phys1); local rank 1 on $uuid1 (physical GPU 0: $phys0)"
    if [ "$uuid0" != "$phys1" ] || { [ "$np" -ge 2 ] && [ "$uuid1" != "$phys0" ]; }; then
        echo "FAIL: CUDA_VISIBLE_DEVICES=1,0 did not reverse the GPUs"
        fail=1
    fi
else
    echo "== CUDA_VISIBLE_DEVICES reordering: one GPU, not run"
fi
[ $fail -eq 0 ] && echo "bind_device: PASS" && exit 0
echo "bind_device: FAIL"
exit 1
