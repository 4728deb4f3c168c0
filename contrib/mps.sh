#!/bin/bash
# Starts or stops a CUDA MPS daemon for running several ranks on one GPU (without MPS their
# kernels are time-sliced and a cross-process spin-wait takes milliseconds).
#   eval "$(contrib/mps.sh start)"   # prints the exports to use; starts MPS when there is
#                                     # exactly one GPU and no daemon of ours runs yet
#                                     # (GPUIC_MPS_ANY_GPUS=1: whatever the GPU count, for
#                                     # more ranks than GPUs)
#   contrib/mps.sh stop              # stops the daemon this script started, and waits for it
#   contrib/mps.sh status            # one line: whether a daemon runs, and its pipe directory
#                                     # (CUDA_MPS_PIPE_DIRECTORY as the caller exported it)
set -u
pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/gpuic-mps}
logd=${CUDA_MPS_LOG_DIRECTORY:-/tmp/gpuic-mps-log}
exports="export CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$logd"

# The daemon's pids.  By command line: its process name is cut to 15 characters
# ("nvidia-cuda-mps"), so pgrep -x nvidia-cuda-mps-control never matches it.
mps_pids() {
    pgrep -f '^nvidia-cuda-mps-control' 2>/dev/null
}

wait_gone() {
    for _ in $(seq 50); do
        [ -n "$(mps_pids)" ] || return 0
        sleep 0.1
    done
}

case ${1:-} in
start)
    command -v nvidia-cuda-mps-control >/dev/null 2>&1 || exit 0
    [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -eq 1 ] || [ "${GPUIC_MPS_ANY_GPUS:-0}" = 1 ] ||
        exit 0
    if [ -f "$pipe/.started-by-gpuic" ] && [ -n "$(mps_pids)" ]; then
        echo "$exports" # ours, still running
        exit 0
    fi
    # someone else's daemon (or ours, its marker gone): use it, through the pipe directory it
    # was started with; clients looking in another directory would run without MPS, their
    # kernels time-sliced (a cross-process ping-pong then takes milliseconds)
    pid=$(mps_pids | head -1)
    if [ -n "$pid" ]; then
        dir=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
              sed -n 's/^CUDA_MPS_PIPE_DIRECTORY=//p')
        [ -n "$dir" ] && echo "export CUDA_MPS_PIPE_DIRECTORY=$dir"
        exit 0
    fi
    mkdir -p "$pipe" "$logd"
    CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$logd nvidia-cuda-mps-control -d &&
        touch "$pipe/.started-by-gpuic" && echo "$exports"
    ;;
status)
    if [ -n "$(mps_pids)" ]; then
        echo "MPS: daemon running, pipe directory ${CUDA_MPS_PIPE_DIRECTORY:-default (/tmp/nvidia-mps)}"
    else
        echo "MPS: NOT running: the ranks' kernels are time-sliced, so a row where kernels of two" \
             "processes wait for each other shows the time slice, not the latency"
    fi
    ;;
stop)
    if [ -f "$pipe/.started-by-gpuic" ]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control
        rm -f "$pipe/.started-by-gpuic"
        wait_gone
    fi
    ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
