#!/bin/bash
# Builds the WQE-validator fuzzer with clang's libFuzzer + AddressSanitizer and runs it for a
# bounded time (FUZZ_SECONDS, default 30) from the committed seed corpus.  Exit 77 (skip) when
# clang or libFuzzer is unavailable; non-zero when the fuzzer finds a crash or a leak.
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
"$CLANG" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src" "$top/test/fuzz/fuzz_wqe.c" "$src/gpuic_ring.c" "$src/gpuic_keytable.c" \
    "$src/gpuic_log.c" "$src/gpuic_status.c" -o "$build/fuzz_wqe" || exit 1

# New inputs go to a scratch directory; the committed corpus is only read.
work=$(mktemp -d "$build/corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$build" || exit 1
./fuzz_wqe -max_total_time="$seconds" -max_len=260 -print_final_stats=1 \
    "$work" "$top/test/fuzz/corpus"
