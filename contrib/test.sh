#!/bin/bash
# The whole test suite: installs missing dependencies (apt-get, as root), builds if needed,
# runs every test, then the MPI tests once more on emulated nodes of one process each over
# UCX's TCP transport (names "emul:mpi/..."), then the sanitizer passes (contrib/sanitize.sh:
# ASan+UBSan over the CPU suite, TSan over the ring and proxy), and ends with one line
# "N passed, N failed, N skipped" that adds all of them up.  Arguments go to
# test/run-tests.sh (a name filter, applied to both MPI passes); with a filter the sanitizer
# passes are left out.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh" || exit 1
"$top/contrib/build.sh" || exit 1
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
export GPUIC_TEST_SUMMARY="$summary"
"$top/test/run-tests.sh" "$@"
# Every peer on another node (osc_gpuic_emulate_nodes=1): no mapping, no cross-memory copy, every
# byte and atomic through UCX, and UCX itself over TCP.
OMPI_MCA_osc_gpuic_emulate_nodes=1 UCX_TLS=tcp,self GPUIC_TEST_LABEL=emul GPUIC_TEST_KINDS=mpi \
    "$top/test/run-tests.sh" "$@"
if [ $# -eq 0 ] && [ "${GPUIC_SKIP_SANITIZERS:-0}" != 1 ]; then
    "$top/contrib/sanitize.sh"
fi
awk '{p += $1; f += $2; s += $3} END {printf "%d passed, %d failed, %d skipped\n", p, f, s;
     exit f > 0}' "$summary"
