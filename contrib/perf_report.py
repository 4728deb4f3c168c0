#!/usr/bin/env python3
"""Writes OUTDIR/report.md (and its SVG plots) from what contrib/perf-report.sh measured into
OUTDIR: host-bench/results.csv, proxy-bench.txt, dissect/*, device/results.csv, stream/.

    perf_report.py OUTDIR

Plots are hand-written SVG (contrib/dissect/svgplot.py).  Ratios: gpuic / best peer; for
latency below 1 means gpuic is faster, for bandwidth above 1.
"""
import csv
import glob
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "dissect"))
sys.path.insert(0, os.path.join(HERE, "bench"))
import svgplot  # noqa: E402
from bench_report import read_results, best_peer, ratio, size_text, LATENCY  # noqa: E402

LAT_OPS = ["put", "get", "accumulate", "get_accumulate", "fetch_and_op", "compare_and_swap"]
BW_OPS = ["put_bw", "get_bw", "put_bibw", "get_bibw"]
SYNCS = ["lock_all", "lock", "fence", "pscw"]


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def write_svg(out, name, svg):
    if svg is None:
        return None
    with open(os.path.join(out, name), "w") as f:
        f.write(svg)
    return name


def fmt(v, metric):
    if v is None:
        return "–"
    return f"{v:.3f}" if metric == LATENCY else f"{v:,.0f}"


def host_section(out, lines):
    path = os.path.join(out, "host-bench", "results.csv")
    if not os.path.exists(path):
        lines += ["## Host RMA: gpuic vs Open MPI's osc components", "", "Not measured (see status).", ""]
        return
    cells, components, _, _ = read_results(path)
    peers = [c for c in components if c != "gpuic"]
    lines += ["## Host RMA: gpuic vs Open MPI's osc components", "",
              "`osc_bench` (two ranks, one node) under each component; latency is one operation "
              "plus its synchronization (µs), bandwidth in MB/s. Ratio = gpuic / best peer: "
              "**latency below 1 and bandwidth above 1 mean gpuic is faster.** Full tables: "
              "[host-bench/ratios.md](host-bench/ratios.md); raw rows: "
              "[host-bench/results.csv](host-bench/results.csv).", ""]
    for sync in SYNCS:
        rows = []
        for op in LAT_OPS + BW_OPS:
            sizes = sorted({k[3] for k in cells if k[1] == op and k[2] == sync})
            for size in sizes:
                g = cells.get(("gpuic", op, sync, size))
                if g is None:
                    continue
                peer, pc = best_peer(cells, peers, op, sync, size)
                r = ratio(g, pc)
                vals = [fmt(cells[(c, op, sync, size)].value, g.metric)
                        if (c, op, sync, size) in cells and cells[(c, op, sync, size)].value is not None
                        else (cells[(c, op, sync, size)].status() if (c, op, sync, size) in cells else "–")
                        for c in components]
                rows.append(f"| {op} | {size_text(size)} | " + " | ".join(vals) +
                            f" | {peer or '–'} | {'%.2f' % r if r is not None else '–'} |")
        if not rows:
            continue
        lines += [f"### sync: {sync}", "",
                  "| op | size | " + " | ".join(components) + " | best peer | ratio |",
                  "|---|---:|" + "---:|" * len(components) + "---|---:|"] + rows + [""]
    # geometric means per sync and metric
    lines += ["### Geometric mean of gpuic / best peer", "", "| sync | latency ratio | bandwidth ratio |",
              "|---|---:|---:|"]
    for sync in SYNCS:
        acc = {True: [], False: []}
        for (c, op, s, size), g in cells.items():
            if c != "gpuic" or s != sync:
                continue
            r = ratio(g, best_peer(cells, peers, op, s, size)[1])
            if r is not None and r > 0:
                acc[g.metric == LATENCY].append(math.log(r))
        gm = {k: (f"{math.exp(sum(v) / len(v)):.2f} ({len(v)} cells)" if v else "–")
              for k, v in acc.items()}
        lines.append(f"| {sync} | {gm[True]} | {gm[False]} |")
    lines.append("")
    # plots: lock_all, every component
    for op, metric_name, logy in (("put", "latency µs", True), ("get", "latency µs", True),
                                  ("put_bw", "bandwidth MB/s", True), ("get_bw", "bandwidth MB/s", True)):
        series = []
        for c in components:
            pts = [(k[3], v.value) for k, v in cells.items()
                   if k[0] == c and k[1] == op and k[2] == "lock_all" and v.value is not None]
            if pts:
                series.append((c, sorted(pts)))
        name = write_svg(out, f"host-{op}.svg", svgplot.line_chart(
            f"{op}, lock_all + flush, two ranks", series, "message size", metric_name, logy=logy))
        if name:
            lines += [f"![{op}]({name})", ""]


def proxy_section(out, lines):
    text = read(os.path.join(out, "proxy-bench.txt"))
    lines += ["## libgpuic descriptor path (proxy_bench)", "",
              "Host producers → ring → proxy thread → UCX loopback in one process, beside direct "
              "UCX puts ([proxy-bench.txt](proxy-bench.txt)).", ""]
    if not text:
        lines += ["Not measured (see status).", ""]
        return
    table = []
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
        if m:
            table.append(m.groups())
    if table:
        lines += ["| size | proxy Mmsg/s | proxy latency µs | direct Mmsg/s | direct latency µs | "
                  "proxy / direct latency |", "|---:|---:|---:|---:|---:|---:|"]
        for size, pr, pl, dr, dl in table:
            r = float(pl) / float(dl) if float(dl) > 0 else float("nan")
            lines.append(f"| {size_text(int(size))} | {pr} | {pl} | {dr} | {dl} | {r:.2f} |")
        lines.append("")
        svg = svgplot.line_chart("descriptor path vs direct UCX: latency", [
            ("proxy", [(int(t[0]), float(t[2])) for t in table]),
            ("direct", [(int(t[0]), float(t[4])) for t in table])], "message size", "latency µs")
        name = write_svg(out, "proxy-latency.svg", svg)
        if name:
            lines += [f"![proxy latency]({name})", ""]
    rest = [l for l in text.splitlines() if l.startswith(("producer", "proxy", "idle"))]
    if rest:
        lines += ["```"] + rest + ["```", ""]


def dissect_totals(md_text):
    """{op: (median µs, p99 µs)} from a gpuic-dissect markdown file."""
    res, op = {}, None
    for line in md_text.splitlines():
        m = re.match(r"### \w+ path, (\w+)", line)
        if m:
            op = m.group(1)
        m = re.match(r"\| total \|[^|]*\| ([\d.]+) \| ([\d.]+) \|", line)
        if m and op:
            res[op] = (float(m.group(1)), float(m.group(2)))
    return res


def dissect_section(out, lines, gpu):
    d = os.path.join(out, "dissect")
    lines += ["## Where the time goes: stage dissection", "",
              "`contrib/gpuic-dissect` stamps every operation at each stage (gpuic_trace.h) and "
              "reports per stage the median, the 99th percentile and the share of the summed "
              "totals; each bar splits one operation's time (the sum of its per-stage medians, printed beside it) into the stages' shares. One operation at a time, then wait for its "
              "completion, so these are latencies, not rates. Raw stamps: `dissect/*.csv`.", ""]
    variants = [("default", "host path, producer waits for the completion index (spins, then naps)"),
                ("poll", "host path, producer polls the completion counter (--wait poll)"),
                ("idle", "host path, put, 5 ms between operations: the proxy sleeps (--gap-us 5000)"),
                ("batch16", "host path, put, 16 WQEs per doorbell (--batch 16)"),
                ("1MiB", "host path, 1 MiB put and get")]
    totals = {}
    for label, _ in variants:
        md = read(os.path.join(d, f"dissect-host-{label}.md"))
        if md:
            totals[label] = dissect_totals(md)
    if totals:
        lines += ["### Host path: total per operation (median / p99 µs)", "",
                  "| op | napping producer | polling producer |", "|---|---:|---:|"]
        for op in ["put", "get", "atomic", "put_signal"]:
            cols = []
            for label in ("default", "poll"):
                t = totals.get(label, {}).get(op)
                cols.append(f"{t[0]:.3f} / {t[1]:.3f}" if t else "–")
            lines.append(f"| {op} | " + " | ".join(cols) + " |")
        lines.append("")
    for label, title in variants:
        md = read(os.path.join(d, f"dissect-host-{label}.md"))
        if not md:
            continue
        lines += [f"### {title}", ""]
        if os.path.exists(os.path.join(d, f"dissect-host-{label}.svg")):
            lines += [f"![{label}](dissect/dissect-host-{label}.svg)", ""]
        lines += [l.replace("### ", "#### ") for l in md.splitlines()] + [""]
    gpu_paths = {"p2p": "p2p path: device API loads and stores through CUDA IPC (no proxy)",
                 "proxy": "proxy path: GPU threads post entries into a device queue, the proxy "
                          "thread executes them (UCX loopback to host memory)"}
    for path, title in gpu_paths.items():
        md = read(os.path.join(d, f"dissect-{path}.md"))
        lines += [f"### {title}", ""]
        if md:
            if os.path.exists(os.path.join(d, f"dissect-{path}.svg")):
                lines += [f"![{path}](dissect/dissect-{path}.svg)", ""]
            lines += [l.replace("### ", "#### ") for l in md.splitlines()] + [""]
        else:
            log = read(os.path.join(d, f"{path}.log")) if gpu else None
            why = (log.strip().splitlines()[-1] if log and log.strip() else
                   "not measured: no GPU on this machine")
            lines += [f"{why}", ""]


def device_section(out, lines):
    path = os.path.join(out, "device", "results.csv")
    lines += ["## Device API (GPU)", ""]
    if not os.path.exists(path):
        lines += ["Not measured: no GPU on this machine (see status).", ""]
        return
    ratios = read(os.path.join(out, "device", "ratios.md"))
    lines += ["`contrib/bench/run-device-bench.sh`: gpuic's device API next to NVSHMEM on the same "
              "GPU(s), and the raw floors. Raw rows: [device/results.csv](device/results.csv).", ""]
    if ratios:
        lines += [ratios.strip(), ""]
    bw = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["measure"] == "put_bw":
                try:
                    bw.setdefault(row["component"], []).append((int(row["size"]), float(row["value"])))
                except ValueError:
                    pass
    name = write_svg(out, "device-put-bw.svg", svgplot.line_chart(
        "device put bandwidth (132 blocks)", [(c, sorted(v)) for c, v in bw.items()],
        "message size", "GB/s"))
    if name:
        lines += [f"![device put bandwidth]({name})", ""]
    reg = read(os.path.join(out, "device", "registers.txt"))
    if reg:
        lines += ["Register cost:", "", "```", reg.strip(), "```", ""]


def stream_section(out, lines):
    text = read(os.path.join(out, "stream", "stream_bench.txt"))
    if text:
        lines += ["## Stream benchmark", "", "```", text.strip()[-6000:], "```", ""]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    status = []
    for line in (read(os.path.join(out, "status.txt")) or "").splitlines():
        parts = line.split("|", 2)
        if len(parts) == 3:
            status.append(parts)
    gpu = any(s[0] == "device-bench" and s[1] != "skipped" for s in status)
    machine = read(os.path.join(out, "machine.txt")) or ""
    lines = ["# gpuic performance report", "",
             "Generated by `contrib/perf-report.sh` (regenerate with the command below); every "
             "number comes from the raw files next to this report.", "", "```", machine.strip(),
             "```", "", "| part | result | detail |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in status] + [""]
    host_section(out, lines)
    proxy_section(out, lines)
    dissect_section(out, lines, gpu)
    device_section(out, lines)
    stream_section(out, lines)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")


if __name__ == "__main__":
    main()
