#!/bin/bash
# Runs the dissection tool on the host path for a few operations of every kind and checks the
# structure of what it measured (contrib/gpuic-dissect --check): every record carries every
# stage, stamps never decrease in stage order, the table has one row per stage plus the total
# with numeric cells and shares adding up to 100 %.  Never looks at how fast anything is.
# Also checks that a path this build cannot run is refused cleanly (exit 3, a message).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null 2>&1 || { echo "dissect_smoke: no python3"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GPUIC_BUILD_DIR=${GPUIC_BUILD_DIR:-$top/_build}

python3 "$top/contrib/gpuic-dissect" --path host --op all --iters 40 --check --out "$out" ||
    { echo "dissect_smoke: FAIL (host path check)"; exit 1; }
# one file of raw stamps for all operations, which tabulates again as it was
for op in put get atomic put_signal; do
    grep -q "^$op," "$out/dissect-host.csv" || { echo "dissect_smoke: FAIL (no rows for $op)"; exit 1; }
done
python3 "$top/contrib/gpuic-dissect" --path host --from-csv "$out/dissect-host.csv" --check \
    --out "$out/again" >/dev/null && cmp -s "$out/dissect-host.md" "$out/again/dissect-host.md" ||
    { echo "dissect_smoke: FAIL (combined CSV does not tabulate the same)"; exit 1; }
grep -q '^<svg' "$out/dissect-host.svg" && grep -q '</svg>' "$out/dissect-host.svg" ||
    { echo "dissect_smoke: FAIL (no chart)"; exit 1; }
# batched doorbells: records of one batch share the doorbell stamp, still in order
python3 "$top/contrib/gpuic-dissect" --path host --op put --batch 8 --iters 10 --check >/dev/null ||
    { echo "dissect_smoke: FAIL (batched check)"; exit 1; }
# the proxy path (GPU producers) needs a GPU: without one it is refused cleanly
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
    msg=$(python3 "$top/contrib/gpuic-dissect" --path proxy --op put --iters 4); rc=$?
    [ "$rc" -eq 3 ] && [[ $msg == *"not available"* ]] ||
        { echo "dissect_smoke: FAIL (proxy path: exit $rc, '$msg')"; exit 1; }
fi
echo "dissect_smoke: PASS"
