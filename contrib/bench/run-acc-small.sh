#!/bin/bash
# Small accumulate-family calls on MPI_Win_create windows (acc_bench small), gpuic beside
# osc/rdma, osc/ucx and osc/pt2pt in one invocation, at several rank counts (oversubscribed):
# a table per rank count, microseconds per call + flush (the slowest rank's), and gpuic's ratio
# to the best peer whose sums came out exact; the last row says how each run ended (ok, WRONG
# sums, or failed: a crash or timeout, whose missing rows show "-").
#
# Usage: contrib/bench/run-acc-small.sh [RANKS...]   (default: 2 4 8; REPS=N calls a kind, 200)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPUIC_BUILD_DIR:-$top/_build}
bench=$build/contrib/bench/acc_bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$build/stage/lib/openmpi"
comps=(gpuic rdma ucx pt2pt)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ $# -gt 0 ] || set -- 2 4 8
for np in "$@"; do
    for c in "${comps[@]}"; do
        timeout 600 mpirun --oversubscribe --bind-to none -np "$np" --mca osc "$c" \
            "$bench" small "${REPS:-200}" >"$tmp/$c" 2>/dev/null
    done
    echo "## $np ranks: us per call + MPI_Win_flush, every rank on rank 0's elements"
    echo
    echo "| call | gpuic | osc/rdma | osc/ucx | osc/pt2pt | gpuic / best peer |"
    echo "|---|---:|---:|---:|---:|---:|"
    awk -v comps="${comps[*]}" -v dir="$tmp" '
        BEGIN {
            n = split(comps, c, " ")
            for (i = 1; i <= n; ++i) {
                f = dir "/" c[i]; end[c[i]] = "failed"
                while ((getline line < f) > 0) {
                    if (line ~ /^check: /) end[c[i]] = substr(line, 8) == "ok" ? "ok" : "WRONG sums"
                    split(line, w, " ")
                    if (w[3] == "us") {
                        v[c[i], w[1]] = w[2]
                        if (!(w[1] in seen)) { seen[w[1]] = 1; order[++m] = w[1] }
                    }
                }
            }
            for (k = 1; k <= m; ++k) {
                name = order[k]; row = "| " name; best = 0
                for (i = 1; i <= n; ++i) {
                    x = (c[i], name) in v ? v[c[i], name] : "-"
                    row = row " | " x
                    if (i > 1 && x != "-" && end[c[i]] == "ok" && (best == 0 || x + 0 < best))
                        best = x + 0
                }
                g = (c[1], name) in v ? v[c[1], name] : ""
                row = row " | " (g != "" && best > 0 ? sprintf("%.2f", g / best) : "-") " |"
                print row
            }
            row = "| run ended"
            for (i = 1; i <= n; ++i) row = row " | " end[c[i]]
            print row " | |"
        }'
    echo
done
