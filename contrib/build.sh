#!/bin/sh
# Builds gpuic into _build/ and stages an install in _build/stage (used by the test suite).
# Re-running only rebuilds what changed.  Extra arguments go to configure on the first run.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/_build"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
    "$top/configure" --prefix="$build/stage" "$@" >configure.out 2>&1 || {
        cat configure.out; exit 1; }
    sed -n '/configuration summary/,$p' configure.out
fi
make -j"$(nproc)" >make.out 2>&1 || { tail -50 make.out; exit 1; }
make install >install.out 2>&1 || { tail -50 install.out; exit 1; }
