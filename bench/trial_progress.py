#!/usr/bin/env python3
"""trial_progress.py [--task K] TRACE.csv... — how far each recorded run's
tasks got per trial, to tell a policy's effect on the tuner from the luck
of its draws.

Traces are bench/trace_convert.c's (of record_traces.sh runs or of any real
run's tuning.jsonl); a file named MODEL-POLICY-sSEED.csv is grouped under
POLICY. Per run it prints the mean over tasks of the best GFLOPS reached at
trial N (N = 25, 50, 100, 200; tasks with fewer trials left out, their count
in brackets) as a share of that task's best over every run given: if a
policy's slot pattern slowed the tuner (a batch cut at a slot's end, say),
its runs would sit below the others at equal trials. With --task K it also
prints task K's best after 2, 5, 10, 15, 20 and 30 s of its own tuning in
every run: the draw a replay of that run inherits.
"""
import collections
import os
import sys

TRIALS = (25, 50, 100, 200)
SECONDS = (2, 5, 10, 15, 20, 30)


def read(path):
    """{task: [(seconds, best_gflops)] in trial order}"""
    curves = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.startswith('#') or line.startswith('task,'):
                continue
            fields = line.rstrip('\n').split(',')
            curves[int(fields[0])].append((float(fields[2]), float(fields[4])))
    return curves


def policy_of(path):
    stem = os.path.basename(path)[:-len('.csv')]
    parts = stem.split('-')
    return '-'.join(parts[1:-1]) if len(parts) > 2 else stem


def main(argv):
    task = None
    if len(argv) > 2 and argv[1] == '--task':
        task, argv = int(argv[2]), argv[:1] + argv[3:]
    if len(argv) < 2:
        sys.exit('usage: trial_progress.py [--task K] TRACE.csv...')
    runs = [(p, read(p)) for p in argv[1:]]
    tasks = sorted({k for _, r in runs for k in r})
    top = {k: max(b for _, r in runs for _, b in r.get(k, [])) for k in tasks}
    by_policy = collections.defaultdict(list)
    for path, r in runs:
        cells = []
        for n in TRIALS:
            shares = [r[k][n - 1][1] / top[k] for k in tasks if len(r.get(k, [])) >= n and top[k] > 0]
            cells.append('%.3f (%2d)' % (sum(shares) / len(shares), len(shares)) if shares else '   -      ')
        by_policy[policy_of(path)].append((os.path.basename(path), cells))
    print('mean over tasks of best at trial N / the task\'s best over all runs')
    print('%-34s %s' % ('run', '  '.join('N = %-6d' % n for n in TRIALS)))
    for policy in sorted(by_policy):
        for name, cells in by_policy[policy]:
            print('%-34s %s' % (name, '  '.join(cells)))
    if task is not None:
        print('\ntask %d: best GFLOPS after %s s of its own tuning' % (task, ', '.join(map(str, SECONDS))))
        for path, r in runs:
            curve = r.get(task, [])
            row = []
            for s in SECONDS:
                seen = [b for t, b in curve if t <= s]
                row.append('%6.1f' % seen[-1] if seen else '     -')
            print('%-34s %s' % (os.path.basename(path), ' '.join(row)))


if __name__ == '__main__':
    main(sys.argv)
