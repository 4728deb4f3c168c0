#!/usr/bin/env python3
"""Turns osc_bench's CSV into ratios.md (gpuic / best peer), a summary of the headline targets
on stdout, and, when matplotlib is importable, one plot per sync mode.

    bench_report.py RESULTS.CSV OUTDIR [--subject gpuic]

Latency ratios below 1 and bandwidth ratios above 1 mean the subject is faster.  The best peer
is the fastest other component that produced a number for the same (op, sync, size).
"""
import csv
import math
import os
import sys

LATENCY = "latency_us"
BANDWIDTH = "bandwidth_MBps"
# Pattern rows (osc_bench --patterns): per-iteration percentiles, and a throughput for fop_rate.
PATTERN_METRICS = ["p50_us", "p99_us", "max_us", "throughput_Mops"]
PATTERN_ORDER = ["put_flush", "get_flush", "fop_flush", "acc_sum", "gacc_sum", "fop_rate",
                 "pscw_round", "get_all", "get_nbr", "get_one_all", "put_all", "put_bidir",
                 "lock_put_unlock"]

# (label, op, sync, size, peer or None for the best peer)
HEADLINES = [
    ("put latency, lock_all+flush, 8 B", "put", "lock_all", 8, None),
    ("put latency, lock_all+flush, 1 MiB", "put", "lock_all", 1 << 20, None),
    ("get latency, lock_all+flush, 8 B", "get", "lock_all", 8, None),
    ("get latency, lock_all+flush, 1 MiB", "get", "lock_all", 1 << 20, None),
    ("fetch_and_op latency, lock_all+flush, 8 B", "fetch_and_op", "lock_all", 8, None),
    ("accumulate latency vs osc/ucx, lock_all+flush, 8 B", "accumulate", "lock_all", 8, "ucx"),
    ("put bandwidth, lock_all+flush, 1 MiB", "put_bw", "lock_all", 1 << 20, None),
    ("get bandwidth, lock_all+flush, 1 MiB", "get_bw", "lock_all", 1 << 20, None),
]

OP_ORDER = ["put", "get", "accumulate", "get_accumulate", "fetch_and_op", "compare_and_swap",
            "put_bw", "get_bw", "put_bibw", "get_bibw"]
SYNC_ORDER = ["fence", "lock", "lock_all", "pscw"]


class Cell:
    """One measurement: a number, or the reason there is none."""

    def __init__(self, metric, value, note):
        self.metric = metric
        self.value = None if value in ("NA", "") else float(value)
        self.note = note

    def status(self):
        """A one-word reason for a missing number: unsupported, error, crash, timeout, wrong."""
        if self.value is not None:
            return ""
        word = (self.note or "error").split()[0]
        return "wrong" if word.startswith("wrong") else word

    def text(self):
        if self.value is None:
            return self.status()
        return f"{self.value:.3f}" if self.metric == LATENCY else f"{self.value:.0f}"


def read_results(path):
    """{(component, op, sync, size): Cell} (best of repeated rows), the components in first-seen
    order, the rows that belong to no size (runs that died before measuring anything), and the
    pattern rows {(component, op, sync, size, metric): Cell}."""
    cells, components, failures, patterns = {}, [], [], {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            comp = row["component"]
            if comp not in components:
                components.append(comp)
            if not row["size"].isdigit():
                failures.append(row)
                continue
            if row["metric"] in PATTERN_METRICS:
                key = (comp, row["op"], row["sync"], int(row["size"]), row["metric"])
                cell = Cell(row["metric"], row["value"], row.get("note", ""))
                old = patterns.get(key)
                if old is None or (cell.value is not None and
                                   (old.value is None or better(cell.metric, cell.value, old.value))):
                    patterns[key] = cell
                continue
            key = (comp, row["op"], row["sync"], int(row["size"]))
            cell = Cell(row["metric"], row["value"], row.get("note", ""))
            # Several rounds measure a cell several times: keep the best number (the run least
            # disturbed by other work), and a number over any failure.
            old = cells.get(key)
            if old is None or (cell.value is not None and
                               (old.value is None or better(cell.metric, cell.value, old.value))):
                cells[key] = cell
    return cells, components, failures, patterns


def better(metric, a, b):
    return a > b if metric in (BANDWIDTH, "throughput_Mops") else a < b


def best_peer(cells, peers, op, sync, size):
    """(peer, Cell) of the fastest peer with a number, or (None, None)."""
    best = (None, None)
    for peer in peers:
        cell = cells.get((peer, op, sync, size))
        if cell is None or cell.value is None:
            continue
        if best[1] is None or better(cell.metric, cell.value, best[1].value):
            best = (peer, cell)
    return best


def ratio(subject_cell, peer_cell):
    if subject_cell is None or peer_cell is None:
        return None
    if subject_cell.value is None or peer_cell.value is None or peer_cell.value == 0:
        return None
    return subject_cell.value / peer_cell.value


def size_text(size):
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    if size >= 1 << 10 and size % (1 << 10) == 0:
        return f"{size >> 10} KiB"
    return f"{size} B"


def sorted_keys(cells, subject):
    def order(key):
        _, op, sync, size = key
        return (OP_ORDER.index(op) if op in OP_ORDER else 99,
                SYNC_ORDER.index(sync) if sync in SYNC_ORDER else 99, size)
    return sorted((k for k in cells if k[0] == subject), key=order)


def headline_rows(cells, subject, peers):
    rows = []
    for label, op, sync, size, fixed_peer in HEADLINES:
        mine = cells.get((subject, op, sync, size))
        if fixed_peer is not None:
            peer, theirs = fixed_peer, cells.get((fixed_peer, op, sync, size))
        else:
            peer, theirs = best_peer(cells, peers, op, sync, size)
        rows.append((label, mine, peer, theirs, ratio(mine, theirs)))
    return rows


def unit(metric):
    return "us" if metric == LATENCY else "MB/s"


def print_summary(rows, subject):
    print(f"Headline targets ({subject} vs best peer; latency: ratio < 1 is better for {subject},"
          f" bandwidth: ratio > 1 is better):")
    for label, mine, peer, theirs, r in rows:
        metric = (mine or theirs).metric if (mine or theirs) else LATENCY
        mine_text = f"{mine.text()} {unit(metric)}" if mine and mine.value is not None else (
            mine.status() if mine else "not run")
        theirs_text = (f"{peer} {theirs.text()} {unit(metric)}" if theirs and theirs.value is not None
                       else f"{peer or 'no peer'} " + (theirs.status() if theirs else "not run"))
        ratio_text = f"{r:.2f}" if r is not None else "-"
        print(f"  {label:<52} {subject} {mine_text:<14} | {theirs_text:<22} | ratio {ratio_text}")


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def pattern_rows(patterns, subject, peers):
    """[(op, sync, size, {metric: (mine, best peer, its Cell, ratio)}, {peer: {metric: Cell}})]
    for every pattern cell the subject has, in PATTERN_ORDER."""
    keys = sorted({k[1:4] for k in patterns if k[0] == subject},
                  key=lambda k: (PATTERN_ORDER.index(k[0]) if k[0] in PATTERN_ORDER else 99,
                                 k[1], k[2]))
    out = []
    for op, sync, size in keys:
        per_metric, per_peer = {}, {p: {} for p in peers}
        for metric in PATTERN_METRICS:
            mine = patterns.get((subject, op, sync, size, metric))
            if mine is None:
                continue
            best = (None, None)
            for peer in peers:
                cell = patterns.get((peer, op, sync, size, metric))
                per_peer[peer][metric] = cell
                if cell is None or cell.value is None:
                    continue
                if best[1] is None or better(metric, cell.value, best[1].value):
                    best = (peer, cell)
            per_metric[metric] = (mine, best[0], best[1], ratio(mine, best[1]))
        out.append((op, sync, size, per_metric, per_peer))
    return out


def pattern_text(cell):
    if cell is None:
        return "-"
    return cell.status() if cell.value is None else f"{cell.value:.3f}"


def write_pattern_section(lines, prows, subject, peers):
    if not prows:
        return
    lines += ["", "## Patterns: per-iteration p50 / p99 (us), ratio to the best peer", "",
              "osc_bench --patterns; sync column: synchronization/window flavor/ranks.  Each "
              "sample times a group of iterations (one when an iteration takes 2 us or more), "
              "divided by the group; every origin rank's samples together.  p50 and p99 ratios "
              "are each against the best peer for that percentile: below 1, " + subject +
              " is faster.", "",
              "| pattern | sync | size | " + subject + " p50 | " + subject + " p99 | " +
              " | ".join(f"{p} p50 / p99" for p in peers) + " | ratio p50 | ratio p99 | " +
              subject + " max |",
              "|---|---|---:|---:|---:|" + "---:|" * len(peers) + "---:|---:|---:|"]
    for op, sync, size, per_metric, per_peer in prows:
        def mine(m):
            return pattern_text(per_metric[m][0]) if m in per_metric else "-"

        def rt(m):
            r = per_metric[m][3] if m in per_metric else None
            return f"{r:.3g}" if r is not None else "-"
        peer_cols = [f"{pattern_text(per_peer[p].get('p50_us'))} / "
                     f"{pattern_text(per_peer[p].get('p99_us'))}" for p in peers]
        lines.append(f"| {op} | {sync} | {size_text(size)} | {mine('p50_us')} | {mine('p99_us')} | "
                     + " | ".join(peer_cols) + f" | {rt('p50_us')} | {rt('p99_us')} | "
                     f"{mine('max_us')} |")
    rate = [r for r in prows if "throughput_Mops" in r[3]]
    if rate:
        lines += ["", "Throughput (million operations per second over all ranks; ratio above 1: "
                  + subject + " is faster)", "",
                  "| pattern | sync | " + subject + " | " + " | ".join(peers) + " | ratio |",
                  "|---|---|---:|" + "---:|" * len(peers) + "---:|"]
        for op, sync, size, per_metric, per_peer in rate:
            r = per_metric["throughput_Mops"][3]
            lines.append(f"| {op} | {sync} | {pattern_text(per_metric['throughput_Mops'][0])} | "
                         + " | ".join(pattern_text(per_peer[p].get("throughput_Mops"))
                                      for p in peers)
                         + f" | {f'{r:.2f}' if r is not None else '-'} |")


def print_pattern_summary(prows, subject):
    if not prows:
        return
    print(f"Patterns ({subject} p50 and p99 per iteration, ratio to the best peer; < 1 is better):")
    for op, sync, size, per_metric, _ in prows:
        parts = []
        for m in ("p50_us", "p99_us", "throughput_Mops"):
            if m in per_metric:
                mine, peer, _, r = per_metric[m]
                parts.append(f"{m.split('_')[0]} {pattern_text(mine)} "
                             f"({'x' + format(r, '.3g') if r is not None else 'no peer'}"
                             f"{' vs ' + peer if peer else ''})")
        print(f"  {op:<16} {sync:<24} {size_text(size):>8}: " + ", ".join(parts))


def write_markdown(path, cells, subject, peers, failures, rows, command, prows=()):
    lines = [f"# osc_bench: {subject} vs Open MPI's osc components", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [
        f"Ratio = {subject} / best peer (the fastest of {', '.join(peers)} with a number).",
        f"**Latency (us): ratio < 1 means {subject} is faster. "
        f"Bandwidth (MB/s, 10^6 B/s): ratio > 1 means {subject} is faster.**",
        "Sync modes: fence = MPI_Win_fence around each batch; lock = MPI_Win_lock(SHARED)/unlock "
        "per batch; lock_all = one MPI_Win_lock_all, MPI_Win_flush per batch; pscw = "
        "post/start/complete/wait per batch.  A batch is one operation (latency) or 64 (bandwidth).",
        "Cells without a number say why: unsupported / error (the MPI call returned an error), "
        "wrong (the guarded try gave a wrong result), crash / timeout (the run died there).",
        "", "## Headline targets", "",
        "| target | " + subject + " | peer | peer value | ratio |", "|---|---:|---|---:|---:|"]
    for label, mine, peer, theirs, r in rows:
        lines.append(f"| {label} | {mine.text() if mine else 'not run'} | {peer or '-'} | "
                     f"{theirs.text() if theirs else '-'} | {f'{r:.2f}' if r is not None else '-'} |")

    # Per (op, sync): geometric mean of the ratios over sizes.
    lines += ["", "## Geometric mean of the ratio over sizes, per (op, sync)", "",
              "| op | metric | " + " | ".join(SYNC_ORDER) + " |",
              "|---|---|" + "---:|" * len(SYNC_ORDER)]
    for op in OP_ORDER:
        metric, row = None, []
        for sync in SYNC_ORDER:
            rs = []
            for key in sorted_keys(cells, subject):
                if key[1] == op and key[2] == sync:
                    metric = cells[key].metric
                    rs.append(ratio(cells[key], best_peer(cells, peers, op, sync, key[3])[1]))
            g = geomean(rs)
            row.append(f"{g:.2f}" if g is not None else "-")
        if metric:
            lines.append(f"| {op} | {'latency' if metric == LATENCY else 'bandwidth'} | "
                         + " | ".join(row) + " |")

    for metric, title in ((LATENCY, f"Latency (us): ratio < 1 is better for {subject}"),
                          (BANDWIDTH, f"Bandwidth (MB/s): ratio > 1 is better for {subject}")):
        lines += ["", f"## {title}", "",
                  "| op | sync | size | " + " | ".join([subject] + peers) + " | best peer | ratio |",
                  "|---|---|---:|" + "---:|" * (len(peers) + 1) + "---|---:|"]
        for key in sorted_keys(cells, subject):
            if cells[key].metric != metric:
                continue
            _, op, sync, size = key
            values = [cells[key].text()] + [
                cells[(p, op, sync, size)].text() if (p, op, sync, size) in cells else "-"
                for p in peers]
            peer, theirs = best_peer(cells, peers, op, sync, size)
            r = ratio(cells[key], theirs)
            lines.append(f"| {op} | {sync} | {size_text(size)} | " + " | ".join(values)
                         + f" | {peer or '-'} | {f'{r:.2f}' if r is not None else '-'} |")

    write_pattern_section(lines, prows, subject, peers)

    # Peer cells that gpuic has no row for still deserve a mention when they failed.
    if failures:
        lines += ["", "## Runs that died before measuring", ""]
        for row in failures:
            lines.append(f"- {row['component']} {row['op']} {row['sync']}: {row['note']}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_plots(outdir, cells, components):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: python3 has no matplotlib; no plots (apt-get install python3-matplotlib)")
        return []
    written = []
    panels = [("put", LATENCY), ("get", LATENCY), (None, LATENCY),
              ("put_bw", BANDWIDTH), ("get_bw", BANDWIDTH), ("put_bibw", BANDWIDTH)]
    atomics = ["accumulate", "get_accumulate", "fetch_and_op", "compare_and_swap"]
    for sync in SYNC_ORDER:
        if not any(k[2] == sync and c.value is not None for k, c in cells.items()):
            continue
        fig, axes = plt.subplots(2, 3, figsize=(16, 9))
        for ax, (op, metric) in zip(axes.flat, panels):
            if op is None:  # atomics: one bar per component at 8 bytes
                width = 0.8 / max(1, len(components))
                for i, comp in enumerate(components):
                    ys = [cells.get((comp, a, sync, 8)) for a in atomics]
                    ys = [c.value if c and c.value is not None else 0 for c in ys]
                    ax.bar([x + i * width for x in range(len(atomics))], ys, width, label=comp)
                ax.set_xticks([x + 0.4 - width / 2 for x in range(len(atomics))])
                ax.set_xticklabels(["acc", "get_acc", "fetch_op", "cas"])
                ax.set_title("atomics, 8 B (0 = not measured)")
                ax.set_ylabel("latency (us)")
                ax.legend(fontsize=8)
                continue
            for comp in components:
                pts = sorted((k[3], c.value) for k, c in cells.items()
                             if k[0] == comp and k[1] == op and k[2] == sync and c.value is not None)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=comp)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("size (bytes)")
            ax.set_ylabel("latency (us)" if metric == LATENCY else "bandwidth (MB/s)")
            ax.set_title(op)
            ax.grid(True, which="both", alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
        fig.suptitle(f"osc_bench, 2 ranks, sync mode {sync}")
        fig.tight_layout()
        path = os.path.join(outdir, f"osc_bench_{sync}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    csv_path, outdir = argv[1], argv[2]
    subject = argv[argv.index("--subject") + 1] if "--subject" in argv else "gpuic"
    command = os.environ.get("OSC_BENCH_COMMAND", "")
    cells, components, failures, patterns = read_results(csv_path)
    if subject not in components:
        print(f"note: no {subject} rows in {csv_path}; ratios need them")
        return 0
    peers = [c for c in components if c != subject]
    rows = headline_rows(cells, subject, peers)
    prows = pattern_rows(patterns, subject, peers)
    md = os.path.join(outdir, "ratios.md")
    write_markdown(md, cells, subject, peers, failures, rows, command, prows)
    print_summary(rows, subject)
    print_pattern_summary(prows, subject)
    crashed = sorted({(k[0], k[1], k[2]) for k, c in cells.items() if c.status() in ("crash", "timeout")})
    for comp, op, sync in crashed:
        print(f"  note: {comp} {op} {sync}: crashed or timed out (see results.csv)")
    plots = write_plots(outdir, cells, components)
    print(f"ratio table: {md}")
    for p in plots:
        print(f"plot: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
