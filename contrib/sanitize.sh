#!/bin/bash
# The sanitizer passes of the test suite (each in its own build tree):
#  - asan: everything built with AddressSanitizer + UndefinedBehaviorSanitizer, the whole CPU
#    suite run with both fatal.  Leak detection covers the unit tests (libgpuic alone); in MPI
#    runs it is off, since Open MPI's and PMIx's own allocations at exit cannot be told apart
#    from ours there (the valgrind window loop covers the component's leaks instead).
#  - tsan: the ring, proxy and serving-worker unit tests (the multi-threaded core) under
#    ThreadSanitizer.
# Usage: contrib/sanitize.sh [asan] [tsan]   (default: both).  Summary lines go to
# $GPUIC_TEST_SUMMARY when set.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
passes=${*:-asan tsan}
rc=0

build_tree() { # dir sanitizers
    local dir=$1 san=$2
    mkdir -p "$dir"
    (cd "$dir" &&
        { [ -f Makefile ] || "$top/configure" --prefix="$dir/stage" --enable-sanitizers="$san" \
              >configure.out 2>&1 || { cat configure.out; exit 1; }; } &&
        { make -j"$(nproc)" >make.out 2>&1 || { tail -40 make.out; exit 1; }; } &&
        { make install >install.out 2>&1 || { tail -40 install.out; exit 1; }; })
}

[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
for p in $passes; do
    case $p in
    asan)
        build_tree "$top/_build-asan" address,undefined || { rc=1; continue; }
        export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
        ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 GPUIC_TEST_LABEL=asan \
            GPUIC_BUILD_DIR="$top/_build-asan" GPUIC_TEST_KINDS=unit \
            "$top/test/run-tests.sh" '^unit/test_' || rc=1
        ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 GPUIC_TEST_LABEL=asan \
            GPUIC_BUILD_DIR="$top/_build-asan" GPUIC_TEST_KINDS=mpi \
            "$top/test/run-tests.sh" || rc=1
        unset UBSAN_OPTIONS ;;
    tsan)
        build_tree "$top/_build-tsan" thread || { rc=1; continue; }
        # UCX's memory hooks (madvise/mmap interception) crash ThreadSanitizer's own
        # interceptors at thread exit; libgpuic does not need them.
        UCX_MEM_EVENTS=no UCX_MEM_MMAP_HOOK_MODE=none \
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 GPUIC_TEST_LABEL=tsan \
            GPUIC_BUILD_DIR="$top/_build-tsan" GPUIC_TEST_KINDS=unit \
            "$top/test/run-tests.sh" '^unit/test_(ring|proxy|serve)' || rc=1 ;;
    *)
        echo "sanitize: unknown pass $p" >&2; rc=1 ;;
    esac
done
exit $rc
