#!/usr/bin/env python3
"""sched_paired.py CSV [--policy P] [--against A,B,...] — is a policy behind
a baseline, or do the two differ by less than the replay's noise?

Reads the rows `bin/sched_bench --csv FILE` writes
(model,trace,policy,seed,metric,value) and compares, per model and metric,
the policy (default dynatune) with each baseline run by run: both replayed
on the same trace with the same scheduler seed, so each pair shares the
trace's draw of every task's curve. Per pair the ratio policy ÷ baseline
(times to (1 + eps) L* and areas alike: above 1 = the policy later, or its
mean latency higher); per cell the median ratio, its 95 % interval by a
two-stage bootstrap (trace seeds resampled, then scheduler seeds within
each drawn trace: runs on one trace are not independent, so resampling
runs alone would make the interval too narrow), and the runs the policy
wins and loses. A cell reads `behind` where the whole interval lies above
1, `ahead` where it lies below 1, and is blank where the interval holds 1:
the median may lean either way, but the replay's three to five trace seeds
cannot tell the two policies apart there.

Deterministic: the bootstrap's generator has a fixed seed.
"""
import argparse
import collections
import csv
import math
import random
import statistics
import sys

METRICS = ("time_to_10pct", "time_to_5pct", "time_to_2pct", "time_to_1pct",
           "area_25", "area_50", "area_100")
BASELINES = "hazard,weighted_rr,gradient,round_robin"


def two_stage_median(pairs, rng, draws):
    """The 2.5 and 97.5 % quantiles of the median ratio over `draws`
    two-stage resamples of pairs: {trace: [ratio per scheduler seed]}."""
    traces = sorted(pairs)
    meds = []
    for _ in range(draws):
        sample = []
        for _ in traces:
            runs = pairs[rng.choice(traces)]
            sample.extend(rng.choice(runs) for _ in runs)
        meds.append(statistics.median(sample))
    meds.sort()
    return meds[int(0.025 * draws)], meds[min(draws - 1, int(0.975 * draws))]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", nargs="+", help="sched_bench --csv files (models may be split over files)")
    p.add_argument("--policy", default="dynatune")
    p.add_argument("--against", default=BASELINES, help=f"baselines (default {BASELINES})")
    p.add_argument("--draws", type=int, default=4000, help="bootstrap resamples (default 4000)")
    a = p.parse_args()
    if a.draws < 100:
        p.error("--draws: at least 100")
    values = collections.defaultdict(dict)  # (model, metric, policy) -> {(trace, seed): value}
    for name in a.csv:
        try:
            with open(name, newline="") as f:
                rows = csv.DictReader(f)
                want = {"model", "trace", "policy", "seed", "metric", "value"}
                if not rows.fieldnames or not want <= set(rows.fieldnames):
                    sys.exit(f"{name}:1:1: not a sched_bench CSV (columns {','.join(sorted(want))})")
                for line, r in enumerate(rows, start=2):
                    try:
                        v = float(r["value"])
                    except (TypeError, ValueError):
                        sys.exit(f"{name}:{line}:1: value '{r['value']}' is not a number")
                    values[(r["model"], r["metric"], r["policy"])][(r["trace"], r["seed"])] = v
        except OSError as e:
            sys.exit(f"{name}: {e.strerror}")
    models = sorted({k[0] for k in values})
    against = [b for b in a.against.split(",") if b]
    rng = random.Random(1)
    behind = collections.Counter()
    cells = collections.Counter()
    print(f"{a.policy} against each baseline, run by run (same trace, same scheduler seed): "
          f"median ratio {a.policy} / baseline [95 % two-stage bootstrap], runs won-lost;\n"
          f"above 1 = {a.policy} later (times) or slower on average (areas)\n")
    for metric in METRICS:
        print(f"{metric}")
        for model in models:
            ours = values.get((model, metric, a.policy), {})
            if not ours:
                continue
            cols = []
            for b in against:
                theirs = values.get((model, metric, b), {})
                pairs = collections.defaultdict(list)
                won = lost = 0
                for key in sorted(set(ours) & set(theirs)):
                    x, y = ours[key], theirs[key]
                    if math.isinf(x) and math.isinf(y):
                        continue
                    ratio = x / y if y > 0 else math.inf
                    pairs[key[0]].append(ratio)
                    won += ratio < 1
                    lost += ratio > 1
                if not pairs:
                    cols.append(f"{b} -")
                    continue
                med = statistics.median([r for runs in pairs.values() for r in runs])
                lo, hi = two_stage_median(pairs, rng, a.draws)
                verdict = "behind" if lo > 1 else "ahead" if hi < 1 else ""
                cells[metric] += 1
                behind[metric] += verdict == "behind"
                cols.append(f"{b} {med:.3f} [{lo:.3f}, {hi:.3f}] {won}-{lost} {verdict}".rstrip())
            print(f"  {model:14s} " + " | ".join(cols))
        print()
    print("cells behind (the whole interval above 1) / cells: " +
          ", ".join(f"{m} {behind[m]}/{cells[m]}" for m in METRICS))


if __name__ == "__main__":
    main()
