#!/bin/bash
# The long soak: test/mpi/test_soak (mixed random RMA over every window flavor and sync mode,
# every result checked) at 8 ranks oversubscribed for 10 minutes, RSS sampled every 10 s on
# every rank.  Needs a built tree (contrib/build.sh).  Prints the log's path at the end and
# exits with test_soak's status.
#
# Environment: SOAK_NP (8), SOAK_SECONDS (600), SOAK_SEED (default: from the clock),
# SOAK_OSC (the osc component, default gpuic; Open MPI 4.1's pt2pt cannot serve
# MPI_Win_allocate_shared, so a comparison run there ends with an MPI error in the first
# shared phase), SOAK_LOG (default _build/soak-DATE.log), GPUIC_BUILD_DIR.
# Extra arguments go to test_soak, e.g. contrib/soak.sh --phases 100.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
prog="$build/test/mpi/test_soak"
log=${SOAK_LOG:-$build/soak-$(date +%Y%m%d-%H%M%S).log}
[ -x "$prog" ] || { echo "soak: not built: $prog (run contrib/build.sh)" >&2; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$build/stage/lib/openmpi"
export OMPI_MCA_mpi_yield_when_idle=1
args=(--seconds "${SOAK_SECONDS:-600}" --rss-interval 10)
[ -n "${SOAK_SEED:-}" ] && args+=(--seed "$SOAK_SEED")
cmd=(mpirun --oversubscribe --bind-to none --mca osc "${SOAK_OSC:-gpuic}" -np "${SOAK_NP:-8}"
     "$prog" "${args[@]}" "$@")
{ echo "soak: $(date -Is) $(uname -n), $(nproc) cores: ${cmd[*]}"
  [ -n "${OMPI_MCA_osc_gpuic_direct:-}" ] && echo "soak: OMPI_MCA_osc_gpuic_direct=$OMPI_MCA_osc_gpuic_direct"
  "${cmd[@]}" </dev/null 2>&1; echo "soak: exit $?"; } | tee "$log"
rc=$(sed -n 's/^soak: exit //p' "$log" | tail -1)
echo "soak: log in $log"
exit "${rc:-1}"
