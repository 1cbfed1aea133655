"""DEC solver throughput and accuracy: batched JAX solvers vs cvxpy and a plain NumPy FW.

What it measures, on random revealing semi-bandits of the paper's two shapes (Exp. 1: d=3,
K=10; Exp. 2: d=30, K=10), f_hat = f* + N(0, 0.3^2 I), eps^2 log-uniform in [d/2000, d/5]
and lambda log-uniform in [0.1, 10], float32 for JAX:

* fixed-lambda solves per second (the offset DEC, Appendix 'Convex Program for Fixed
  lambda') against the batch size, for smoothed Frank-Wolfe (the paper's 100 steps) and the
  mirror-prox saddle solver (default tolerance);
* full ac-DEC solves per second against the batch size, for the exact saddle solver
  (``linear_acdec``'s default), the FW + lambda-grid mode with the paper's budget (100 FW
  steps x 50 lambdas) and with its default budget;
* the same problems one at a time by cvxpy/Clarabel (the fixed-lambda program as a
  second-order-cone program; the ac-DEC by a 30-point lambda grid plus refinement, as in the
  tests) and by a plain NumPy smoothed FW (100 steps; for the ac-DEC on a 50-point lambda
  grid like the paper's code);
* accuracy: relative excess of each solver's mu (its exact objective, min over lambda)
  over the cvxpy reference optimum, median and 90th percentile.

Compile time is measured apart (ahead-of-time ``lower().compile()``); every time is the
median over ``--repeats`` runs.

The cvxpy references are the tests' (``tests/helpers/reference.py``; cvxpy and Clarabel must
be installed).

Run:  python benchmarks/fw_throughput.py [--quick] [--shapes exp1,exp2] [--batches 1,100] [--json out.json]
  quick check:  python benchmarks/fw_throughput.py --shapes exp1 --batches 1,4 --reference-problems 2 \\
                    --repeats 1

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, e2d_jax 0.3.0, the quick check above;
at batches of 1 and 4 the batched rates are far below their large-batch values)::

    == exp1: d=3, K=10 ==
    solver                        batch compile_s     run_s    solves/s
    offset/fw-100                     1      2.76    0.0005       1,881
    offset/fw-100                     4      2.95    0.0005       7,608
    offset/saddle                     1      3.80    0.0008       1,234
    offset/saddle                     4      4.80    0.0078         514
    acdec/saddle (default)            1      5.28    0.0014         720
    acdec/saddle (default)            4      6.34    0.0031       1,284
    acdec/fw-grid paper budget        1      4.55    0.0018         556
    acdec/fw-grid paper budget        4      5.10    0.0148         271
    acdec/fw-grid default             1     10.85    0.0175          57
    acdec/fw-grid default             4      7.01    0.1051          38

    one at a time                        s/solve  solves/s  ratios (best batched JAX / this)
    offset cvxpy (Clarabel SOCP)          0.9276       1.1  offset/fw-100: 7,057x, offset/saddle: 1,144x
    offset NumPy FW-100                   0.0120      83.1  offset/fw-100: 92x, offset/saddle: 15x
    acdec cvxpy grid+refine               0.7914       1.3  acdec/saddle (default): 1,016x, ...
    acdec NumPy FW-100 x 50 lambdas       0.6368       1.6  acdec/saddle (default): 818x, ...

    accuracy (relative excess)        median       p90       max
    NumPy FW-100 x 50 lambdas       2.10e-02  3.73e-02  4.14e-02
    acdec/saddle (default)          4.03e-06  7.31e-06  8.14e-06
    acdec/fw-grid paper budget      8.47e-03  1.49e-02  1.66e-02
    acdec/fw-grid default           3.29e-03  5.89e-03  6.54e-03
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)  # instances in float64; the solvers get float32 inputs
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "helpers"))
from reference import LinearOffsetCvx, linear_acdec_reference, linear_exact_objective  # noqa: E402

from e2d_jax.dec import linear as L  # noqa: E402
from e2d_jax.envs import linear as envs  # noqa: E402

SHAPES = {"exp1": (3, 10), "exp2": (30, 10)}


def problems(shape, n, seed=0):
    d, k = SHAPES[shape]
    keys = jax.random.split(jax.random.key(seed), n)
    # Built in float64 (the references need exactly PSD Gram matrices), solved in float32.
    params = jax.vmap(lambda kk: envs.semi_bandit(kk, d, k, dtype=jnp.float64))(keys)
    rng = np.random.default_rng(seed)
    f_hat = np.asarray(params.theta) + 0.3 * rng.normal(size=(n, d))
    eps2 = d * np.exp(rng.uniform(np.log(1 / 2000), np.log(1 / 5), n))
    lam = np.exp(rng.uniform(np.log(0.1), np.log(10), n))
    return (np.asarray(params.model.features), np.asarray(params.model.grams), f_hat, eps2, lam, min(d, k))


# --- plain NumPy smoothed Frank-Wolfe (the baseline a NumPy research code would run) -------

def numpy_fw_offset(feats, grams, f_hat, lam, steps=100):
    """Smoothed FW for min_mu max_b a_b + c_b / (4 lam), one problem, pseudo-inverses."""
    k = feats.shape[0]
    r = feats @ f_hat
    mu = np.full(k, 1.0 / k)
    tau0 = None
    for it in range(steps):
        v = np.einsum("k,kij->ij", mu, grams)
        w = np.linalg.pinv(v) @ feats.T
        c = np.einsum("ik,ki->k", w, feats)
        h = r - mu @ r + c / (4 * lam)
        if tau0 is None:
            tau0 = max(0.1 * (h.max() - h.min()), 1e-6)
        tau = tau0 / np.sqrt(it + 1)
        p = np.exp((h - h.max()) / tau)
        p /= p.sum()
        b = (w * p) @ w.T
        g = -r - np.einsum("kij,ij->k", grams, b) / (4 * lam)
        gamma = 2.0 / (it + 3)
        mu = (1 - gamma) * mu
        mu[np.argmin(g)] += gamma
    v = np.einsum("k,kij->ij", mu, grams)
    c = np.einsum("ki,ij,kj->k", feats, np.linalg.pinv(v), feats)
    return np.max(r - mu @ r + c / (4 * lam)), mu


def numpy_fw_acdec(feats, grams, f_hat, eps2, steps=100, grid=50):
    """The paper's approach in NumPy: FW per lambda on a geometric grid, best lambda."""
    lams = np.geomspace(1e-3, 1e3, grid)
    best = (np.inf, None)
    for lam in lams:
        val, mu = numpy_fw_offset(feats, grams, f_hat, lam, steps)
        if val + lam * eps2 < best[0]:
            best = (val + lam * eps2, mu)
    return best


# --- JAX batched solvers ------------------------------------------------------------------

def jax_solver(kind, rank, config):
    if kind == "offset":
        fn = lambda f, g, fh, x: L.linear_offset_dec(f, g, fh, x, rank=rank, **config)
    else:
        fn = lambda f, g, fh, x: L.linear_acdec(f, g, fh, x, rank=rank, **config)
    return jax.jit(jax.vmap(fn))


def time_jax(fn, args, repeats):
    args = tuple(np.asarray(a, np.float32) for a in args)
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, float(np.median(times)), out


def time_one_at_a_time(fn, n, repeats=1):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(n):
            fn(i)
        times.append((time.perf_counter() - t0) / n)
    return float(np.median(times))


SOLVERS = {
    # name: (problem kind, config, max batch)
    "offset/fw-100": ("offset", dict(solver="fw-grid", maxiter=100, rtol=0.0, check_every=100), 10000),
    "offset/saddle": ("offset", dict(solver="saddle"), 10000),
    "acdec/saddle (default)": ("acdec", dict(solver="saddle"), 10000),
    "acdec/fw-grid paper budget": ("acdec", dataclasses.asdict(L.PAPER_SOLVER), 1000),
    "acdec/fw-grid default": ("acdec", dict(solver="fw-grid"), 100),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="1,10,100,1000,10000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference-problems", type=int, default=20, help="problems per shape for cvxpy/NumPy/accuracy")
    ap.add_argument("--quick", action="store_true", help="small batches and few reference problems")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated subset of " + ", ".join(SHAPES))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    shapes = args.shapes.split(",")
    if not set(shapes) <= set(SHAPES):
        ap.error(f"--shapes must be a subset of {sorted(SHAPES)}, got {args.shapes!r}")
    n_ref = args.reference_problems
    if args.quick:
        batches, n_ref = [1, 100], 4
    report = {"device": str(jax.devices()), "platform": platform.platform(), "jax": jax.__version__,
              "throughput": [], "baselines": [], "accuracy": []}
    print(f"device {jax.devices()}  {platform.platform()}  jax {jax.__version__}", flush=True)
    for shape in shapes:
        feats, grams, f_hat, eps2, lam, rank = problems(shape, max(batches))
        print(f"\n== {shape}: d={feats.shape[2]}, K={feats.shape[1]} ==", flush=True)
        print(f"{'solver':28s} {'batch':>6s} {'compile_s':>9s} {'run_s':>9s} {'solves/s':>11s}", flush=True)
        per_problem = {}
        for name, (kind, cfg, max_batch) in SOLVERS.items():
            fn = jax_solver(kind, rank, cfg)
            for b in batches:
                if b > max_batch:
                    continue
                x = lam[:b] if kind == "offset" else eps2[:b]
                comp, run, _ = time_jax(fn, (feats[:b], grams[:b], f_hat[:b], x), args.repeats)
                rate = b / run
                per_problem[name] = max(per_problem.get(name, 0.0), rate)
                report["throughput"].append(dict(shape=shape, solver=name, batch=b, compile_s=comp,
                                                 run_s=run, solves_per_s=rate))
                print(f"{name:28s} {b:6d} {comp:9.2f} {run:9.4f} {rate:11,.0f}", flush=True)

        # One at a time: cvxpy and plain NumPy FW, on the first n_ref problems (float64).
        F, G, FH = (np.asarray(a, np.float64) for a in (feats, grams, f_hat))
        cvx_offset = time_one_at_a_time(lambda i: LinearOffsetCvx(F[i], G[i], FH[i]).solve(float(lam[i])), n_ref)
        np_offset = time_one_at_a_time(lambda i: numpy_fw_offset(F[i], G[i], FH[i], float(lam[i])), n_ref)
        refs, t_ref = [], []
        for i in range(n_ref):
            t0 = time.perf_counter()
            refs.append(linear_acdec_reference(F[i], G[i], FH[i], float(eps2[i]))[0])
            t_ref.append(time.perf_counter() - t0)
        cvx_acdec = float(np.median(t_ref))
        np_mus = []
        t_np = []
        for i in range(n_ref):
            t0 = time.perf_counter()
            np_mus.append(numpy_fw_acdec(F[i], G[i], FH[i], float(eps2[i]))[1])
            t_np.append(time.perf_counter() - t0)
        np_acdec = float(np.median(t_np))
        rows = [("offset", "cvxpy (Clarabel SOCP)", cvx_offset), ("offset", "NumPy FW-100", np_offset),
                ("acdec", "cvxpy grid+refine", cvx_acdec), ("acdec", "NumPy FW-100 x 50 lambdas", np_acdec)]
        print(f"\n{'one at a time':34s} {'s/solve':>9s} {'solves/s':>9s}  ratios (best batched JAX / this)")
        for kind, name, sec in rows:
            ratios = {k: v * sec for k, v in per_problem.items() if k.startswith(kind)}
            report["baselines"].append(dict(shape=shape, problem=kind, method=name, seconds_per_solve=sec,
                                            ratios=ratios))
            rtxt = ", ".join(f"{k}: {v:,.0f}x" for k, v in ratios.items())
            print(f"{kind + ' ' + name:34s} {sec:9.4f} {1 / sec:9.1f}  {rtxt}", flush=True)

        # Accuracy against the cvxpy reference (exact objective of each returned mu).
        def excess_of(mus):
            ex = [(linear_exact_objective(np.asarray(m, np.float64), F[i], G[i], FH[i], float(eps2[i])) - refs[i]) / refs[i]
                  for i, m in enumerate(mus)]
            return np.asarray(ex)

        acc = {"NumPy FW-100 x 50 lambdas": excess_of(np_mus)}
        for name, (kind, cfg, _) in SOLVERS.items():
            if kind != "acdec":
                continue
            f32 = lambda a: np.asarray(a[:n_ref], np.float32)
            out = jax_solver(kind, rank, cfg)(f32(feats), f32(grams), f32(f_hat), f32(eps2))
            acc[name] = excess_of(np.asarray(out.mu))
        print(f"\n{'accuracy (relative excess)':30s} {'median':>9s} {'p90':>9s} {'max':>9s}")
        for name, ex in acc.items():
            report["accuracy"].append(dict(shape=shape, solver=name, median=float(np.median(ex)),
                                           p90=float(np.quantile(ex, 0.9)), max=float(ex.max()), n=int(ex.size)))
            print(f"{name:30s} {np.median(ex):9.2e} {np.quantile(ex, 0.9):9.2e} {ex.max():9.2e}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
