"""Interior-point method vs mirror-prox on the fixed-lambda offset DEC of a linear model.

What it measures, on random problems of shapes (K, d) in {(10, 3), (10, 30), (20, 5),
(3, 2)} (half revealing semi-bandits, half linear bandits; f_hat = f* + N(0, 0.3^2 I);
lambda log-uniform in [0.1, 100]), both gap types, float32 (the agents' dtype), vmapped over
batches of ``--batch``:

* ``ipm``: ``e2d_jax.dec.interior_point.solve`` with its fixed budget of 25 Newton
  iterations (``lax.fori_loop``, every lane does the same work) and rtol 1e-4: the fraction
  certified at 1e-4 (status OK), the iterations it took to get there (median / p90 / max),
  the certified relative gap (upper - lower) / upper (median / p90 / max), the true excess of
  the returned mu, F(mu) - F*, relative, with F evaluated in float64 on the same (float32)
  data and F* from a float64 solve to a certified 1e-10 (p90 / max), and the time per solve
  after compilation.
* ``mp-1000`` / ``mp-4000``: ``e2d_jax.dec.linear.solve_offset`` with mirror-prox
  (``LinearSolverConfig(solver="saddle", maxiter=1000 or 4000, rtol=1e-4)``), the same
  columns (iterations are mirror-prox iterations).

Then, with ``--extras``: warm starts on slowly changing problems (64 problems of (10, 3) and
(10, 30), f_hat moving by steps of norm 0.01 for 20 rounds: iterations to 1e-4 cold vs
warm-started from the previous round's (mu, omega)), and a lambda grid (64 problems x 16
lambdas in [1e-2, 1e3], vmapped over both) with the accuracy of the returned lower bound,
(F* - lower) / F*.

Compile time is excluded (``lower().compile()`` first); times are wall-clock per solve over
all batches, on whatever else the machine is running.

Run:  python benchmarks/interior_point.py [--problems 200] [--batch 64] [--shapes 10x3,10x30,20x5,3x2]
                                           [--no-mp4000] [--extras] [--json out.json]
  quick check:  python benchmarks/interior_point.py --problems 64 --shapes 3x2 --no-mp4000

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, float32, --problems 200 --batch 64
--extras; the machine was shared with other jobs, so times vary up to ~1.5x)::

     K x d gap     solver   OK@1e-4        iterations          certified rel. gap        true excess  ms/solve
                                      med   p90   max    median      p90      max       p90      max
      10x3 delta_f ipm       100.0%     9    11    12   4.4e-05  8.7e-05  1.0e-04   3.8e-05  1.5e-04     0.267
      10x3 delta_f mp-1000    51.0%   500   900  1000   9.5e-05  1.3e-03  4.7e-02   4.4e-04  2.3e-02     0.942
      10x3 delta_f mp-4000    81.0%   825  2640  4000   5.3e-05  2.4e-04  2.2e-03   8.6e-05  1.6e-03     1.337
      10x3 delta   ipm       100.0%     9    11    13   4.7e-05  8.9e-05  9.9e-05   3.4e-05  5.2e-05     0.542
      10x3 delta   mp-1000    23.5%   500   815  1000   3.6e-04  3.0e-03  6.4e-02   1.3e-03      inf     0.633
      10x3 delta   mp-4000    58.5%  1450  3205  4000   9.1e-05  4.4e-04  8.8e-03   1.9e-04      inf     4.028
     10x30 delta_f ipm       100.0%     9    11    14   4.8e-05  8.7e-05  1.0e-04   4.0e-05  5.0e-05     1.050
     10x30 delta_f mp-1000    59.0%   350   800  1000   8.1e-05  9.5e-04  9.9e-03   1.2e-03  7.0e-03     1.829
     10x30 delta_f mp-4000    89.0%   612  2225  4000   5.7e-05  1.1e-04  7.8e-04   5.7e-04  7.0e-03     8.536
     10x30 delta   ipm       100.0%     9    10    12   4.2e-05  8.4e-05  1.0e-04   3.9e-05  5.0e-05     1.115
     10x30 delta   mp-1000    50.5%   400   825  1000   9.7e-05  1.9e-03  1.3e-02   2.1e-03      inf     1.962
     10x30 delta   mp-4000    89.0%   812  2383  4000   5.2e-05  1.2e-04  1.3e-03   6.9e-04      inf     7.754
      20x5 delta_f ipm        97.5%    10    12    25   4.5e-05  9.0e-05  4.7e-04   3.1e-05  5.0e-05     0.490
      20x5 delta_f mp-1000    38.0%   575   925  1000   1.8e-04  2.2e-03  1.2e-02   7.2e-04  6.9e-03     1.393
      20x5 delta_f mp-4000    74.5%   975  2225  4000   7.0e-05  3.0e-04  3.7e-03   1.1e-04  7.8e-04     4.681
      20x5 delta   ipm        98.5%    10    12    24   4.5e-05  9.1e-05  2.0e-04   3.6e-05  7.2e-05     0.487
      20x5 delta   mp-1000    15.5%   700   900  1000   5.6e-04  3.8e-03  1.5e-02   1.3e-03  6.7e-03     1.304
      20x5 delta   mp-4000    48.5%  1525  3040  4000   1.1e-04  5.7e-04  7.8e-03   2.2e-04  5.7e-03     5.086
       3x2 delta_f ipm       100.0%     7     9    11   4.6e-05  8.3e-05  9.9e-05   2.9e-05  4.9e-05     0.018
       3x2 delta_f mp-1000    74.5%   350   780  1000   6.4e-05  2.9e-04  6.9e-03   1.1e-04  3.8e-03     0.069
       3x2 delta_f mp-4000    96.0%   488  1748  4000   5.3e-05  9.2e-05  1.8e-03   5.0e-05  9.3e-04     0.275
       3x2 delta   ipm       100.0%     8    10    10   4.6e-05  8.7e-05  1.0e-04   3.6e-05  5.0e-05     0.023
       3x2 delta   mp-1000    50.5%   450   850  1000   9.8e-05  8.3e-04  1.9e-02   5.5e-04      inf     0.080
       3x2 delta   mp-4000    85.0%   800  2590  4000   6.2e-05  1.5e-04  1.1e-03   8.7e-05      inf     0.420

    warm starts (delta_f, 64 problems x 19 rounds, f_hat steps of norm 0.01): iterations to 1e-4
     K x d  cold med  p90  max  warm med  p90  max  warm OK
      10x3         9   11   15         6    8   11   100.0%
     10x30         9   11   25         6    8   25    99.8%

    lambda grid (delta_f, 64 problems x 16 lambdas in [1e-2, 1e3], one vmapped call): (F* - lower) / F*
     K x d  OK@1e-4    median       p90       max       min
      10x3    97.0%   2.9e-05   6.5e-05   2.1e-02  -2.3e-06
     10x30    98.0%   2.8e-05   6.5e-05   1.7e-03   2.4e-06

(``inf`` in the true excess: the optimum is exactly 0, gaps Delta with an informative greedy
action, and mirror-prox's mu, which keeps 1e-9 of every action, is not; the IPM certifies
those optima exactly through its purified candidate. The lambda grid's misses are all at
lambda >= 10, mostly 464 and 1000: float32 rounding of an optimum ~1e-3 of the rewards'
spread, see the module docstring of ``e2d_jax.dec.interior_point``, 'Floating point'.)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import jax

jax.config.update("jax_enable_x64", True)  # the float64 references; the solvers get float32
import jax.numpy as jnp
import numpy as np

from e2d_jax.dec import interior_point as ip
from e2d_jax.dec import linear as L
from e2d_jax.envs import linear as envs
from e2d_jax.types import Status

DTYPE = jnp.float32


def problems(k, d, n, seed=0):
    """(span, r, lam, f_hat) of n instances in float32: half semi-bandits, half linear bandits."""
    keys = jax.random.split(jax.random.key(seed), n)
    half = n // 2
    semi = jax.vmap(lambda kk: envs.semi_bandit(kk, d, k, dtype=DTYPE))(keys[:half])
    lin = jax.vmap(lambda kk: envs.linear_bandit(kk, d, k, dtype=DTYPE))(keys[half:])
    # (the observation maps differ in shape; the spans, of dimension min(d, K), do not)
    span, theta = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), (semi.model.span, semi.theta),
                                         (lin.model.span, lin.theta))
    # Symmetric to the last bit (as ip.solve makes them), so that the float64 evaluations of
    # the float32 answers read the same problem.
    span = span._replace(grams=0.5 * (span.grams + jnp.swapaxes(span.grams, -1, -2)))
    rng = np.random.default_rng(seed)
    f_hat = jnp.asarray(np.asarray(theta) + 0.3 * rng.normal(size=(n, d)), DTYPE)
    lam = jnp.asarray(np.exp(rng.uniform(np.log(0.1), np.log(100.0), n)), DTYPE)
    f_hat_r = jnp.einsum("nd,ndr->nr", f_hat, span.basis)
    r = jnp.einsum("nkr,nr->nk", span.features, f_hat_r)
    return span, r, lam, f_hat_r


def batches(tree, batch):
    n = jax.tree_util.tree_leaves(tree)[0].shape[0]
    pad = (-n) % batch
    if pad:
        tree = jax.tree_util.tree_map(lambda x: jnp.concatenate([x, x[:pad]]), tree)
    m = (n + pad) // batch
    return [jax.tree_util.tree_map(lambda x: x[i * batch:(i + 1) * batch], tree) for i in range(m)], n


def run_batched(fn, args, batch):
    """Compiles fn on one batch, then runs every batch; (stacked outputs, s per solve)."""
    chunks, n = batches(args, batch)
    compiled = jax.jit(fn).lower(*chunks[0]).compile()
    jax.block_until_ready(compiled(*chunks[0]))  # warm-up
    t0 = time.perf_counter()
    outs = [compiled(*c) for c in chunks]
    jax.block_until_ready(outs)
    elapsed = time.perf_counter() - t0
    out = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[:n], *outs)
    return out, elapsed / (len(chunks) * batch)


def ipm_fn(gap_type, **kw):
    return jax.vmap(lambda s, r, lam: ip.solve(s, r, lam, gap_type=gap_type, **kw))


def mirror_prox_fn(gap_type, maxiter):
    config = L.LinearSolverConfig(solver="saddle", maxiter=maxiter, rtol=1e-4)

    def one(s, f_hat_r, lam):
        res, _ = L.solve_offset(s, f_hat_r, lam, config, None, gap_type)
        return res

    return jax.vmap(one)


def reference(span, r, lam, gap_type, batch):
    """F* in float64 (a certified 1e-10 solve on the float32 data cast up)."""
    args64 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), (span, r, lam))
    sol, _ = run_batched(ipm_fn(gap_type, maxiter=60, rtol=1e-10), args64, batch)
    return sol, args64


def true_objective(mu, args64, gap_type, batch):
    span, r, lam = args64
    fn = jax.vmap(lambda m, s, rr, ll: ip.objective(m, s, rr, ll, gap_type))
    out, _ = run_batched(fn, (jnp.asarray(mu, jnp.float64), span, r, lam), batch)
    return out


def relative(x, scale):
    """x / |scale|, with 0 / 0 = 0 (an optimum of exactly 0, gaps Delta at an informative
    greedy action) and x / 0 = inf for x > 0."""
    x, scale = np.asarray(x, np.float64), np.abs(np.asarray(scale, np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x <= 0, np.minimum(x, 0.0) / np.maximum(scale, 1e-300), x / scale)


def q(x, p):
    return float(np.percentile(x, p)) if len(x) else float("nan")


def row(name, ok, iters, gap, excess, seconds):
    return {"solver": name, "ok": float(np.mean(ok)), "iters_median": q(iters[ok], 50), "iters_p90": q(iters[ok], 90),
            "iters_max": float(np.max(iters)), "gap_median": q(gap, 50), "gap_p90": q(gap, 90),
            "gap_max": float(np.max(gap)), "excess_p90": q(excess, 90), "excess_max": float(np.max(excess)),
            "ms_per_solve": 1e3 * seconds}


def print_row(shape, gap_type, r):
    print(f"{shape:>6s} {gap_type:7s} {r['solver']:8s} {100 * r['ok']:6.1f}% "
          f"{r['iters_median']:5.0f} {r['iters_p90']:5.0f} {r['iters_max']:5.0f}  "
          f"{r['gap_median']:8.1e} {r['gap_p90']:8.1e} {r['gap_max']:8.1e}  "
          f"{r['excess_p90']:8.1e} {r['excess_max']:8.1e}  {r['ms_per_solve']:8.3f}")


def compare(k, d, gap_type, args):
    span, r, lam, f_hat_r = problems(k, d, args.problems, seed=k * 100 + d)
    ref, args64 = reference(span, r, lam, gap_type, args.batch)
    f_star = np.asarray(ref.upper)
    ref_gap = float(np.max(relative(ref.gap, f_star)))
    if ref_gap > 1e-8:
        print(f"  (float64 reference certified to {ref_gap:.1e} relative only)")
    rows = []
    sol, sec = run_batched(ipm_fn(gap_type), (span, r, lam), args.batch)
    gap = relative(sol.upper - sol.lower, sol.upper)
    excess = relative(true_objective(sol.mu, args64, gap_type, args.batch) - f_star, f_star)
    rows.append(row("ipm", sol.status == Status.OK, sol.iterations, gap, excess, sec))
    for maxiter in (1000, 4000) if args.mp4000 else (1000,):
        res, sec = run_batched(mirror_prox_fn(gap_type, maxiter), (span, f_hat_r, lam), args.batch)
        gap = relative(res.value - res.lower_bound, res.value)
        excess = relative(true_objective(res.mu, args64, gap_type, args.batch) - f_star, f_star)
        rows.append(row(f"mp-{maxiter}", res.status == Status.OK, res.iterations, gap, excess, sec))
    return rows


def warm_starts(k, d, args, rounds=20, n=64):
    """Iterations to 1e-4 along a slowly moving f_hat, cold vs warm-started."""
    span, _, lam, f_hat_r = problems(k, d, n, seed=7)
    rng = np.random.default_rng(7)
    steps = rng.normal(size=(rounds, n, f_hat_r.shape[1]))
    steps = 0.01 * steps / np.linalg.norm(steps, axis=-1, keepdims=True)
    cold_fn = jax.jit(ipm_fn("delta_f"))
    warm_fn = jax.jit(jax.vmap(lambda s, r, lam, m, o: ip.solve(s, r, lam, mu0=m, omega0=o)))
    cold_it, warm_it, warm_ok = [], [], []
    prev = None
    for t in range(rounds):
        f_t = f_hat_r + jnp.asarray(steps[: t + 1].sum(0), DTYPE)
        r_t = jnp.einsum("nkr,nr->nk", span.features, f_t)
        cold = cold_fn(span, r_t, lam)
        if prev is not None:
            warm = warm_fn(span, r_t, lam, prev.mu, prev.omega)
            cold_it.append(np.asarray(cold.iterations))
            warm_it.append(np.asarray(warm.iterations))
            warm_ok.append(np.asarray(warm.status) == Status.OK)
            prev = warm
        else:
            prev = cold
    cold_it, warm_it = np.concatenate(cold_it), np.concatenate(warm_it)
    return {"shape": f"{k}x{d}", "cold_median": q(cold_it, 50), "cold_p90": q(cold_it, 90), "cold_max": float(cold_it.max()),
            "warm_median": q(warm_it, 50), "warm_p90": q(warm_it, 90), "warm_max": float(warm_it.max()),
            "warm_ok": float(np.mean(np.concatenate(warm_ok)))}


def lambda_grid(k, d, args, n=64, num=16):
    """Accuracy of the lower bound over a vmapped lambda grid (float32 vs float64 F*)."""
    span, r, _, _ = problems(k, d, n, seed=11)
    lams = jnp.geomspace(1e-2, 1e3, num).astype(DTYPE)
    grid = jax.jit(jax.vmap(lambda s, rr: jax.vmap(lambda lam: ip.solve(s, rr, lam))(lams)))
    sol = grid(span, r)
    span64, r64 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), (span, r))
    grid64 = jax.jit(jax.vmap(lambda s, rr: jax.vmap(lambda lam: ip.solve(s, rr, lam, maxiter=60, rtol=1e-10))(
        lams.astype(jnp.float64))))
    f_star = np.asarray(grid64(span64, r64).upper)
    err = relative(f_star - np.asarray(sol.lower, np.float64), f_star)
    return {"shape": f"{k}x{d}", "ok": float(np.mean(np.asarray(sol.status) == Status.OK)),
            "lower_err_median": q(err, 50), "lower_err_p90": q(err, 90), "lower_err_max": float(err.max()),
            "lower_err_min": float(err.min())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--shapes", default="10x3,10x30,20x5,3x2", help="KxD,...")
    parser.add_argument("--no-mp4000", dest="mp4000", action="store_false", help="skip mirror-prox at 4000")
    parser.add_argument("--extras", action="store_true", help="warm starts and a lambda grid")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    report = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "jax": jax.__version__, "args": vars(args), "rows": []}
    print(f"{'K x d':>6s} {'gap':7s} {'solver':8s} {'OK@1e-4':>7s} {'iterations':>17s}  "
          f"{'certified rel. gap':>26s}  {'true excess':>17s}  {'ms/solve':>8s}")
    print(f"{'':>6s} {'':7s} {'':8s} {'':>7s} {'med':>5s} {'p90':>5s} {'max':>5s}  {'median':>8s} {'p90':>8s} "
          f"{'max':>8s}  {'p90':>8s} {'max':>8s}")
    for k, d in shapes:
        for gap_type in ("delta_f", "delta"):
            for r in compare(k, d, gap_type, args):
                print_row(f"{k}x{d}", gap_type, r)
                report["rows"].append({"shape": f"{k}x{d}", "gap_type": gap_type, **r})
    if args.extras:
        print("\nwarm starts (delta_f, 64 problems x 19 rounds, f_hat steps of norm 0.01): iterations to 1e-4")
        print(f"{'K x d':>6s}  {'cold med':>8s} {'p90':>4s} {'max':>4s}  {'warm med':>8s} {'p90':>4s} {'max':>4s}  {'warm OK':>7s}")
        report["warm"] = []
        for k, d in ((10, 3), (10, 30)):
            w = warm_starts(k, d, args)
            report["warm"].append(w)
            print(f"{w['shape']:>6s}  {w['cold_median']:8.0f} {w['cold_p90']:4.0f} {w['cold_max']:4.0f}  "
                  f"{w['warm_median']:8.0f} {w['warm_p90']:4.0f} {w['warm_max']:4.0f}  {100 * w['warm_ok']:6.1f}%")
        print("\nlambda grid (delta_f, 64 problems x 16 lambdas in [1e-2, 1e3], one vmapped call): (F* - lower) / F*")
        print(f"{'K x d':>6s}  {'OK@1e-4':>7s} {'median':>9s} {'p90':>9s} {'max':>9s} {'min':>9s}")
        report["grid"] = []
        for k, d in ((10, 3), (10, 30)):
            g = lambda_grid(k, d, args)
            report["grid"].append(g)
            print(f"{g['shape']:>6s}  {100 * g['ok']:6.1f}% {g['lower_err_median']:9.1e} {g['lower_err_p90']:9.1e} "
                  f"{g['lower_err_max']:9.1e} {g['lower_err_min']:9.1e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
