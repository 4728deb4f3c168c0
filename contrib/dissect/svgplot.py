"""Hand-written SVG charts for gpuic's reports: no plotting library needed.

stacked_bars(): one horizontal bar per row, split into stage segments (the dissection chart):
    shares of each bar, its total printed beside it.
line_chart(): series of (x, y) points on log-2 x and log-10 (or linear) y axes.
Both return the SVG document as a string.
"""
import math
from xml.sax.saxutils import escape

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac"]
FONT = 'font-family="sans-serif" font-size="12"'


def _text(x, y, s, anchor="start", extra=""):
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT} {extra}>{escape(str(s))}</text>'


def _fmt_ns(v):
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.2f} us"
    return f"{v:.0f} ns"


def stacked_bars(title, rows, stages, width=900, normalize=True):
    """rows: [(label, [value per stage])] in ns; stages: segment names (the legend).
    normalize: every bar spans the full width and its segments are shares of that bar (rows of
    very different totals stay readable); the bar's total is printed after it.  Otherwise one
    linear time axis for all bars."""
    left, right, top, bar_h, gap = 150, 110, 40, 26, 12
    legend_h = 22 * ((len(stages) + 3) // 4)
    height = top + len(rows) * (bar_h + gap) + 40 + legend_h
    vmax = max([sum(v) for _, v in rows] + [1e-9])
    span = width - left - right
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           _text(width / 2, 22, title, "middle", 'font-weight="bold"')]
    y = top
    for label, values in rows:
        total = sum(values)
        scale = span / (total if normalize and total > 0 else vmax)
        out.append(_text(left - 8, y + bar_h * 0.68, label, "end"))
        x = left
        for i, v in enumerate(values):
            w = max(v * scale, 0)
            if w > 0:
                out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{bar_h}" '
                           f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(stages[i])}: '
                           f'{_fmt_ns(v)}</title></rect>')
                if normalize and w >= 34:
                    out.append(_text(x + w / 2, y + bar_h * 0.68, f"{100 * v / total:.0f}%",
                                     "middle", 'fill="white"'))
            x += w
        out.append(_text(x + 6, y + bar_h * 0.68, _fmt_ns(total)))
        y += bar_h + gap
    axis_y = y + 4
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{width - right}" y2="{axis_y}" stroke="#333"/>')
    for k in range(6):
        x = left + span * k / 5
        tick = f"{20 * k}%" if normalize else _fmt_ns(vmax * k / 5)
        out.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="#333"/>')
        out.append(_text(x, axis_y + 16, tick, "middle"))
    ly = axis_y + 34
    for i, s in enumerate(stages):
        lx = left + (i % 4) * 180
        yy = ly + (i // 4) * 22
        out.append(f'<rect x="{lx}" y="{yy - 10}" width="12" height="12" '
                   f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(_text(lx + 16, yy, s))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _nice_log_ticks(lo, hi):
    ticks, e = [], math.floor(math.log10(lo))
    while 10 ** e <= hi * 1.0001:
        if 10 ** e >= lo * 0.9999:
            ticks.append(10 ** e)
        e += 1
    return ticks


def _size_label(x):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if x >= f:
            return f"{x / f:g} {unit}"
    return f"{x:g} B"


def line_chart(title, series, xlabel, ylabel, width=760, height=440, logy=True):
    """series: [(name, [(x, y), ...])] with x > 0 (sizes; log-2 axis) and y > 0 when logy."""
    left, right, top, bottom = 80, 170, 40, 60
    pts = [(x, y) for _, s in series for x, y in s if x > 0 and (y > 0 or not logy)]
    if not pts:
        return None
    xmin, xmax = min(p[0] for p in pts), max(p[0] for p in pts)
    ymin, ymax = min(p[1] for p in pts), max(p[1] for p in pts)
    if xmax == xmin:
        xmax = xmin * 2
    if logy:
        ymin, ymax = 10 ** math.floor(math.log10(ymin)), 10 ** math.ceil(math.log10(ymax))
    else:
        ymin, ymax = 0, ymax * 1.1 or 1
    pw, ph = width - left - right, height - top - bottom

    def px(x):
        return left + (math.log2(x) - math.log2(xmin)) / (math.log2(xmax) - math.log2(xmin)) * pw

    def py(y):
        if logy:
            f = (math.log10(y) - math.log10(ymin)) / (math.log10(ymax) - math.log10(ymin))
        else:
            f = (y - ymin) / (ymax - ymin)
        return top + ph - f * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           _text(left + pw / 2, 22, title, "middle", 'font-weight="bold"'),
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>']
    yticks = _nice_log_ticks(ymin, ymax) if logy else [ymin + (ymax - ymin) * k / 5 for k in range(6)]
    for t in yticks:
        y = py(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(_text(left - 6, y + 4, f"{t:g}", "end"))
    x = xmin
    step = max(1, round((math.log2(xmax) - math.log2(xmin)) / 8))
    while x <= xmax * 1.0001:
        out.append(f'<line x1="{px(x):.1f}" y1="{top + ph}" x2="{px(x):.1f}" y2="{top + ph + 4}" '
                   f'stroke="#333"/>')
        out.append(_text(px(x), top + ph + 18, _size_label(x), "middle"))
        x *= 2 ** step
    out.append(_text(left + pw / 2, height - 14, xlabel, "middle"))
    out.append(_text(18, top + ph / 2, ylabel, "middle",
                     f'transform="rotate(-90 18 {top + ph / 2:.1f})"'))
    for i, (name, s) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        good = sorted((x, y) for x, y in s if x > 0 and (y > 0 or not logy))
        if not good:
            continue
        path = " ".join(f"{'M' if k == 0 else 'L'}{px(x):.1f},{py(y):.1f}"
                        for k, (x, y) in enumerate(good))
        out.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in good:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}">'
                       f'<title>{escape(name)} {_size_label(x)}: {y:g}</title></circle>')
        ly = top + 10 + i * 20
        out.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 32}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(_text(left + pw + 38, ly + 4, name))
    out.append("</svg>")
    return "\n".join(out) + "\n"
