#!/bin/sh
# Installs what building and testing gpuic needs on Debian 12 / Ubuntu (as root, apt-get).
# Does nothing when everything is already there.
set -e
# The last two lines: real users of MPI RMA that the tests run unchanged (Global Arrays' static
# library needs ScaLAPACK without depending on it; PETSc's star forests have a window backend).
PKGS="build-essential autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin libucx-dev
      libibverbs-dev python3 valgrind groff-base
      python3-mpi4py python3-numpy libarmci-mpi-dev libglobalarrays-dev libscalapack-openmpi-dev
      libpetsc-real3.18-dev"
missing=""
for p in $PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages:$missing (run as root, or install them)" >&2
    exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
