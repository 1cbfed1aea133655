"""Throughput of the finite-class DEC solvers: matrix games and ac-DECs per second.

What: random K x M games A = Delta - lam I_f from K-armed Gaussian bandit classes (M random
mean vectors in [0, 1]^K, f a random member, lam log-uniform on [0.1, 100]) solved

* by ``e2d_jax.dec.finite.solve_offset`` vmapped over a batch (1 ... 10,000 games in one
  jitted call), with the interior-point solver (default, certified to 1e-8 relative in
  float64 / 1e-4 in float32) and with optimistic mirror-prox (``e2d_jax.dec.saddle``, to
  1e-4, at most 2000 iterations);
* one at a time by ``scipy.optimize.linprog`` (HiGHS), the reference;

and whole ac-DECs (eps^2 = log M / t, t log-uniform on [5, 1000]) by ``solve_acdec`` (the
library default, certified 1e-3, and the agents' budget ``AGENT_SOLVER``), against the
linprog reference over a 200-point lambda grid. Compile time is measured apart
(``lower().compile()``); run times are medians of ``--repeats`` calls. Accuracy columns: the
fraction of games whose certificate met the tolerance, and for the games the median / max
relative difference of the certified value to linprog's (first 200 games of the batch).

Run:  python benchmarks/finite_throughput.py [--k 5] [--m 30] [--repeats 5] [--json out.json]
  quick check:  python benchmarks/finite_throughput.py --batches 1,4 --acdec-batches 1,4 --repeats 1 \\
                    --linprog-games 4

Typical printout (2-core shared AMD EPYC x86-64 CPU, jax 0.10.2, K=5, M=30, medians of 5 calls):

    solver                                    batch compile_s     run_s  per_second    ok  med_err  max_err
    scipy linprog (HiGHS), one at a time          1      0.00    0.0012         830  1.00  0.0e+00  0.0e+00
    ipm float64                                   1      1.42    0.0003        3245  1.00  2.8e-11  2.8e-11
    ipm float64                                 100      1.74    0.0030       33677  1.00  1.7e-10  4.8e-09
    ipm float64                                1000      1.50    0.0256       39051  1.00  1.6e-10  4.8e-09
    ipm float64                               10000      1.49    0.3667       27270  1.00  1.6e-10  4.8e-09
    ipm float32 (rtol 1e-4)                    1000      1.91    0.0577       17326  0.97  4.8e-06  4.5e-01
    mirror-prox float64 (rtol 1e-4)            1000      0.77    1.3678         731  0.65  4.6e-05  1.9e-01
    ac-DEC: linprog over a 201-point lambda grid      1      0.00    0.2500           4  1.00  0.0e+00  0.0e+00
    ac-DEC default (certified 1e-3)             100      3.30    0.3244         308  0.76 -5.5e-04  8.8e-08
    ac-DEC AGENT_SOLVER                         100      3.75    0.0495        2020  0.32 -4.9e-05  4.9e-03

``med_err`` / ``max_err``: relative to max(|reference|, 1e-3); for the ac-DEC rows signed
(negative: below linprog's grid minimum, which a grid of 201 lams overestimates). The float32
and mirror-prox maxima come from games whose value is ~1e-3 while max|A| ~ 50: float32
certifies only to ~50 eps max|A| (the noise floor), mirror-prox stopped at 2000 iterations.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from e2d_jax.agents.e2d_finite import AGENT_SOLVER  # noqa: E402
from e2d_jax.dec import finite as dec  # noqa: E402
from e2d_jax.envs import finite  # noqa: E402


def random_games(n, k, m, seed=0):
    """(n, K, M) gaps, info and lam / eps2 draws from random Gaussian bandit classes."""
    rng = np.random.default_rng(seed)
    gaps, info = [], []
    for i in range(n):
        params = finite.multi_armed_bandit_class(jax.random.key(int(rng.integers(2**31))), k, m)
        model = params.model
        f = int(rng.integers(m))
        gaps.append(np.asarray(finite.gap_matrix(model.rewards)))
        info.append(np.asarray(finite.info_matrix(model, finite.model_at(model, f)[1])))
    lam = np.exp(rng.uniform(np.log(0.1), np.log(100.0), n))
    eps2 = np.log(m) / np.exp(rng.uniform(np.log(5), np.log(1000), n))
    return np.stack(gaps), np.stack(info), lam, eps2


def linprog_game(a):
    from scipy.optimize import linprog

    k, m = a.shape
    res = linprog(np.r_[np.zeros(k), 1.0], A_ub=np.c_[a.T, -np.ones(m)], b_ub=np.zeros(m),
                  A_eq=np.r_[np.ones(k), 0.0][None], b_eq=[1.0], bounds=[(0, None)] * k + [(None, None)],
                  method="highs")
    return float(res.fun)


def linprog_acdec(g, i, e2, num=200):
    hi = g.max() / e2
    lams = np.r_[0.0, np.geomspace(hi * 1e-5, hi, num)]
    return min(linprog_game(g - l * i) + l * e2 for l in lams)


def timed(fn, args, repeats):
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, float(np.median(times)), jax.device_get(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--m", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batches", default="1,10,100,1000,10000")
    ap.add_argument("--acdec-batches", default="1,10,100,1000")
    ap.add_argument("--linprog-games", type=int, default=200)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    acdec_batches = [int(b) for b in args.acdec_batches.split(",")]
    n = max(batches + acdec_batches)
    gaps, info, lam, eps2 = random_games(n, args.k, args.m)
    rows = []

    # Reference values for the accuracy columns (first 200 games).
    n_ref = min(200, n)
    ref_games = np.array([linprog_game(gaps[j] - lam[j] * info[j]) for j in range(n_ref)])
    times = []
    for j in range(min(args.linprog_games, n)):
        t0 = time.perf_counter()
        linprog_game(gaps[j] - lam[j] * info[j])
        times.append(time.perf_counter() - t0)
    rows.append({"solver": "scipy linprog (HiGHS), one at a time", "batch": 1, "compile_s": 0.0,
                 "run_s": float(np.median(times)), "per_second": 1.0 / float(np.median(times)),
                 "ok": 1.0, "med_err": 0.0, "max_err": 0.0})

    def game_rows(label, config, dtype, max_batch):
        for b in [x for x in batches if x <= max_batch]:
            fn = jax.vmap(lambda g, i, l: dec.solve_offset(g, i, l, config)[0])
            a = (jnp.asarray(gaps[:b], dtype), jnp.asarray(info[:b], dtype), jnp.asarray(lam[:b], dtype))
            compile_s, run_s, out = timed(fn, a, args.repeats)
            k = min(b, n_ref)
            err = np.abs(np.asarray(out.value[:k], np.float64) - ref_games[:k]) / np.maximum(np.abs(ref_games[:k]), 1e-3)
            rows.append({"solver": label, "batch": b, "compile_s": compile_s, "run_s": run_s, "per_second": b / run_s,
                         "ok": float(np.mean(np.asarray(out.status) == 0)), "med_err": float(np.median(err)),
                         "max_err": float(np.max(err))})
            print_row(rows[-1])

    print(f"K={args.k}, M={args.m}, {platform.processor() or platform.machine()}, jax {jax.__version__}")
    print(f"{'solver':40s} {'batch':>6s} {'compile_s':>9s} {'run_s':>9s} {'per_second':>11s} {'ok':>5s} "
          f"{'med_err':>8s} {'max_err':>8s}")
    print_row(rows[0])
    game_rows("ipm float64", dec.OFFSET_DEFAULTS, jnp.float64, 10**9)
    game_rows("ipm float32 (rtol 1e-4)", dataclasses.replace(dec.OFFSET_DEFAULTS, rtol=1e-4), jnp.float32, 10**9)
    game_rows("mirror-prox float64 (rtol 1e-4)",
              dataclasses.replace(dec.OFFSET_DEFAULTS, solver="mirror-prox", rtol=1e-4), jnp.float64, 1000)

    # Whole ac-DECs.
    n_ref_ac = min(20, n)
    t0 = time.perf_counter()
    ref_ac = np.array([linprog_acdec(gaps[j], info[j], eps2[j]) for j in range(n_ref_ac)])
    lp_ac = (time.perf_counter() - t0) / n_ref_ac
    rows.append({"solver": "ac-DEC: linprog over a 201-point lambda grid", "batch": 1, "compile_s": 0.0,
                 "run_s": lp_ac, "per_second": 1.0 / lp_ac, "ok": 1.0, "med_err": 0.0, "max_err": 0.0})
    print_row(rows[-1])
    for label, config in (("ac-DEC default (certified 1e-3)", dec.FiniteSolverConfig()), ("ac-DEC AGENT_SOLVER", AGENT_SOLVER)):
        for b in acdec_batches:
            fn = jax.vmap(lambda g, i, e: dec.solve_acdec(g, i, e, config)[0])
            a = (jnp.asarray(gaps[:b]), jnp.asarray(info[:b]), jnp.asarray(eps2[:b]))
            compile_s, run_s, out = timed(fn, a, max(1, args.repeats // 2) if b >= 1000 else args.repeats)
            k = min(b, n_ref_ac)
            # Positive: above the grid reference (worse); negative: below it (the grid misses).
            err = (np.asarray(out.value[:k]) - ref_ac[:k]) / ref_ac[:k]
            rows.append({"solver": label, "batch": b, "compile_s": compile_s, "run_s": run_s, "per_second": b / run_s,
                         "ok": float(np.mean(np.asarray(out.status) == 0)), "med_err": float(np.median(err)),
                         "max_err": float(np.max(err))})
            print_row(rows[-1])

    meta = {"machine": platform.platform(), "processor": platform.processor(), "cpus": jax.device_count(),
            "jax": jax.__version__, "k": args.k, "m": args.m, "repeats": args.repeats}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=2)


def print_row(r):
    print(f"{r['solver']:40s} {r['batch']:6d} {r['compile_s']:9.2f} {r['run_s']:9.4f} {r['per_second']:11.0f} "
          f"{r['ok']:5.2f} {r['med_err']:8.1e} {r['max_err']:8.1e}", flush=True)


if __name__ == "__main__":
    main()
