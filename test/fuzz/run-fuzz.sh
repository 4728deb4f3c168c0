#!/bin/bash
# Builds the fuzzers with clang's libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer and
# runs each for a bounded time (FUZZ_SECONDS, default 30) from its committed seed corpus:
#   fuzz_wqe        the proxy's WQE validator (ring peek, WQE decode, key table)   corpus/
#   fuzz_mpix_args  the device API's argument and handle checks                    corpus_mpix_args/
# Exit 77 (skip) when clang or libFuzzer is unavailable; non-zero when a fuzzer finds a crash or
# a leak.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}/fuzz
CLANG=${CLANG:-clang}
seconds=${FUZZ_SECONDS:-30}
mkdir -p "$build"

if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "run-fuzz: no $CLANG"; exit 77
fi
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$build/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address "$build/probe.c" -o "$build/probe" 2>"$build/probe.log"; then
    echo "run-fuzz: $CLANG cannot build with -fsanitize=fuzzer"; cat "$build/probe.log"; exit 77
fi

src=$top/opal/gpuic
SAN=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
"$CLANG" "${SAN[@]}" \
    -I"$src" "$top/test/fuzz/fuzz_wqe.c" "$src/gpuic_ring.c" "$src/gpuic_keytable.c" \
    "$src/gpuic_log.c" "$src/gpuic_status.c" "$src/gpuic_mem.c" -o "$build/fuzz_wqe" || exit 1
# mpi.h is read for the error classes only: nothing is linked from MPI
mpi_cflags=$(pkg-config --cflags ompi 2>/dev/null || mpicc --showme:compile)
# shellcheck disable=SC2086
"$CLANG" "${SAN[@]}" $mpi_cflags -I"$top/ompi/include/gpuic_shared" \
    "$top/test/fuzz/fuzz_mpix_args.c" -o "$build/fuzz_mpix_args" || exit 1

# New inputs go to scratch directories; the committed corpora are only read.
scratch=$(mktemp -d "$build/corpus.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cd "$build" || exit 1
rc=0
run_fuzzer() { # program corpus max_len
    mkdir -p "$scratch/$1"
    echo "run-fuzz: $1 for $seconds s"
    "./$1" -max_total_time="$seconds" -max_len="$3" -print_final_stats=1 \
        "$scratch/$1" "$top/test/fuzz/$2" || rc=1
}
run_fuzzer fuzz_wqe corpus 260
run_fuzzer fuzz_mpix_args corpus_mpix_args 512
exit $rc
