"""A hyperparameter grid x instances as vmapped axes of one compiled call, against a Python
loop over the same cells and instances.

What: Anytime-E2D on the paper's Experiment-1 shape (revealing semi-bandit, d=3, K=10),
eps_t^2 = c d / t for ``--values`` values of c on ``--instances`` instances, ``--seeds``
seeds each, horizon ``--horizon``, float32. Three ways:

* ``vmapped``: ``simulate(..., instances=True, hparams=grid)``: one compile, one call per
  batch (what the experiment layer does);
* ``loop, cached``: a Python loop over cells and instances calling ``simulate`` with the
  factory and a one-cell grid on one instance: compiled once (same shapes), one call each;
* ``loop, naive``: the same loop building ``anytime_e2d(eps2_scale=c)`` per cell, as a
  notebook would: one compile per cell.

Each is timed end to end (compile included, since that is what a user waits for) and, for
the vmapped call, also with compile apart; median of ``--repeats`` (the in-memory compile
cache is cleared between repeats).

Run:  python benchmarks/grid_vs_loop.py [--values 10 --instances 20 --seeds 50 --horizon 200] [--repeats 2]

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, e2d_jax 0.3.0, a quick check: ``--values 2
--instances 2 --seeds 3 --horizon 20 --repeats 1``; at this size the compiles are all of the
time, so the loop over one shape and the grid cost about the same, and the naive loop pays one
compile per value)::

    # x86_64, 1 device(s), jax 0.10.2; 2 values x 2 instances x 3 seeds x 20 rounds
    vmapped        total    10.1 s (compile  10.0 s)          24 seed-rounds/s end to end
    loop, cached   total     7.1 s (compile   7.0 s)          34 seed-rounds/s end to end
    loop, naive    total    13.3 s (compile  13.2 s)          18 seed-rounds/s end to end
    max relative difference of final regrets, loop, cached vs vmapped: 0.0e+00
    max relative difference of final regrets, loop, naive vs vmapped: 0.0e+00
"""
from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

import e2d_jax as e2d
from e2d_jax.sim.simulate import clear_compiled_cache


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--values", type=int, default=10)
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    values = np.geomspace(0.03, 3.0, args.values)
    batch = jax.vmap(lambda k: e2d.semi_bandit(k, 3, 10, dtype=jnp.float32))(e2d.instance_keys(range(args.instances)))
    one = [jax.tree_util.tree_map(lambda x, i=i: x[i], batch) for i in range(args.instances)]
    kw = dict(horizon=args.horizon, num_seeds=args.seeds, record_every=args.horizon)

    def vmapped():
        sim = e2d.simulate(batch, e2d.anytime_e2d, instances=True, hparams={"eps2_scale": values}, **kw)
        return sim.compile_seconds, np.asarray(sim.result.regret[..., -1])

    def loop_cached():
        out = np.zeros((args.values, args.instances, args.seeds))
        comp = 0.0
        for c, v in enumerate(values):
            for i, p in enumerate(one):
                sim = e2d.simulate(p, e2d.anytime_e2d, hparams={"eps2_scale": [v]}, **kw)
                comp += sim.compile_seconds
                out[c, i] = sim.result.regret[0, :, -1]
        return comp, out

    def loop_naive():
        out = np.zeros((args.values, args.instances, args.seeds))
        comp = 0.0
        for c, v in enumerate(values):
            agent = e2d.anytime_e2d(eps2_scale=float(v))
            for i, p in enumerate(one):
                sim = e2d.simulate(p, agent, **kw)
                comp += sim.compile_seconds
                out[c, i] = sim.result.regret[:, -1]
        return comp, out

    print(f"# {platform.processor() or platform.machine()}, {len(jax.devices())} device(s), jax {jax.__version__}; "
          f"{args.values} values x {args.instances} instances x {args.seeds} seeds x {args.horizon} rounds")
    results = {}
    for name, fn in (("vmapped", vmapped), ("loop, cached", loop_cached), ("loop, naive", loop_naive)):
        times, comps = [], []
        for _ in range(args.repeats):
            clear_compiled_cache()
            t0 = time.perf_counter()
            comp, out = fn()
            times.append(time.perf_counter() - t0)
            comps.append(comp)
        results[name] = out
        seed_rounds = args.values * args.instances * args.seeds * args.horizon
        print(f"{name:14s} total {np.median(times):7.1f} s (compile {np.median(comps):5.1f} s)  "
              f"{seed_rounds / np.median(times):10,.0f} seed-rounds/s end to end")
    ref = results["vmapped"]
    for name in ("loop, cached", "loop, naive"):
        diff = np.max(np.abs(results[name] - ref) / np.maximum(np.abs(ref), 1e-6))
        print(f"max relative difference of final regrets, {name} vs vmapped: {diff:.1e}")


if __name__ == "__main__":
    main()
