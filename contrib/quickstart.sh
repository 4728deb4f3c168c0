#!/bin/sh
# The main job: installs gpuic's dependencies (apt-get, as root), builds gpuic, installs it
# (libraries under PREFIX, default /usr/local; the component in ~/.openmpi/components, where
# Open MPI looks without any flag), and runs the halo-exchange example on 4 ranks with
# --mca osc gpuic.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${PREFIX:-/usr/local}
compdir=${GPUIC_COMPONENT_DIR:-$HOME/.openmpi/components}
build="$top/_build-quickstart"

"$top/contrib/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
    "$top/configure" --prefix="$prefix" --with-ompi-component-dir="$compdir" >configure.out 2>&1 ||
        { cat configure.out; exit 1; }
    sed -n '/configuration summary/,$p' configure.out
fi
make -j"$(nproc)" >make.out 2>&1 || { tail -50 make.out; exit 1; }
make install >install.out 2>&1 || { tail -50 install.out; exit 1; }
[ "$(id -u)" -eq 0 ] && ldconfig
echo "installed: $compdir/mca_osc_gpuic.so, $prefix/lib/libgpuic.so, $prefix/lib/libmpix_gpuic.so"
ompi_info | grep "osc: gpuic"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "running: mpirun --oversubscribe -np 4 --mca osc gpuic examples/halo"
set +e
out=$(mpirun --oversubscribe -np 4 --mca osc gpuic --mca osc_gpuic_verbose 3 examples/halo 2>&1)
rc=$?
echo "$out" | grep -v "window [0-9]* created"
echo "windows created by osc/gpuic: $(echo "$out" | grep -c "window [0-9]* created") (4 ranks x 2 runs)"
exit $rc
