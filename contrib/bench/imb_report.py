#!/usr/bin/env python3
"""Side-by-side table of IMB timing runs (run-imb.sh): for each benchmark, mode and size of
8 B, 4 KiB, 64 KiB and 1 MiB, the best round's time of each component and gpuic / the best
peer.  Usage: imb_report.py LOGDIR gpuic PEER..."""
import glob
import re
import sys


def parse(path):
    """{(suite benchmark, mode, bytes): microseconds} of one IMB log (t_avg where IMB prints
    min/max/avg, t_pure for Truly_passive_put)."""
    rows, bench, mode, cols = {}, None, '', None
    for line in open(path, errors='replace'):
        m = re.match(r'# Benchmarking (\S+)', line)
        if m:
            bench, mode, cols = m.group(1), '', None
            continue
        m = re.match(r'#\s+MODE: (\S+)', line)
        if m:
            mode = m.group(1)
            continue
        if line.strip().startswith('#bytes'):
            cols = line.split()
            continue
        f = line.split()
        if not f:
            cols = None
        elif cols and f[0].isdigit():
            for name in ('t_avg[usec]', 't[usec]', 't_pure[usec]'):
                if name in cols and cols.index(name) < len(f):
                    try:
                        rows[(bench, mode, int(f[0]))] = float(f[cols.index(name)])
                    except ValueError:
                        pass
                    break
    return rows


def main():
    logdir, oscs = sys.argv[1], sys.argv[2:]
    best = {}
    for osc in oscs:
        b = {}
        for path in glob.glob(f'{logdir}/time-*-{osc}-r*.log'):
            suite = path.split('/time-')[1].split('-')[0]
            for (bench, mode, size), t in parse(path).items():
                k = (f'{suite} {bench}', mode, size)
                b[k] = min(b.get(k, float('inf')), t)
        best[osc] = b
    peers = [o for o in oscs if o != 'gpuic']
    print('| benchmark | mode | bytes | ' + ' | '.join(oscs) + ' | gpuic / best peer |')
    print('|---|---|---:|' + '---:|' * len(oscs) + '---:|')
    worse = total = 0
    for k in sorted(best.get('gpuic', {})):
        if k[2] not in (8, 4096, 65536, 1048576):
            continue
        vals = [best[o].get(k) for o in oscs]
        others = [best[p][k] for p in peers if best[p].get(k)]
        ratio = best['gpuic'][k] / min(others) if others else float('nan')
        total += 1
        worse += ratio > 1.2
        cells = ' | '.join('-' if v is None else f'{v:.2f}' for v in vals)
        print(f'| {k[0]} | {k[1] or "-"} | {k[2]} | {cells} | {ratio:.2f} |')
    print(f'\n{total} rows; gpuic above 1.2x the best peer in {worse}')


if __name__ == '__main__':
    main()
