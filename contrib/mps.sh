#!/bin/bash
# Starts or stops a CUDA MPS daemon for running several ranks on one GPU (without MPS their
# kernels are time-sliced and a cross-process spin-wait takes milliseconds).
#   eval "$(contrib/mps.sh start)"   # prints the exports to use; starts MPS only when there is
#                                     # exactly one GPU and no daemon runs already
#   contrib/mps.sh stop              # stops the daemon this script started
set -u
pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/gpuic-mps}
logd=${CUDA_MPS_LOG_DIRECTORY:-/tmp/gpuic-mps-log}
case ${1:-} in
start)
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$ngpu" -ne 1 ] || pgrep -x nvidia-cuda-mps >/dev/null 2>&1 ||
       ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
        exit 0
    fi
    mkdir -p "$pipe" "$logd"
    CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$logd nvidia-cuda-mps-control -d &&
        touch "$pipe/.started-by-gpuic" &&
        echo "export CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$logd"
    ;;
stop)
    if [ -f "$pipe/.started-by-gpuic" ]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control
        rm -f "$pipe/.started-by-gpuic"
    fi
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
