# Sourced by the two-rank benchmark scripts (run-device-bench.sh, run-cuda-aware-bench.sh,
# run-osu-cuda.sh); needs $top (source tree), $build (build tree) and $out (results folder).
# Lets mpirun run as root, makes Open MPI find gpuic's component in the build tree, starts MPS
# when one GPU is shared (contrib/mps.sh; stopped at the caller's exit at the latest, or
# earlier with `contrib/mps.sh stop`, which stops only a daemon it started),
# writes whether it runs to $out/mps.txt, and sets the array `mpirun`: mpirun for two ranks,
# with the MPS pipe directory passed on.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$build/stage/lib/openmpi"
mpirun=(mpirun -np 2 --oversubscribe --bind-to none)
eval "$("$top/contrib/mps.sh" start)"
trap '"$top/contrib/mps.sh" stop' EXIT
[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mpirun+=(-x CUDA_MPS_PIPE_DIRECTORY)
"$top/contrib/mps.sh" status | tee "$out/mps.txt"
