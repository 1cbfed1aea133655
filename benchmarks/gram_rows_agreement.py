"""Anytime-E2D (or E2D, ``--agent e2d``: its interior point) with the sums over the Gram matrices
through the observation rows (the library, where K r^2 >=
``e2d_jax.envs.linear.GRAM_ROWS_MIN_ENTRIES``) against the same instance whose span has no rows
(every sum through the (K, r, r) array): the same seeds.

The two forms are the same numbers up to rounding, so the final regrets should agree within
their 95% confidence intervals (per seed, float32 rounding may change a later draw).

Run:  PYTHONPATH=. python benchmarks/gram_rows_agreement.py --env linear-bandit --d 30 \
          --arms 1000 --horizon 100 --seeds 32
      PYTHONPATH=. python benchmarks/gram_rows_agreement.py --agent e2d --d 16 --arms 1100 \
          --horizon 50 --seeds 16
"""
from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

import e2d_jax as e2d

ENVS = {"linear-bandit": e2d.linear_bandit, "semi-bandit": e2d.semi_bandit}


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--env", default="linear-bandit", choices=sorted(ENVS))
    ap.add_argument("--agent", default="anytime-e2d", choices=("anytime-e2d", "e2d"),
                    help="e2d: tuned for the horizon, at its defaults")
    ap.add_argument("--d", type=int, default=30)
    ap.add_argument("--arms", type=int, default=1000)
    ap.add_argument("--horizon", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=32)
    args = ap.parse_args(argv)
    params = ENVS[args.env](jax.random.PRNGKey(0), args.d, args.arms, dtype=jnp.float32)
    span = params.model.span
    gram_array = params._replace(model=params.model._replace(
        span=span._replace(rows=None, multi_actions=None, multi_grams=None)))
    print(f"device: {jax.devices()[0]}  platform: {platform.platform()}  jax {jax.__version__}  "
          f"{args.agent} on {args.env} d={args.d} K={args.arms} horizon {args.horizon} seeds {args.seeds}")
    agent = e2d.anytime_e2d() if args.agent == "anytime-e2d" else e2d.fixed_horizon_e2d(horizon=args.horizon)
    finals = {}
    for name, p in (("rows", params), ("gram array", gram_array)):
        t0 = time.perf_counter()
        sim = e2d.simulate(p, agent, horizon=args.horizon, num_seeds=args.seeds, lanes=args.seeds)
        final = np.asarray(sim.final_regret, np.float64).reshape(-1)
        mean, half = final.mean(), 1.96 * final.std(ddof=1) / np.sqrt(final.size)
        finals[name] = final
        print(f"{name:>10}: final regret {mean:.2f} [{mean - half:.2f}, {mean + half:.2f}]  "
              f"({time.perf_counter() - t0:.0f} s with compile)", flush=True)
    diff = np.abs(finals["rows"] - finals["gram array"])
    print(f"per seed: largest difference {diff.max():.3g}, identical seeds {int(np.sum(diff == 0))} of {diff.size}")


if __name__ == "__main__":
    main()
