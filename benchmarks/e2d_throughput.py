"""Anytime-E2D / E2D simulation throughput, and where a seed-round's time goes.

What: seed-rounds per second of Anytime-E2D and fixed-horizon E2D with the agents' default
solver (exact saddle-point form, warm-started, 10 mirror-prox iterations and one certificate
per round) on the paper's Experiment-1 instance (revealing semi-bandit, d=3, K=10) and
Experiment-2 instance (d=30, K=10), float32, horizon ``--horizon`` recorded every 100 rounds,
at 1, 100, 1,000 and 10,000 seeds in one jitted ``vmap``. Compile time apart (AOT); run time
the median of ``--repeats`` calls.

Breakdown (``--breakdown``): the same batch of 1,000 problems timed piece by piece, per
problem: one gradient of the saddle Lagrangian, one mirror-prox iteration, one certificate
(exact objective by the two-point formula plus two lower bounds; a round's check makes
three), and UCB's whole round
(ridge update, environment, sampling: the non-solver part of a round).

Run:  python benchmarks/e2d_throughput.py [--horizon 2000] [--seeds 1,100,1000,10000]
      [--breakdown] [--json out.json]

Sharded over the cores (what ``e2d-jax run --host-devices 2`` does): prefix the command with
``XLA_FLAGS=--xla_force_host_platform_device_count=2``; every batch of an even number of
seeds is then split over two XLA CPU devices (the device list is printed first).

Typical printout: see README.md and the linear-DEC issue's closing note (2-core x86-64 CPU,
jax 0.10.2).
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax.agents.e2d import anytime_e2d, fixed_horizon_e2d
from e2d_jax.agents.ucb import ucb
from e2d_jax.dec import linear as L
from e2d_jax.dec import saddle
from e2d_jax.envs import linear
from e2d_jax.simulate import make_batched_rollout, run_keys

SHAPES = {"exp1": (3, 10), "exp2": (30, 10)}


def measure(agent, params, seeds, horizon, repeats):
    fn = make_batched_rollout(linear.ENVIRONMENT, agent, horizon, 100, seeds)
    keys = run_keys(0, np.arange(seeds))
    t0 = time.perf_counter()
    compiled = fn.lower(keys, params, {}).compile()
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(keys, params, {}))
        times.append(time.perf_counter() - t0)
    run_s = float(np.median(times))
    return dict(seeds=seeds, compile_s=compile_s, run_s=run_s, seed_rounds_per_s=seeds * horizon / run_s,
                nonfinite=int(np.asarray(out.nonfinite_rounds).sum()))


def per_problem_us(fn, arg, n_inner, repeats=5):
    f = jax.jit(jax.vmap(fn))
    jax.block_until_ready(f(arg))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f(arg))
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) / n_inner / arg.shape[0] * 1e6


def breakdown(shape, batch=1000, n=100):
    d, k = SHAPES[shape]
    params = linear.semi_bandit(jax.random.key(0), d, k, dtype=jnp.float32)
    s = params.model.span
    f_hats = (params.theta + 0.3 * jax.random.normal(jax.random.key(1), (batch, d))).astype(jnp.float32)
    eps2 = jnp.float32(2 * d / 100)

    def problem(fh):
        r = s.features @ (fh @ s.basis)
        return L._exact_problem(s, r, eps2)

    u = jnp.full(k, 1.0 / k, jnp.float32)

    def grads_only(fh):
        grads, _ = problem(fh)
        return lax.fori_loop(0, n, lambda _, m: m + 1e-9 * grads(m, u)[0], u)

    def mp_iters(fh):
        grads, cert = problem(fh)
        st = saddle.init(grads, cert, u, u)
        return lax.fori_loop(0, n, lambda _, x: saddle.step(grads, x), st).log_mu

    def certs(fh):
        # One certificate evaluation (a check at the end of a round makes three).
        grads, cert = problem(fh)
        return lax.fori_loop(0, n, lambda _, m: m * (1 + 1e-9 * cert(m, u)[0]), u)

    out = {
        "gradient_us": per_problem_us(grads_only, f_hats, n),
        "mirror_prox_iteration_us": per_problem_us(mp_iters, f_hats, n),
        "certificate_us": per_problem_us(certs, f_hats, n),
    }
    r = measure(ucb(), params, batch, 1000, 3)
    out["non_solver_round_us (UCB round)"] = 1e6 / r["seed_rounds_per_s"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--horizon", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", default="1,100,1000,10000")
    ap.add_argument("--shapes", default="exp1,exp2")
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    report = {"device": str(jax.devices()), "platform": platform.platform(), "jax": jax.__version__,
              "horizon": args.horizon, "rows": [], "breakdown": {}}
    print(f"device {jax.devices()}  {platform.platform()}  jax {jax.__version__}  horizon {args.horizon}")
    print(f"{'shape':6s} {'agent':12s} {'seeds':>6s} {'compile_s':>9s} {'run_s':>9s} {'seed_rounds/s':>14s}")
    for shape in args.shapes.split(","):
        d, k = SHAPES[shape]
        params = linear.semi_bandit(jax.random.key(0), d, k, dtype=jnp.float32)
        for name, agent in (("anytime-e2d", anytime_e2d()), ("e2d", fixed_horizon_e2d(horizon=args.horizon))):
            for s in (int(x) for x in args.seeds.split(",")):
                r = measure(agent, params, s, args.horizon, args.repeats)
                r.update(shape=shape, agent=name)
                report["rows"].append(r)
                print(f"{shape:6s} {name:12s} {s:6d} {r['compile_s']:9.2f} {r['run_s']:9.3f} "
                      f"{r['seed_rounds_per_s']:14,.0f}", flush=True)
        if args.breakdown:
            b = breakdown(shape)
            report["breakdown"][shape] = b
            print("  per problem: " + ", ".join(f"{kk} {v:.3f}" for kk, v in b.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
