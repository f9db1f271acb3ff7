#!/usr/bin/env python3
"""belief_emcee.py — dtune's belief model run by emcee, for bench/belief_bench.c.

Reads the model the C bench wrote (segment, horizon, best observed, prior
box, walkers' centre and spread, walkers, steps, burn-in, runs) and, for each
run, seeds numpy, draws the walkers in the same Gaussian ball (redrawing any
start outside the prior), times EnsembleSampler.run_mcmc with emcee's
default stretch move (a = 2), and prints one line per run:

    run <k> <milliseconds> <predictive mean> <predictive std> <mean acceptance>

The log posterior is the one in src/belief.c: Gaussian likelihood with noise
sigma, uniform prior on the box and on sigma in (0, 1], zero prior where the
log-power curve a / (1 + (x / e^b)^c) is not increasing or where its value at
the horizon is below the best observed. Only the sampler is timed; import,
parsing and the start are not.
"""
import sys
import time

import numpy as np

try:
    import emcee
except ImportError as exc:  # reported by the C bench, which carries on
    print("error emcee is not importable: %s" % exc)
    sys.exit(2)


def read_model(path):
    model = {}
    with open(path) as f:
        lines = [line.split() for line in f if line.strip()]
    for i, fields in enumerate(lines):
        if fields[0] == "points":
            data = np.array([[float(v) for v in row] for row in lines[i + 1:]])
            model["x"], model["y"] = data[:, 0], data[:, 1]
            break
        values = [float(v) for v in fields[1:]]
        model[fields[0]] = values if len(values) > 1 else values[0]
    return model


def make_log_prob(model):
    log_x, y = np.log(model["x"]), model["y"]
    n = len(y)
    lo, hi = np.array(model["lo"]), np.array(model["hi"])
    log_horizon, best = np.log(model["horizon"]), model["best"]

    def log_prob(theta):
        curve, sigma = theta[:3], theta[3]
        if np.any(curve < lo) or np.any(curve > hi) or not 0 < sigma <= 1:
            return -np.inf
        a, b, c = curve
        if not (a > 0 and c < 0):
            return -np.inf
        if a / (1 + np.exp(c * (log_horizon - b))) < best:
            return -np.inf
        f = a / (1 + np.exp(c * (log_x - b)))
        return -n * np.log(sigma) - 0.5 * np.sum((y - f) ** 2) / sigma ** 2

    return log_prob


def start_ball(model, log_prob, walkers):
    centre, scale = np.array(model["centre"]), np.array(model["scale"])
    p0 = np.empty((walkers, len(centre)))
    for k in range(walkers):
        for _ in range(1000):
            p0[k] = centre + scale * np.random.randn(len(centre))
            if np.isfinite(log_prob(p0[k])):
                break
        else:
            raise RuntimeError("walker %d found no start inside the prior" % k)
    return p0


def run(model, log_prob, seed):
    walkers, steps = int(model["walkers"]), int(model["steps"])
    burn_in = int(model["burn_in"])
    np.random.seed(seed)
    p0 = start_ball(model, log_prob, walkers)
    sampler = emcee.EnsembleSampler(walkers, p0.shape[1], log_prob)
    t0 = time.perf_counter()
    sampler.run_mcmc(p0, steps)
    ms = (time.perf_counter() - t0) * 1e3
    samples = sampler.get_chain(discard=burn_in, flat=True)
    a, b, c = samples[:, 0], samples[:, 1], samples[:, 2]
    at_horizon = a / (1 + np.exp(c * (np.log(model["horizon"]) - b)))
    return ms, at_horizon.mean(), at_horizon.std(), sampler.acceptance_fraction.mean()


def main():
    if len(sys.argv) != 2:
        print("error usage: belief_emcee.py MODEL_FILE")
        return 2
    model = read_model(sys.argv[1])
    log_prob = make_log_prob(model)
    print("emcee %s numpy %s" % (emcee.__version__, np.__version__))
    for k in range(int(model["runs"])):
        ms, mean, std, acceptance = run(model, log_prob, 1000 + k)
        print("run %d %.3f %.9g %.9g %.4f" % (k, ms, mean, std, acceptance))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
