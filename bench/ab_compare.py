#!/usr/bin/env python3
"""ab_compare.py DIR: reads DIR/old-*.jsonl and DIR/new-*.jsonl (one
`dtune measure --best --json` object per task and line, written by
scripts/ab_binaries.sh) and prints per task the median latency of each
side over the rounds, new / old, the config's knobs (old -> new where the
sides timed different configs), and the model sum (sum of count x median
latency)."""
import glob
import json
import statistics
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ab_compare.py DIR")
    d = sys.argv[1]
    lat, count, knobs, order = {}, {}, {}, []
    for side in ("old", "new"):
        files = sorted(glob.glob(f"{d}/{side}-*.jsonl"))
        if not files:
            sys.exit(f"ab_compare.py: no {d}/{side}-*.jsonl")
        for f in files:
            for n, line in enumerate(open(f), 1):
                try:
                    j = json.loads(line)
                except ValueError as e:
                    sys.exit(f"{f}:{n}: {e}")
                t = j["task"]
                if t not in count:
                    order.append(t)
                    count[t] = j["count"]
                knobs.setdefault(t, {})[side] = j["knobs"]
                if j["result"] == "ok":
                    lat.setdefault((t, side), []).append(j["latency_ms"])
    # one config a task, or (two runs' configs, scripts/ab_binaries.sh
    # OLD_RUN,NEW_RUN) the old side's and the new side's
    for t, k in knobs.items():
        knobs[t] = k["old"] if k.get("old") == k.get("new") else \
            f"{k.get('old', '-')} -> {k.get('new', '-')}"
    rounds = len(glob.glob(f"{d}/old-*.jsonl"))
    print(f"median latency over {rounds} rounds per side (ms)")
    print(f"{'task':22s} {'old':>9s} {'new':>9s} {'new/old':>8s}  knobs")
    sums = {"old": 0.0, "new": 0.0}
    left_out = []
    for t in order:
        v = {side: lat.get((t, side)) for side in ("old", "new")}
        if not v["old"] or not v["new"]:
            left_out.append(t)
            print(f"{t:22s} no ok result from "
                  f"{' and '.join(s for s in v if not v[s])}  {knobs[t]}")
            continue
        m = {side: statistics.median(v[side]) for side in v}
        for side in m:
            sums[side] += count[t] * m[side]
        print(f"{t:22s} {m['old']:9.4f} {m['new']:9.4f} "
              f"{m['new'] / m['old']:8.3f}  {knobs[t]}")
    if left_out:
        print(f"left out of the sum (no ok result on a side): {', '.join(left_out)}")
    print(f"model sum (count x latency): old {sums['old']:.3f} ms, "
          f"new {sums['new']:.3f} ms, new/old {sums['new'] / sums['old']:.3f}")


main()
