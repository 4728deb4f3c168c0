#!/bin/bash
# test_winloop (windows of every flavor created and freed 20 times) under valgrind's memcheck
# at $GPUIC_TEST_NP ranks.  Passes when no "definitely lost" block and no invalid access or
# free has a frame of gpuic in its stack (gpuic_*, ompi_osc_gpuic_*, mca_osc_gpuic.so,
# libgpuic.so; for uninitialised bytes a system call reads from a heap block, as the
# allocator's caller); Open MPI's, PMIx's and UCX's own reports are not ours and are ignored.
# Skipped (77) without valgrind, and in sanitizer builds.
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not installed"; exit 77; }
prog="$GPUIC_TEST_BUILD/test/mpi/test_winloop"
[ -x "$prog" ] || { echo "not built: $prog"; exit 1; }
# A sanitizer build cannot run under valgrind (both replace the allocator).
if ldd "$prog" 2>/dev/null | grep -qE 'lib(a|t|ub)san'; then
    echo "sanitizer build: valgrind does not apply"; exit 77
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Components are dlclose()d at finalize: keep their frames resolvable in the leak report
# (--keep-debuginfo; the MCA variable does the same where Open MPI has it).
export OMPI_MCA_mca_base_component_disable_dlclose=1
timeout -k 5 270 $GPUIC_TEST_MPIRUN -x OMPI_MCA_mca_base_component_disable_dlclose \
    -np "${GPUIC_TEST_NP:-2}" valgrind -q --leak-check=full --show-leak-kinds=all \
    --keep-debuginfo=yes --num-callers=40 --log-file="$logs/vg.%p.log" "$prog" 2>&1 |
    grep -v -e 'hwloc' -e 'HWLOC_CPUID_PATH'
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || { echo "FAIL: test_winloop under valgrind exited $rc"; exit 1; }
ls "$logs"/vg.*.log >/dev/null 2>&1 || { echo "FAIL: no valgrind logs"; exit 1; }
# Without any frame of ours in the logs, symbols were not resolved and the check means nothing.
grep -q -e 'gpuic_' "$logs"/vg.*.log || {
    echo "FAIL: no gpuic frame in valgrind's output (symbols not resolved?)"; exit 1; }
ours=$(awk '
    { sub(/^==[0-9]+== ?/, "") }
    /^$/ { flush(); next }
    { rec = rec $0 "\n" }
    END { flush() }
    function flush(   ours) {
        ours = rec ~ /(gpuic_|mca_osc_gpuic\.so|libgpuic\.so)/
        # Uninitialised bytes a system call sends from a heap block: ours when our code
        # allocated the block, i.e. the caller of the allocator (UCX over TCP sends from
        # buffers of its own while gpuic drives its progress).
        if (rec ~ /Syscall param/ && match(rec, /alloc.d[^\n]*\n[^\n]*\n[^\n]*\n/))
            ours = substr(rec, RSTART, RLENGTH) ~ /(gpuic_|mca_osc_gpuic\.so|libgpuic\.so)/
        if (rec ~ /(definitely lost|Invalid (read|write|free)|Mismatched free|uninitialised)/ &&
            ours)
            printf "%s\n", rec
        rec = ""
    }' "$logs"/vg.*.log)
others=$(cat "$logs"/vg.*.log | grep -c 'definitely lost in loss record')
echo "valgrind_winloop: $others definitely-lost records in all (Open MPI, PMIx, UCX), none shown"
if [ -n "$ours" ]; then
    echo "$ours"
    echo "valgrind_winloop: FAIL (reports with gpuic frames above)"
    exit 1
fi
echo "valgrind_winloop: PASS"
