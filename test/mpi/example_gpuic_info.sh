#!/bin/bash
# examples/gpuic_info through gpuic: every rank reports a gpuic window, the path to itself is
# "self" and to the other ranks of this node "direct" (or "UCX" with osc_gpuic_direct=0, and
# any of direct, cross-memory copies or UCX where UCX_TLS may leave out UCX's shared-memory
# transports), to ranks of other emulated
# nodes (osc_gpuic_emulate_nodes=N: world rank / N) "UCX", and every MPIX call answered as its
# page says (the program's own exit status).
prog="$GPUIC_TEST_BUILD/examples/gpuic_info"
np=${GPUIC_TEST_NP:-2}
[ -x "$prog" ] || { echo "FAIL: not built: $prog"; exit 1; }
out=$($GPUIC_TEST_MPIRUN -np "$np" "$prog" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: gpuic_info exited with $rc"; exit 1; }
other="direct"
[ -n "${UCX_TLS:-}" ] && other="(direct|cross-memory copies|UCX)"
[ "${OMPI_MCA_osc_gpuic_direct:-1}" = 0 ] && other="UCX"
emul=${OMPI_MCA_osc_gpuic_emulate_nodes:-0}
for ((r = 0; r < np; r++)); do
    line=$(echo "$out" | grep "^rank $r: ")
    echo "$line" | grep -q "window served by gpuic" || { echo "FAIL: rank $r: no gpuic window"; exit 1; }
    for ((t = 0; t < np; t++)); do
        want=$other
        [ "$emul" -gt 0 ] && [ $((t / emul)) -ne $((r / emul)) ] && want=UCX
        [ $t -eq $r ] && want=self
        echo "$line" | grep -Eq "[,;] to $t: $want" ||
            { echo "FAIL: rank $r: path to $t is not '$want'"; exit 1; }
    done
    echo "$line" | grep -Eq "device handle|no usable CUDA device" ||
        { echo "FAIL: rank $r: no device handle report"; exit 1; }
done
echo "$out" | grep -q '^capabilities: host RMA yes' || { echo "FAIL: capabilities"; exit 1; }
echo "example_gpuic_info: PASS"
