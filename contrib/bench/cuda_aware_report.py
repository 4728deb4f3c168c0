#!/usr/bin/env python3
"""Ratios of run-cuda-aware-bench.sh's CSV: host MPI calls on a GPU window under gpuic (both
window flavors) against NVSHMEM's host API and against the CUDA runtime's floors, as markdown on
stdout.

    cuda_aware_report.py RESULTS.CSV

The CSV's rows are component,measure,size,value,unit; a value of NA has its reason in the unit
column.  A latency ratio below 1 and a bandwidth ratio above 1 mean gpuic is faster.
"""
import csv
import sys

GPUIC = ["gpuic_allocate", "gpuic_create"]
PEER = "nvshmem_host"
MIB = 1 << 20

# measure: (the floor row it is compared with, that row's size or None for the same size)
FLOOR_OF = {
    "put_flush": ("memcpy_h2d_8B", 8),
    "get_flush": ("memcpy_h2d_8B", 8),
    "acc_flush": ("empty_kernel", 0),
    "fop_flush": ("empty_kernel", 0),
    "cas_flush": ("empty_kernel", 0),
    "put_bw": ("d2d_bw_flushed", None),
    "get_bw": ("d2d_bw_flushed", None),
    "acc_bw": ("d2d_bw_flushed", None),
}
# bandwidth rows are also compared with the streaming copy floor (copies back to back, one
# completion at the end): what the copy engines give without the flush each batch needs
STREAMING = "d2d_bw"
ORDER = ["put_flush", "get_flush", "acc_flush", "fop_flush", "cas_flush", "put_bw", "get_bw",
         "acc_bw"]


def read(path):
    """{(component, measure, size): (value or None, unit or reason)} and the row order."""
    cells, order = {}, []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["component"], r["measure"], int(r["size"]))
            value = None if r["value"] in ("NA", "") else float(r["value"])
            cells[key] = (value, r["unit"])
            if (r["measure"], int(r["size"])) not in order:
                order.append((r["measure"], int(r["size"])))
    return cells, order


def size_text(size):
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    return f"{size} B"


def cell(cells, comp, measure, size):
    v = cells.get((comp, measure, size))
    if v is None:
        return "", None
    if v[0] is None:
        return f"n/a ({v[1]})", None
    return f"{v[0]:.3f}", v[0]


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b not in (None, 0) else "-"


def floor_for(cells, measure, size):
    """The floor row a measure is compared with: its own size's copy-engine time for the
    latency of a large transfer, else the one FLOOR_OF names."""
    f = FLOOR_OF.get(measure)
    if f is None:
        return "", None, ""
    name, fsize = f
    if not f[0].startswith("d2d_bw") and size > 8:
        _, bw = cell(cells, "floor", "d2d_bw", size)
        if bw is None:
            return "", None, ""
        us = size / (bw * 1e3)
        return f"{us:.3f}", us, f"d2d copy time {size_text(size)}"
    fsize = size if fsize is None else fsize
    text, value = cell(cells, "floor", name, fsize)
    return text, value, f"{name} {size_text(fsize)}"


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    cells, order = read(argv[1])
    keys = [k for m in ORDER for k in order if k[0] == m]
    keys += [k for k in order if k[0] not in ORDER and k[0] in FLOOR_OF]
    print("## gpuic against NVSHMEM's host API and the CUDA floors (2 ranks, device buffers)")
    print()
    print("| measure | size | unit | gpuic allocate | gpuic create | NVSHMEM host | "
          "alloc/NVSHMEM | create/NVSHMEM | floor | floor value | alloc/floor | create/floor |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for measure, size in keys:
        texts, values = zip(*(cell(cells, c, measure, size) for c in GPUIC))
        ptext, pvalue = cell(cells, PEER, measure, size)
        ftext, fvalue, fname = floor_for(cells, measure, size)
        unit = next((cells[(c, measure, size)][1] for c in GPUIC + [PEER]
                     if (c, measure, size) in cells and cells[(c, measure, size)][0] is not None),
                    "")
        print(f"| {measure} | {size_text(size)} | {unit} | {texts[0]} | {texts[1]} | {ptext} | "
              f"{ratio(values[0], pvalue)} | {ratio(values[1], pvalue)} | {fname} | {ftext} | "
              f"{ratio(values[0], fvalue)} | {ratio(values[1], fvalue)} |")
    bw_keys = [k for k in keys if k[0].endswith("_bw")]
    if bw_keys:
        print()
        print("## bandwidth against the streaming copy floor (d2d_bw)")
        print()
        print("| measure | size | gpuic allocate | gpuic create | NVSHMEM host | d2d_bw | "
              "alloc/d2d_bw | create/d2d_bw | NVSHMEM/d2d_bw |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for measure, size in bw_keys:
            texts, values = zip(*(cell(cells, c, measure, size) for c in GPUIC))
            ptext, pvalue = cell(cells, PEER, measure, size)
            ftext, fvalue = cell(cells, "floor", STREAMING, size)
            print(f"| {measure} | {size_text(size)} | {texts[0]} | {texts[1]} | {ptext} | "
                  f"{ftext} | {ratio(values[0], fvalue)} | {ratio(values[1], fvalue)} | "
                  f"{ratio(pvalue, fvalue)} |")
    print()
    print("## floors")
    print()
    print("| floor | size | value | unit |")
    print("|---|---:|---:|---|")
    for (comp, measure, size), (value, unit) in cells.items():
        if comp == "floor":
            print(f"| {measure} | {size_text(size)} | "
                  f"{'n/a' if value is None else f'{value:.3f}'} | {unit} |")
    for (comp, measure, size), (value, unit) in cells.items():
        if measure == "error":
            print()
            print(f"{comp}: error: {unit}")
    present = {c for c, m, _ in cells if m != "error"}
    missing = [c for c in GPUIC + [PEER, "floor"] if c not in present]
    if missing:
        print()
        print("no rows from: " + ", ".join(missing) + " (see the run's output)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
