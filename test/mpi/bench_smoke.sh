#!/bin/bash
# osc_bench runs briefly through gpuic and prints CSV rows with numbers for put and get.  Only
# that rows exist is checked, never what they say: a benchmark does not fail on timing.
bench="$GPUIC_TEST_BUILD/contrib/bench/osc_bench"
[ -x "$bench" ] || { echo "not built: $bench"; exit 77; }
out=$($GPUIC_TEST_MPIRUN -np 2 "$bench" --ops put,get,put_bw --sync lock_all,fence \
      --min 8 --max 1K --budget 0.01 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: osc_bench exited with $rc"; exit 1; }
for op in put get put_bw; do
    echo "$out" | grep -Eq "^gpuic,$op,(lock_all|fence),[0-9]+,(latency_us|bandwidth_MBps),[0-9.]+,$" || {
        echo "FAIL: no measured gpuic row for $op"; exit 1; }
done
echo "bench_smoke: PASS"
