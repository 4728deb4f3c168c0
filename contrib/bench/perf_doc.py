#!/usr/bin/env python3
"""Rewrites the generated tables of docs/performance.md from the benchmark CSVs.

    perf_doc.py DOC [--host-csv F] [--device-csv F] [--host-run TEXT] [--device-run TEXT]

Each table lies between `<!-- BEGIN generated: NAME -->` and `<!-- END generated: NAME -->`;
NAME is host (from run-bench.sh's results.csv), device, proxy or stream (from
run-device-bench.sh's results.csv).  Everything outside the markers is left as it is.  A block's
first line says which run made it ("Run: TEXT."): --host-run / --device-run replace that text,
otherwise the block keeps the one it has, so running this twice on the same CSVs changes nothing.

Host ratios are gpuic / each of osc/ucx, osc/rdma, osc/pt2pt (the read-in, best-of-repeats and
best-peer logic is bench_report.py's).  Device ratios are gpuic / NVSHMEM, or the proxy path /
the GPU -> CPU -> GPU floor.  A device measure with several rows (several runs appended to one
CSV) shows their range; its ratio compares the best of each side.
"""
import csv
import os
import re
import sys
import textwrap

sys.dont_write_bytecode = True  # no __pycache__ beside bench_report.py in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_report import (HEADLINES, LATENCY, best_peer, pattern_rows, pattern_text,  # noqa: E402
                          read_results, size_text)

BEGIN = "<!-- BEGIN generated: {} -->"
END = "<!-- END generated: {} -->"
NOTE = "<!-- made by contrib/perf-doc.sh from the CSV it names: change those, not this block -->"
WIDTH = 100  # the document's line length


def rel(path):
    """The path as the document names it: relative to the repository when inside it."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = os.path.abspath(path)
    return os.path.relpath(p, top) if p.startswith(top + os.sep) else p


def ratio_text(r):
    if r is None:
        return "-"
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def fill(text):
    return textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False)


# --- host ---------------------------------------------------------------------------------------

def cell_text(cell, metric):
    if cell is None:
        return "-"
    if cell.value is None:
        return cell.status()
    return f"{cell.value:.3f}" if metric == LATENCY else f"{cell.value:,.0f}"


HOST_FIELDS = ["component", "op", "sync", "size", "metric", "value", "note"]
DEVICE_FIELDS = ["component", "measure", "size", "value", "unit"]


def check_header(path, fields, want):
    if fields != want:
        sys.exit(f"perf_doc: {path}: columns {','.join(fields or [])}, expected {','.join(want)}")


def no_rows(out, what):
    """out, or a line saying the CSV has none of what the table shows (header and rule only)."""
    return out[:-2] + [f"No {what} in this CSV."] if out[-1].startswith("|---") else out


def host_lines(csv_path):
    with open(csv_path, newline="") as f:
        check_header(csv_path, csv.DictReader(f).fieldnames, HOST_FIELDS)
    cells, components, failures, patterns = read_results(csv_path)
    subject = "gpuic"
    peers = [c for c in components if c != subject]
    out = [f"Rows: `{rel(csv_path)}`.  Latency in µs (one operation and its synchronization; "
           "ratio below 1: gpuic is faster), bandwidth in MB/s (ratio above 1: gpuic is faster). "
           "A peer's cell is its value and, in parentheses, gpuic / that value.", "",
           "| measure | gpuic | " + " | ".join(f"osc/{p}" for p in peers) + " | best peer |",
           "|---|---:|" + "---:|" * len(peers) + "---|"]
    for label, op, sync, size, _ in HEADLINES:
        mine = cells.get((subject, op, sync, size))
        metric = mine.metric if mine else LATENCY
        cols = []
        for p in peers:
            theirs = cells.get((p, op, sync, size))
            r = None
            if mine and theirs and mine.value is not None and theirs.value:
                r = mine.value / theirs.value
            cols.append(cell_text(theirs, metric) + (f" ({ratio_text(r)})" if r is not None else ""))
        peer, _ = best_peer(cells, peers, op, sync, size)
        out.append(f"| {label} | {cell_text(mine, metric)} | " + " | ".join(cols)
                   + f" | {peer or '-'} |")

    prows = pattern_rows(patterns, subject, peers)
    if prows:
        out += ["", "Patterns (`osc_bench --patterns`; sync: synchronization / window flavour / "
                "ranks): gpuic's per-iteration p50 and p99 in µs, and gpuic / each peer's p50 and "
                "p99 (below 1: gpuic is faster).", "",
                "| pattern | sync | size | gpuic p50 | gpuic p99 | "
                + " | ".join(f"/ {p} p50, p99" for p in peers) + " |",
                "|---|---|---:|---:|---:|" + "---:|" * len(peers)]
        for op, sync, size, per_metric, per_peer in prows:
            mine = {m: per_metric[m][0] for m in per_metric}
            cols = []
            for p in peers:
                parts = []
                for m in ("p50_us", "p99_us"):
                    a, b = mine.get(m), per_peer[p].get(m)
                    parts.append(ratio_text(a.value / b.value) if a and b and a.value is not None
                                 and b.value else (b.status() if b and b.value is None else "-"))
                cols.append(", ".join(parts))
            out.append(f"| {op} | {sync} | {size_text(size)} | {pattern_text(mine.get('p50_us'))} | "
                       f"{pattern_text(mine.get('p99_us'))} | " + " | ".join(cols) + " |")
        rate = [r for r in prows if "throughput_Mops" in r[3]]
        if rate:
            out += ["", "Throughput of the rate patterns, million operations per second over all "
                    "ranks (gpuic / peer in parentheses; above 1: gpuic is faster):", "",
                    "| pattern | sync | gpuic | " + " | ".join(f"osc/{p}" for p in peers) + " |",
                    "|---|---|---:|" + "---:|" * len(peers)]
            for op, sync, size, per_metric, per_peer in rate:
                mine = per_metric["throughput_Mops"][0]
                cols = []
                for p in peers:
                    c = per_peer[p].get("throughput_Mops")
                    r = (f" ({ratio_text(mine.value / c.value)})" if c and c.value and mine.value is not None
                         else "")
                    cols.append(pattern_text(c) + r)
                out.append(f"| {op} | {sync} | {pattern_text(mine)} | " + " | ".join(cols) + " |")

    lost = {}
    for (comp, op, sync, _), cell in cells.items():
        if cell.value is None and cell.status() in ("crash", "timeout", "error", "wrong"):
            lost.setdefault((comp, op, cell.note or cell.status()), set()).add(sync)
    for row in failures:
        lost.setdefault((row["component"], row["op"], row["note"]), set()).add(row["sync"])
    if lost:
        out += ["", "Cells without a number: " + "; ".join(
            f"osc/{c} {op} ({', '.join(sorted(s))}): {why}" if c != subject else
            f"gpuic {op} ({', '.join(sorted(s))}): {why}"
            for (c, op, why), s in sorted(lost.items())) + "."]
    return out


# --- device -------------------------------------------------------------------------------------

class Device:
    """results.csv of run-device-bench.sh: {(component, measure, size): [values]}, units."""

    def __init__(self, path):
        self.path = path
        self.values, self.units = {}, {}
        with open(path, newline="") as f:
            rows = csv.DictReader(f)
            check_header(path, rows.fieldnames, DEVICE_FIELDS)
            for row in rows:
                try:
                    v = float(row["value"])
                except ValueError:
                    continue
                key = (row["component"], row["measure"], int(row["size"]))
                self.values.setdefault(key, []).append(v)
                self.units[key] = row["unit"]

    def get(self, comp, measure, size=8):
        return self.values.get((comp, measure, size))

    def best(self, comp, measure, size=8):
        vs = self.get(comp, measure, size)
        if not vs:
            return None
        rate = self.units[(comp, measure, size)] in ("Mmsg/s", "GB/s")
        return max(vs) if rate else min(vs)

    def text(self, comp, measure, size=8, suffix=True):
        vs = self.get(comp, measure, size)
        if not vs:
            return "-"
        unit = self.units[(comp, measure, size)]
        digits = 1 if unit == "Mmsg/s" or (unit == "GB/s" and max(vs) >= 10) else 3
        lo, hi = f"{min(vs):,.{digits}f}", f"{max(vs):,.{digits}f}"
        body = lo if lo == hi else f"{lo}–{hi}"
        return f"{body} {'µs' if unit == 'us' else unit}" if suffix else body

    def ratio(self, a, b):
        """best(a) / best(b) for (comp, measure, size) tuples; None when either is missing."""
        x, y = self.best(*a), self.best(*b)
        return x / y if x is not None and y else None

    def msg_rates(self, comp):
        # the rate rows only, not the proxy counters beside them (msg_rate_1x32_entries, ...)
        keys = [k for k in self.values
                if k[0] == comp and re.fullmatch(r"msg_rate_\d+x\d+", k[1])]

        def shape(k):
            b, t = k[1][len("msg_rate_"):].split("x")
            return int(b) * int(t), int(b)
        return [k[1] for k in sorted(keys, key=shape)]

    def sizes(self, comp, measure):
        return sorted(k[2] for k in self.values if k[0] == comp and k[1] == measure)


def joined(d, comp, measures):
    """comp's values of measures as "a / b / c", or "-" when it has none of them."""
    texts = [d.text(comp, m, suffix=False) for m in measures]
    return "-" if all(t == "-" for t in texts) else " / ".join(texts)


def threads_text(measure):
    return measure[len("msg_rate_"):].replace("x", "×")


# (label, gpuic measure, NVSHMEM measure)
P2P_ROWS = [
    ("put + flush, target resolved once", "put_flush_resolved", "put_flush"),
    ("put + flush by rank", "put_flush", "put_flush"),
    ("get, resolved", "get_resolved", "get"),
    ("get by rank", "get", "get"),
    ("fetch-and-add by rank", "fetch_add", "fetch_add"),
    ("put-with-signal ping-pong, one way, resolved", "pingpong_signal_resolved", "pingpong_signal"),
    ("put-with-signal ping-pong, one way, by rank", "pingpong_signal", "pingpong_signal"),
]

FLOORS = [
    ("CUDA IPC store + system fence ping-pong, one way", "ipc_store_pingpong"),
    ("GPU → CPU → GPU round trip through mapped pinned memory", "gpu_cpu_gpu_rtt"),
    ("host `cudaMemcpy` of 8 bytes", "cudaMemcpy_8B"),
    ("a store through the IPC mapping", "dissect_store"),
    ("store + `fence.acq_rel.gpu`", "dissect_store_fence_acqrel_gpu"),
    ("store + `__threadfence()`", "dissect_store_threadfence"),
    ("store + `fence.acq_rel.sys`", "dissect_store_fence_acqrel_sys"),
    ("store + `fence.release.gpu` (what a flush uses on sm_90)", "dissect_store_fence_release_gpu"),
    ("store + `fence.release.sys`", "dissect_store_fence_release_sys"),
    ("store + `fence.acq_rel.gpu` + a load of the target's entry", "dissect_store_acqrel_gpu_desc_load"),
    ("store + `fence.release.gpu` + a load of the target's entry",
     "dissect_store_release_gpu_desc_load"),
    ("the API's checks by rank (the target's entry of the description)", "dissect_resolve_only"),
    ("`MPIX_Put_device` by rank, no flush", "dissect_api_put_noflush"),
]


def device_lines(d):
    out = [f"Rows: `{rel(d.path)}`.  8 bytes unless said; ratio = gpuic / NVSHMEM (below 1: gpuic "
           "is faster; for message rate and bandwidth above 1)."]
    rows = []
    for label, mine, theirs in P2P_ROWS:
        if d.get("gpuic", mine):
            rows.append((label, d.text("gpuic", mine), d.text("nvshmem", theirs),
                         ratio_text(d.ratio(("gpuic", mine, 8), ("nvshmem", theirs, 8)))))
    rates = d.msg_rates("gpuic")
    if rates:
        rows.append(("message rate, 8-byte puts, " + " / ".join(threads_text(m) for m in rates)
                     + " threads (M msg/s)",
                     joined(d, "gpuic", rates), joined(d, "nvshmem", rates),
                     " / ".join(ratio_text(d.ratio(("gpuic", m, 8), ("nvshmem", m, 8)))
                                for m in rates)))
    for size in d.sizes("gpuic", "put_bw")[-2:]:
        rows.append((f"put bandwidth, {size_text(size)} (132 blocks)", d.text("gpuic", "put_bw", size),
                     d.text("nvshmem", "put_bw", size),
                     ratio_text(d.ratio(("gpuic", "put_bw", size), ("nvshmem", "put_bw", size)))))
    out += ["", "| measure | gpuic | NVSHMEM | ratio |", "|---|---:|---:|---:|"]
    out += [f"| {a} | {b} | {c} | {r} |" for a, b, c, r in rows]
    out = no_rows(out, "`gpuic` rows")
    floors = [(label, d.text("floor", m)) for label, m in FLOORS if d.get("floor", m)]
    if floors:
        out += ["", "Floors measured in the same run:", "", "| floor | time |", "|---|---:|"]
        out += [f"| {a} | {b} |" for a, b in floors]
    return out


# (label, measure); the proxy rows' peers are the floor and the P2P path (gpuic rows)
PROXY_ROWS = [
    ("put + flush, target resolved once", "put_flush_resolved"),
    ("put + flush by rank", "put_flush"),
    ("put-with-signal ping-pong, one way, resolved", "pingpong_signal_resolved"),
    ("get, resolved", "get_resolved"),
    ("get by rank", "get"),
    ("fetch-and-add by rank", "fetch_add"),
    ("one put of 16 in a row, resolved", "split_put_resolved"),
    ("flush of 16 puts, resolved", "split_flush_16_resolved"),
]


def proxy_lines(d):
    floor = ("floor", "gpu_cpu_gpu_rtt", 8)
    out = [f"Rows: `{rel(d.path)}` (component `proxy`: `device_bench --host-window`).  8 bytes; "
           f"ratio = proxy path / the GPU → CPU → GPU round trip of the same run "
           f"({d.text(*floor)}).", ""]
    forced = any(k[0] == "proxy_gpuwin" for k in d.values)
    head = "| measure | proxy path | ratio to the floor | P2P path (GPU window) |"
    rule = "|---|---:|---:|---:|"
    if forced:
        head += " proxy forced on the GPU window |"
        rule += "---:|"
    out += [head, rule]
    for label, m in PROXY_ROWS:
        if not d.get("proxy", m):
            continue
        line = (f"| {label} | {d.text('proxy', m)} | {ratio_text(d.ratio(('proxy', m, 8), floor))} | "
                f"{d.text('gpuic', m)} |")
        if forced:
            line += f" {d.text('proxy_gpuwin', m)} |"
        out.append(line)
    rates = d.msg_rates("proxy")
    if rates:
        line = ("| message rate, 8-byte puts, " + " / ".join(threads_text(m) for m in rates)
                + " threads (M msg/s) | " + joined(d, "proxy", rates)
                + " | | " + joined(d, "gpuic", rates) + " |")
        out.append(line + (" |" if forced else ""))
    for size in d.sizes("proxy", "put_bw")[-1:]:
        line = (f"| put bandwidth, {size_text(size)} | {d.text('proxy', 'put_bw', size)} | | "
                f"{d.text('gpuic', 'put_bw', size)} |")
        out.append(line + (" |" if forced else ""))
    return no_rows(out, "`proxy` rows")


# (label, gpuic measure, peer component, peer measure)
STREAM_ROWS = [
    ("enqueued put", "stream_put", "nvshmem", "stream_put"),
    ("enqueued put + flush", "stream_put_flush", "nvshmem", "stream_put_flush"),
    ("enqueued fence epoch", "stream_fence_epoch", None, None),
    ("enqueued put + fence epoch", "stream_put_fence_epoch", "nvshmem", "stream_put_fence_epoch"),
    ("captured epoch replayed from a CUDA graph", "graph_epoch", "nvshmem", "graph_epoch"),
    ("captured lock_all / put / flush / unlock_all epoch", "graph_lock_epoch", None, None),
]

STREAM_FLOORS = [
    ("host-driven loop: kernel, `cudaStreamSynchronize`, `MPI_Put`, `MPI_Win_flush`", "host",
     "host_put_flush"),
    ("host-driven loop with `MPI_Win_fence`", "host", "host_put_fence_epoch"),
    ("`cudaMemcpyAsync` of 8 bytes", "floor", "cudaMemcpyAsync_8B"),
    ("empty kernel, back to back, plain", "floor", "kernel_launch"),
    ("empty kernel, back to back, PDL", "floor", "kernel_launch_pdl"),
    ("`cuStreamWriteValue32`, back to back", "floor", "stream_write_value"),
]


def stream_lines(d):
    out = [f"Rows: `{rel(d.path)}` (`stream_bench` and NVSHMEM's `nvshmem_stream_bench`).  Per "
           "operation or epoch, 8 bytes; ratio = gpuic / NVSHMEM's on-stream calls "
           "(`putmem_on_stream`, `quiet_on_stream`, `barrier_all_on_stream`).", "",
           "| measure | gpuic | NVSHMEM on-stream | ratio |", "|---|---:|---:|---:|"]
    for label, m, pc, pm in STREAM_ROWS:
        if not d.get("gpuic", m):
            continue
        peer = d.text(pc, pm) if pc else ""
        r = ratio_text(d.ratio(("gpuic", m, 8), (pc, pm, 8))) if pc else ""
        out.append(f"| {label} | {d.text('gpuic', m)} | {peer} | {r} |")
    out = no_rows(out, "`stream_bench` rows")
    loop = d.best("host", "host_put_fence_epoch") or d.best("host", "host_put_flush")
    graph = d.best("gpuic", "graph_epoch")
    floors = [(label, d.text(c, m)) for label, c, m in STREAM_FLOORS if d.get(c, m)]
    if floors:
        out += ["", "| reference | time |", "|---|---:|"] + [f"| {a} | {b} |" for a, b in floors]
    if loop and graph:
        out += ["", f"Graph-replayed epoch / host-driven loop: {graph / loop:.2f}."]
    return out


# --- the document -------------------------------------------------------------------------------

def replace_block(text, name, body, run):
    """text with the block NAME holding body; run: the "Run:" paragraph's text, or None to keep
    the one the block has.  Prose lines are wrapped to the document's width, table rows not."""
    begin, end = BEGIN.format(name), END.format(name)
    m = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, re.S)
    if not m:
        sys.exit(f"perf_doc: no '{begin}' ... '{end}' block in the document")
    if run is None:
        para = m.group(1).split("\n\n")
        old = [p for p in para if p.startswith("Run: ")]
        if old:
            run = " ".join(old[0].split())[len("Run: "):].rstrip(".")
    lines = [NOTE] + (fill(f"Run: {run}.") if run else []) + [""]
    for line in body:
        lines += fill(line) if line and not line.startswith("|") else [line]
    return text[:m.start()] + begin + "\n" + "\n".join(lines).rstrip() + "\n" + text[m.end() - len(end):]


def main(argv):
    args = {"--host-csv": None, "--device-csv": None, "--host-run": None, "--device-run": None}
    doc = None
    i = 1
    while i < len(argv):
        if argv[i] in args and i + 1 < len(argv):
            args[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i].startswith("-"):
            sys.exit(__doc__)
        else:
            doc = argv[i]
            i += 1
    if doc is None:
        sys.exit(__doc__)
    with open(doc) as f:
        text = f.read()
    if args["--host-csv"]:
        text = replace_block(text, "host", host_lines(args["--host-csv"]), args["--host-run"])
    if args["--device-csv"]:
        d = Device(args["--device-csv"])
        for name, make in (("device", device_lines), ("proxy", proxy_lines), ("stream", stream_lines)):
            text = replace_block(text, name, make(d), args["--device-run"])
    with open(doc, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
