#!/usr/bin/env python3
"""run_drift.py RUN_DIR [--block N] — did the machine's speed move during a
run?

A tuner measures each config once, and a task's best is the fastest of
those single measurements. If the machine runs faster for a while (a
boost before the cores have been busy long, a quiet neighbour on a shared
host), the best configs found then read faster than anything the same
tuner finds later, and faster than any re-measurement after the run:
best.json then overstates the run.

Reads RUN_DIR/tuning.jsonl in its own order (the order measurements were
made) and cuts it into blocks of N records (default 1000). Per block and
task it prints the block's fastest ok measurement over the task's fastest
in the whole run: 1.000 where the block holds the task's best. A tuner
that keeps searching near its best finds configs within a few per cent of
it in every block it works on; a task whose later blocks stay 10 % or more
above its best, while many configs are measured there, shows a machine
that was faster when the best was measured, not a search that got worse.
"""
import argparse
import collections
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run", help="a run directory (holding tuning.jsonl)")
    p.add_argument("--block", type=int, default=1000, help="records a block (default 1000)")
    p.add_argument("--min-trials", type=int, default=50,
                   help="show a task in a block only where it measured this many configs there (default 50)")
    a = p.parse_args()
    if a.block < 1 or a.min_trials < 1:
        p.error("--block and --min-trials: 1 or more")
    name = f"{a.run}/tuning.jsonl"
    recs = []
    try:
        with open(name) as f:
            for line_no, line in enumerate(f, start=1):
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{name}:{line_no}:{e.colno}: {e.msg}")
                if r.get("type") == "measure" and r.get("result") == "ok" and r.get("latency_ms", 0) > 0:
                    recs.append(r)
    except OSError as e:
        sys.exit(f"{name}: {e.strerror}")
    if not recs:
        sys.exit(f"{name}: no ok measurements")
    best = collections.defaultdict(lambda: float("inf"))
    for r in recs:
        best[r["task"]] = min(best[r["task"]], r["latency_ms"])
    print(f"{name}: {len(recs)} ok measurements; per block of {a.block} (in the order they were made): "
          f"each task's fastest there / its fastest in the run (measured configs), "
          f"tasks with {a.min_trials} or more there")
    for start in range(0, len(recs), a.block):
        block = recs[start:start + a.block]
        fastest = collections.defaultdict(lambda: float("inf"))
        count = collections.Counter()
        for r in block:
            fastest[r["task"]] = min(fastest[r["task"]], r["latency_ms"])
            count[r["task"]] += 1
        cols = [f"{t} {fastest[t] / best[t]:.3f} ({count[t]})" for t in sorted(fastest)
                if count[t] >= a.min_trials]
        slots = [r.get("slot", -1) for r in block]
        print(f"  records {start + 1}-{start + len(block)} (slots {min(slots)}-{max(slots)}): "
              + (", ".join(cols) if cols else "-"))


if __name__ == "__main__":
    main()
