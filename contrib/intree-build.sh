#!/bin/bash
# Builds gpuic inside Open MPI's own source tree and tests the result.
#
# On Debian 12, as root: fetches Debian's Open MPI 4.1.4 source (adding a deb-src entry for the
# archive apt already uses when there is none), installs the few packages a minimal Open MPI
# build needs, drops the component (ompi/mca/osc/gpuic, with Makefile.ompi.am installed as its
# Makefile.am), libgpuic (opal/gpuic) and the headers it shares (ompi/include/gpuic_shared)
# into the tree, runs Open MPI's autogen.pl and configure (C only, no OSHMEM, no ROMIO, Debian's
# external PMIx/hwloc/libevent, --with-ucx), installs into its own prefix, checks that
# ompi_info of that prefix lists "osc: gpuic", and runs gpuic's core MPI tests with that
# installation's mpicc and mpirun --mca osc gpuic.  Ends with one line
# "intree-build: PASS|FAIL ..." and the elapsed time.
#
# Usage: contrib/intree-build.sh [--test-only] [WORKDIR]   (default WORKDIR: _intree in the repository)
#   --test-only: skip fetching and building; check and test the installation a previous run
#   left in WORKDIR/install.
# Environment: JOBS (make -j, default 2).  A run that builds starts from a fresh copy of the source.
# Logs: WORKDIR/{apt,autogen,configure,make,tests}.log
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
test_only=no
if [ "${1:-}" = --test-only ]; then
    test_only=yes
    shift
fi
work=$(mkdir -p "${1:-$top/_intree}" && cd "${1:-$top/_intree}" && pwd)
jobs=${JOBS:-2}
prefix="$work/install"
start=$(date +%s)

elapsed() {
    local s=$(($(date +%s) - start))
    printf '%dm%02ds' $((s / 60)) $((s % 60))
}

fail() {
    echo "intree-build: FAIL: $* (elapsed $(elapsed))"
    exit 1
}

step() {
    echo "[$(elapsed)] $*"
}

if [ $test_only = no ]; then
    [ "$(id -u)" -eq 0 ] || fail "run as root (apt-get source, apt-get install)"
    . /etc/os-release
    [ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ] ||
        fail "needs Debian 12 (found ${PRETTY_NAME:-unknown}): it builds Debian 12's Open MPI 4.1.4"
    export DEBIAN_FRONTEND=noninteractive

    # 1. A deb-src entry for every archive apt already fetches binary packages from.
    if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        step "adding deb-src entries for the configured archives"
        if [ -f /etc/apt/sources.list.d/debian.sources ]; then
            sed -e 's/^Types: *deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
                >/etc/apt/sources.list.d/gpuic-deb-src.sources
        elif grep -qs '^deb ' /etc/apt/sources.list; then
            sed -n -e 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/gpuic-deb-src.list
        else
            fail "no Debian archive found in /etc/apt/sources.list or /etc/apt/sources.list.d/debian.sources"
        fi
        apt-get update -q >"$work/apt.log" 2>&1 || fail "apt-get update (see $work/apt.log)"
    fi

    # 2. What autogen.pl and a minimal configure need (apt-get build-dep would pull in Fortran, Java,
    #    verbs, libfabric, PSM...).  dpkg-dev unpacks the source package.
    pkgs="dpkg-dev build-essential autoconf automake libtool flex perl pkg-config
          libucx-dev libhwloc-dev libevent-dev libpmix-dev zlib1g-dev"
    missing=""
    for p in $pkgs; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        step "installing$missing"
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $missing >>"$work/apt.log" 2>&1 ||
            fail "apt-get install$missing (see $work/apt.log)"
    fi

    # 3. Debian's source package, patches applied.
    step "apt-get source openmpi"
    rm -rf "$work/src" "$prefix"
    mkdir -p "$work/src"
    (cd "$work/src" && apt-get source -q openmpi) >>"$work/apt.log" 2>&1 ||
        fail "apt-get source openmpi: Debian's sources could not be fetched (see $work/apt.log)"
    src=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'openmpi-*' | head -1)
    [ -n "$src" ] && [ -f "$src/VERSION" ] || fail "no unpacked openmpi-* directory in $work/src"
    # shellcheck disable=SC1091,SC2154 # VERSION is a shell fragment that sets major, minor, release
    ompi_version=$(. "$src/VERSION" && echo "$major.$minor.$release")
    case $ompi_version in
        4.1.*) ;;
        *) fail "the source package holds Open MPI $ompi_version, not 4.1.x" ;;
    esac

    # 4. Drop gpuic in.  Only sources, headers and Open MPI's build files: the out-of-tree
    #    Makefile.am files are not used there.
    step "dropping gpuic into Open MPI $ompi_version ($src)"
    cp -a "$top/ompi/mca/osc/gpuic" "$src/ompi/mca/osc/gpuic"
    mv "$src/ompi/mca/osc/gpuic/Makefile.ompi.am" "$src/ompi/mca/osc/gpuic/Makefile.am"
    rm -rf "$src/ompi/mca/osc/gpuic/compat"
    mkdir -p "$src/opal/gpuic" "$src/ompi/include/gpuic_shared"
    cp -a "$top"/opal/gpuic/*.[ch] "$top/opal/gpuic/libgpuic_sources.am" "$src/opal/gpuic/"
    # Headers only: Open MPI's build has no Makefile for this folder and installs none of it.
    cp -a "$top"/ompi/include/gpuic_shared/*.h "$top"/ompi/include/gpuic_shared/*.cuh \
        "$src/ompi/include/gpuic_shared/"
    # Build products a developer's checkout may hold must not reach the tree.
    find "$src/ompi/mca/osc/gpuic" "$src/opal/gpuic" \
         \( -name '*.o' -o -name '*.lo' -o -name '*.la' -o -name .libs -o -name .deps \
            -o -name Makefile -o -name Makefile.in \) -prune -exec rm -rf {} +

    # 5. autogen.pl: --force because the source package is a release tarball, --no-oshmem to skip
    #    generating what this build leaves out.
    step "autogen.pl"
    (cd "$src" && ./autogen.pl --force --no-oshmem) >"$work/autogen.log" 2>&1 ||
        fail "autogen.pl (see $work/autogen.log)"
    grep -q 'ompi/mca/osc/gpuic/configure.m4' "$src/config/autogen_found_items.m4" ||
        fail "autogen.pl did not pick up ompi/mca/osc/gpuic/configure.m4"

    # 6. A minimal configure: C bindings only, no OSHMEM, no ROMIO; PMIx, hwloc and libevent are
    #    Debian's (as in Debian's own build), which saves building the bundled copies.
    multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
    step "configure (prefix $prefix)"
    (cd "$src" && ./configure --prefix="$prefix" \
        --disable-mpi-fortran --disable-oshmem --disable-io-romio --disable-mpi-java \
        --with-ucx --with-pmix="/usr/lib/$multiarch/pmix2" --with-hwloc=external \
        --with-libevent=external --enable-mca-no-build=btl-openib) >"$work/configure.log" 2>&1 ||
        fail "configure (see $work/configure.log)"
    grep -q '^checking if MCA component osc:gpuic can compile... yes' "$work/configure.log" ||
        fail "configure will not build osc:gpuic (see $work/configure.log)"

    step "make -j$jobs install"
    (cd "$src" && make -j"$jobs" install) >"$work/make.log" 2>&1 || fail "make install (see $work/make.log)"
fi
[ -x "$prefix/bin/ompi_info" ] || fail "no installation in $prefix"

# 7. Only this installation's components: never a gpuic installed in ~/.openmpi/components.
#    Their directory is Open MPI's pkglibdir (lib/openmpi3 with Debian's patches).
compdir=$("$prefix/bin/ompi_info" --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
[ -f "$compdir/mca_osc_gpuic.so" ] || fail "no mca_osc_gpuic.so in $prefix's component directory ($compdir)"
export OMPI_MCA_mca_base_component_path="$compdir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
line=$("$prefix/bin/ompi_info" | grep 'MCA osc: gpuic') ||
    fail "$prefix/bin/ompi_info does not list osc: gpuic"
step "ompi_info:${line}"

# 8. gpuic's core MPI tests, compiled with this installation's mpicc.  Each checks its data and
#    prints "name: PASS|FAIL"; --mca osc gpuic leaves no other component to serve the windows.
tests="test_put_get:2 test_put_get:4 test_accumulate:2 test_accumulate:4 test_pscw:2 test_pscw:4
       test_lock_exclusive:2 test_lock_exclusive:4 test_dynamic:2 test_dynamic:3 test_shared:3
       test_shared:4"
rm -rf "$work/tests"
mkdir -p "$work/tests"
: >"$work/tests.log"
pass=0 failed=""
for t in $tests; do
    prog=${t%%:*} np=${t##*:}
    "$prefix/bin/mpicc" -O2 -I"$top/test/mpi" -o "$work/tests/$prog" "$top/test/mpi/$prog.c" \
        >>"$work/tests.log" 2>&1 || { failed="$failed $prog(compile)"; continue; }
    echo "== $prog -np $np" >>"$work/tests.log"
    if timeout 300 "$prefix/bin/mpirun" --oversubscribe --bind-to none --mca osc gpuic -np "$np" \
            "$work/tests/$prog" >>"$work/tests.log" 2>&1; then
        pass=$((pass + 1))
    else
        failed="$failed $prog:$np"
    fi
done
step "tests: $pass passed${failed:+, failed:$failed} (see $work/tests.log)"
[ -z "$failed" ] || fail "MPI tests failed:$failed"
ompi_version=$("$prefix/bin/ompi_info" --parsable | sed -n 's/^ompi:version:full://p')
echo "intree-build: PASS: Open MPI $ompi_version with osc:gpuic built in-tree into $prefix," \
     "$pass MPI test runs passed (elapsed $(elapsed))"
