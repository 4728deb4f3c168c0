#!/bin/bash
# mpi4py_rma.py (MPI RMA from Python, every window flavor and sync mode) under gpuic at
# $GPUIC_TEST_NP ranks.  Debian's mpi4py lives in the system interpreter only, so that one is
# used even where another python3 comes first on PATH.  Skipped without python3-mpi4py or
# python3-numpy.
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
# the probes import mpi4py.MPI without initializing MPI (that would load the component)
export MPI4PY_RC_INITIALIZE=0
"$py" -c 'import mpi4py.MPI, numpy' 2>/dev/null || {
    echo "skip: $py lacks mpi4py or numpy (apt-get install python3-mpi4py python3-numpy)"; exit 77; }
# mpi4py must be linked to the Open MPI the component was built for, or it cannot load it
"$py" -c 'from mpi4py import MPI; import sys; sys.exit("Open MPI" not in MPI.Get_library_version())' || {
    echo "skip: this mpi4py is not built on Open MPI"; exit 77; }
unset MPI4PY_RC_INITIALIZE
# A sanitizer build's component needs the sanitizer runtimes loaded first in the (plain)
# interpreter.
pre=""
san=$(sed -n 's/^GPUIC_SAN_CFLAGS = -fsanitize=\([^ ]*\).*/\1/p' "$GPUIC_TEST_BUILD/Makefile" 2>/dev/null)
for s in ${san//,/ }; do
    case $s in address) lib=libasan.so ;; undefined) lib=libubsan.so ;; thread) lib=libtsan.so ;; *) continue ;; esac
    pre="$pre${pre:+:}$(${CC:-gcc} -print-file-name=$lib)"
done
preload=()
[ -n "$pre" ] && preload=(-x "LD_PRELOAD=$pre")
out=$($GPUIC_TEST_MPIRUN "${preload[@]}" -np "$GPUIC_TEST_NP" "$py" "$here/mpi4py_rma.py" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: mpi4py_rma.py exited with $rc"; exit 1; }
echo "$out" | grep -q "^mpi4py_rma: PASS ($GPUIC_TEST_NP ranks)" || { echo "FAIL: no PASS line"; exit 1; }
