#!/bin/bash
# Checks the stream kernels embedded in the component without a GPU: every kernel name the host
# code launches (ompi_osc_gpuic_stream_names in osc_gpuic_stream_launch.c) is a kernel of
# osc_gpuic_stream_kernels.cu and has sm_90 code in the built fatbin, every kernel of the .cu
# is launched by name and begins with the programmatic-dependent-launch prologue (the component
# launches them all with the attribute, which is safe only if each waits first; those that begin
# with the _waiting one also trigger their dependents), and the generated C array holds the
# fatbin byte for byte.
# Skipped (77) in a build without the stream calls (no CUDA headers or no nvcc).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
src="$top/ompi/mca/osc/gpuic"
fatbin="$build/ompi/mca/osc/gpuic/osc_gpuic_stream_kernels.fatbin"
image="$build/ompi/mca/osc/gpuic/osc_gpuic_stream_image.c"
[ -f "$fatbin" ] && [ -f "$image" ] || { echo "stream_image: no stream kernels in this build: SKIP"; exit 77; }

launched=$(grep -o '= "mpix_gpuic_k_[a-z_]*"' "$src/osc_gpuic_stream_launch.c" | tr -d '="' | tr -d ' ' | sort)
defined=$(grep -o 'extern "C" __global__ void mpix_gpuic_k_[a-z_]*' "$src/osc_gpuic_stream_kernels.cu" |
          awk '{print $NF}' | sort)
fail=0
[ -n "$launched" ] || { echo "no kernel names found in osc_gpuic_stream_launch.c"; fail=1; }
if [ "$launched" != "$defined" ]; then
    echo "launched and defined kernels differ:"; diff <(echo "$launched") <(echo "$defined") || true
    fail=1
fi
# the first statement of each kernel body, by kernel: "name statement"
firsts=$(awk '/^extern "C" __global__ void mpix_gpuic_k_/ {
                  name = $0; sub(/\(.*/, "", name); sub(/.* /, "", name); body = 1; next }
              body && /^\{/ { next }
              body && NF { print name, $1; body = 0 }' "$src/osc_gpuic_stream_kernels.cu")
for k in $defined; do
    first=$(awk -v k="$k" '$1 == k { print $2 }' <<<"$firsts")
    case $first in
    "gpuic_dev_stream_prologue();") ;;
    "gpuic_dev_stream_prologue_waiting();")
        # the body, up to the closing brace at column 0, must trigger its dependents
        awk -v k="$k" '$0 ~ ("void " k "\\(") { on = 1 } on && /^}/ { exit } on' \
            "$src/osc_gpuic_stream_kernels.cu" | grep -q 'gpuic_dev_stream_trigger();' ||
            { echo "$k waits without triggering its dependents"; fail=1; } ;;
    *) echo "$k does not begin with the PDL prologue (first statement: ${first:-none})"; fail=1 ;;
    esac
done
names=$(strings "$fatbin")
for k in $launched; do
    grep -qx "\.nv\.info\.$k" <<<"$names" || { echo "no device code for $k in the fatbin"; fail=1; }
done
# the array's bytes, in order, are the fatbin's
if ! cmp -s <(grep -o '0x[0-9a-f][0-9a-f]' "$image" | sed 's/0x//' | tr -d '\n') \
            <(od -An -v -tx1 "$fatbin" | tr -d ' \n'); then
    echo "the generated array differs from the fatbin"; fail=1
fi
[ $fail = 0 ] && echo "stream_image: PASS ($(echo "$launched" | wc -l) kernels)" || echo "stream_image: FAIL"
exit $fail
