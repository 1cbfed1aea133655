"""Where an interior-point iteration of E2D's fixed-lambda program spends its time on many actions.

On random linear bandits (``e2d_jax.envs.linear.linear_bandit``, f_hat = f* + N(0, 0.3^2 I),
lambda = 0.6 in the program's convention, float32), after three iterations from a cold start,
each part of ``e2d_jax.dec.interior_point.step`` is compiled on its own and timed (median of
``--repeats`` calls after one warm call):

* ``step``: the whole iteration (:func:`~e2d_jax.dec.interior_point.step`);
* ``evaluate``: the program's pieces at mu (``evaluate_factored`` or ``evaluate``);
* ``restricted_lower``: the certificate's matrix game on the largest constraints and the
  heaviest actions, and its bound over all K;
* ``direction``: Mehrotra's predictor and corrector (the Newton systems);
* ``direction+ladder``: the same and the step ladder's trial evaluations;
* ``checked_objective``: F at a candidate mixture (the second upper bound).

The parts are compiled apart, so their sum need not equal ``step``; they show which part
dominates. Then a whole solve to a relative gap of 1e-3 (the agent's tolerance): its
iterations and time.

Run:  PYTHONPATH=. python benchmarks/interior_point_pieces.py --d 30 --arms 1000 [--problems 1]

Several problems side by side (``--problems``) run as one vmapped program, as the agents'
seeds do.
"""
from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax.dec import interior_point as ip
from e2d_jax.envs import linear as L

LAM = 0.6


def problems(d: int, k: int, n: int):
    def one(key):
        k1, k2 = jax.random.split(key)
        params = L.linear_bandit(k1, d, k)
        s = ip.symmetrised(params.model.span)
        f = params.theta + 0.3 * jax.random.normal(k2, (d,))
        return s, s.features @ (f @ s.basis)

    return jax.vmap(one)(jax.random.split(jax.random.PRNGKey(0), n))


def timed(fn, *args, repeats: int) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--d", type=int, default=30)
    ap.add_argument("--arms", type=int, default=1000)
    ap.add_argument("--problems", type=int, default=1, help="problems side by side (vmap)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    s, r = problems(args.d, args.arms, args.problems)
    rank = s.features.shape[-1]
    factored = ip.use_factored(args.arms, rank, "delta_f")
    print(f"device: {jax.devices()[0]}  platform: {platform.platform()}  jax {jax.__version__}")
    print(f"linear bandit d = {args.d}, K = {args.arms}, r = {rank}, {args.problems} problem(s), factored form: "
          f"{factored}, through the observation rows: {L.through_rows(s, args.arms)}")
    batched = lambda f: jax.jit(jax.vmap(f))  # noqa: E731
    step = batched(lambda s, r, st: ip.step(s, r, LAM, st))
    state = batched(lambda s, r: ip.init(s, r, LAM))(s, r)
    for _ in range(3):
        state = jax.block_until_ready(step(s, r, state))

    def direction(s, r, st):
        return ip._direction(st._replace(ridge=jnp.maximum(st.ridge, ip.MANY_RIDGE)), LAM, s, r, "delta_f")

    def ladder(s, r, st):
        d, a_max = direction(s, r, st)
        return ip._ladder(s, r, LAM, st, d, a_max, "delta_f", True)

    evaluate = ip.evaluate_factored if factored else ip.evaluate
    parts = {
        "step": step,
        "evaluate": batched(lambda s, r, st: evaluate(st.mu, s, r, LAM)),
        "restricted_lower": batched(lambda s, r, st: ip.restricted_lower(st.mu, st.pieces, s, r, LAM, "delta_f")),
        "direction": batched(direction),
        "direction+ladder": batched(ladder),
        "checked_objective": batched(lambda s, r, st: ip.checked_objective(st.mu, s, r, LAM, "delta_f", factored)),
    }
    for name, fn in parts.items():
        print(f"{name:>18}: {1e3 * timed(fn, s, r, state, repeats=args.repeats):8.1f} ms", flush=True)
    solve = batched(lambda s, r: ip.solve(s, r, LAM, rtol=1e-3))
    out = solve(s, r)
    print(f"solve to 1e-3: iterations {np.asarray(out.iterations).tolist()}, status {np.asarray(out.status).tolist()}, "
          f"{1e3 * timed(solve, s, r, repeats=1):.0f} ms")


if __name__ == "__main__":
    main()
