#!/usr/bin/env python3
"""belief_predictors.py DECISIONS.csv [POLICY] — how well simple predictors
of a task's next-slot cut rank the cut each task's next slot really made.

Reads the rows `bin/sched_bench --decisions FILE` writes (one per task per
judged decision of a predicting policy) and scores, per model and over all,
the policy's own prediction and a few stand-ins built only from what the
scheduler sees (slots measured, trials since the task's best last improved,
trials its last slot measured, its latency), and the expectation oracle
sched_bench adds (each task's mean cut over the model's other traces from
the same second of its tuning: it knows each task's average curve, which
no scheduler sees, and is a reference, not a stand-in): per decision the true cut of
the task the predictor ranks first over the best true cut (share), and
Spearman's rho of predicted against true cuts (ties at their mean rank),
as sched_bench's belief_share and belief_rho do. The rows come from one
policy's trajectory; a stand-in is judged at the same decisions, not by
the choices it would have made.
"""
import collections
import csv
import math
import sys


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x, y):
    if len(x) < 3:
        return None
    rx, ry = ranks(x), ranks(y)
    n = len(x)
    mx, my = sum(rx) / n, sum(ry) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def chance(r, c=16.0):
    """Chance the next slot improves: more trials per slot and a recent new
    best raise it (1 - exp(-trials / (c + stale)))."""
    return 1 - math.exp(-r["last_slot_trials"] / (c + r["stale_trials"]))


PREDICTORS = [
    ("the policy's prediction", lambda r: r["predicted_cut_ms"]),
    ("prediction x chance", lambda r: r["predicted_cut_ms"] * chance(r)),
    ("chance alone", chance),
    ("- stale trials", lambda r: -r["stale_trials"]),
    ("latency (count x L)", lambda r: r["latency_ms"]),
    # Not a stand-in: it reads the model's other traces (sched_bench's
    # expectation oracle: each task's average curve, not this draw).
    ("expectation oracle", lambda r: r["expected_cut_ms"]),
]


def score(decisions, f):
    shares, rhos = [], []
    for d in decisions:
        truth = [r["true_cut_ms"] for r in d]
        if max(truth) <= 0:
            continue
        pred = [f(r) for r in d]
        best = max(range(len(d)), key=lambda i: pred[i])
        shares.append(truth[best] / max(truth))
        rho = spearman(pred, truth)
        if rho is not None:
            rhos.append(rho)
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    return mean(shares), mean(rhos), len(shares)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    policy = sys.argv[2] if len(sys.argv) == 3 else "dynatune"
    groups = collections.OrderedDict()
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            if row["policy"] != policy:
                continue
            for k in ("predicted_cut_ms", "true_cut_ms", "latency_ms", "expected_cut_ms"):
                row[k] = float(row.get(k) or "nan")
            for k in ("measured_slots", "stale_trials", "last_slot_trials", "slot", "seed"):
                row[k] = int(row[k])
            key = (row["model"], row["trace"], row["seed"], row["slot"])
            groups.setdefault(key, []).append(row)
    by_model = collections.OrderedDict()
    for key, d in groups.items():
        by_model.setdefault(key[0], []).append(d)
    by_model["all models"] = list(groups.values())
    print(f"# {sys.argv[1]}, policy {policy}: share = true cut of the top-ranked task / best true cut; "
          "rho = Spearman, predicted vs true cut; means over decisions")
    print(f"{'predictor':28s} " + " ".join(f"{m:>22s}" for m in by_model))
    for name, f in PREDICTORS:
        if any(math.isnan(f(r)) for d in groups.values() for r in d):
            continue  # a column this file lacks (written before the expectation oracle)
        cells = []
        for m, decs in by_model.items():
            s, r, n = score(decs, f)
            cells.append(f"{s:.2f} / {r:+.2f} ({n:4d})")
        print(f"{name:28s} " + " ".join(f"{c:>22s}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
