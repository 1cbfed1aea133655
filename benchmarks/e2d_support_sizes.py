"""How many actions E2D's round optimum puts weight on, against the support bound.

On random linear bandits (``e2d_jax.envs.linear.linear_bandit``, f_hat = f* + N(0, 0.3^2 I)),
E2D's fixed-lambda program at lambda = sqrt(n / (4 log n)) (``horizon_lambda``, the squared
divergence) is solved in float64 by the interior point to a relative gap of ``--rtol``, one
problem at a time. For each solve: the support of the min player's mu* and of the max player's
omega* (entries above ``--threshold`` times the largest), the share of omega*'s mass on its 64
heaviest entries, and ``support_bound(r)`` = r (r + 1) / 2 + 2 (Caratheodory), the restricted
game's row count.

The support sizes say what a round must carry: an optimum on s actions needs a restricted game
of at least s rows to certify it, and every method that represents the mixture explicitly pays
for s of them.

Run:  PYTHONPATH=. python benchmarks/e2d_support_sizes.py --d 10 30 --arms 1000 --horizons 20 1000
"""
from __future__ import annotations

import argparse
import platform

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from e2d_jax.agents.e2d_linear import horizon_lambda  # noqa: E402
from e2d_jax.dec import interior_point as ip  # noqa: E402
from e2d_jax.envs import linear as L  # noqa: E402


def problem(key, d: int, k: int):
    k1, k2 = jax.random.split(key)
    params = L.linear_bandit(k1, d, k, dtype=jnp.float64)
    s = ip.symmetrised(params.model.span)
    f = params.theta + 0.3 * jax.random.normal(k2, (d,), jnp.float64)
    return s, s.features @ (f @ s.basis)


def support(x, threshold: float) -> int:
    x = np.asarray(x)
    return int(np.sum(x > threshold * x.max()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--d", type=int, nargs="+", default=[10, 30])
    ap.add_argument("--arms", type=int, nargs="+", default=[1000])
    ap.add_argument("--horizons", type=int, nargs="+", default=[20, 1000], help="n in lambda = sqrt(n / (4 log n))")
    ap.add_argument("--problems", type=int, default=4)
    ap.add_argument("--rtol", type=float, default=1e-7)
    ap.add_argument("--maxiter", type=int, default=40)
    ap.add_argument("--threshold", type=float, default=1e-3)
    args = ap.parse_args(argv)
    print(f"device: {jax.devices()[0]}  platform: {platform.platform()}  jax {jax.__version__}  float64")
    print(f"support: entries above {args.threshold:g} x the largest; solves to a relative gap of {args.rtol:g}")
    print("d     K  horizon  lambda  r  bound  |  problem: support(mu*) support(omega*) omega-mass-top-64 gap status")
    for d in args.d:
        for k in args.arms:
            keys = jax.random.split(jax.random.PRNGKey(5), args.problems)
            probs = [problem(key, d, k) for key in keys]
            for n in args.horizons:
                lam = horizon_lambda(n)
                solve = jax.jit(lambda s, r: ip.solve(s, r, jnp.float64(lam), rtol=args.rtol, maxiter=args.maxiter))
                cells = []
                for s, r in probs:
                    out = solve(s, r)
                    om = np.sort(np.asarray(out.omega))[::-1]
                    cells.append(f"{support(out.mu, args.threshold)} {support(out.omega, args.threshold)} "
                                 f"{om[:64].sum() / om.sum():.2f} {float(out.gap / abs(out.upper)):.0e} "
                                 f"{int(out.status)}")
                rank = probs[0][0].features.shape[-1]
                print(f"{d:<3} {k:>5}  {n:>7}  {lam:6.2f}  {rank:<2} {ip.support_bound(rank):>5}  |  "
                      + "  ;  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
