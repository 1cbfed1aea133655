"""The ridge estimate an agent keeps in float32 over a long run, against the exact one.

What: runs Thompson sampling (``e2d_jax.thompson_sampling``) on one instance of the revealing
semi-bandit (d=3, K=10, instance seed 0, float32) for ``--horizon`` rounds with one PRNG key,
and accumulates beside the agent, in float64, the Gram matrix V_t and b_t of the same actions
and observations. Prints how often per tenth of the run the agent played each action, and the
kept V_t^{-1}, b_t and f_hat against the exact inverse, b_t and f_hat = V_t^{-1} b_t.

The agent keeps V_t^{-1} by rank-one (Sherman-Morrison) updates and b_t as a running sum; the
estimate is their product. Both factors stay accurate in float32, but the product cancels
entries of order 10^5 down to order 1, so the inverse's small relative error reaches f_hat
amplified; on this instance that error passes the smallest gap (action 0's, 0.06) after about
5 * 10^4 rounds, and TS then plays action 0 about half of the time (the long-horizon
reproduction, ``e2d-jax reproduce horizons``, runs in float64 for this reason).

Run:  python benchmarks/ridge_precision.py [--horizon 100000] [--key 11]

Typical printout (2-core shared x86-64 CPU, the defaults, 14 s;
``results/cpu-2core/horizons/float32_float64.json``)::

    plays of action 0 per 10000 rounds: [1520, 171, 58, 43, 15, 1, 1, 1088, 4071, 5685] (gap 0.0609)
    V^-1 relative error 6.9e-04; b relative error 3.2e-06
    f_hat kept  [-0.3957  0.8786 -0.3786]
    f_hat exact [-0.0494  0.9048 -0.425 ]
"""
from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)  # the exact statistics; the agent runs in float32

from e2d_jax.agents.ts import thompson_sampling  # noqa: E402
from e2d_jax.envs import linear  # noqa: E402
from e2d_jax.envs.family import environment_of  # noqa: E402
from e2d_jax.experiments import registry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--key", type=int, default=11)
    args = parser.parse_args()
    _, params, _ = registry.build_instance("semi-bandit", 0, {"d": 3, "arms": 10}, "float32")
    env = environment_of(params)
    agent = thompson_sampling()
    model = env.model(params)
    exact_maps = jnp.asarray(np.asarray(model.obs_matrices, np.float64))

    def run(key):
        d = model.features.shape[1]

        def step(carry, k):
            state, b, gram = carry
            key_act, key_obs = jax.random.split(k)
            action, state, _ = agent.act(key_act, state, model)
            obs = env.observe(key_obs, params, action)
            state = agent.update(state, action, obs, model)
            m = exact_maps[action]
            return (state, b + m.T @ obs.astype(jnp.float64), gram + m.T @ m), action

        start = (agent.init(key, model), jnp.zeros(d), jnp.eye(d))
        return lax.scan(step, start, jax.random.split(key, args.horizon))

    (state, b, gram), actions = jax.jit(run)(jax.random.key(args.key))
    actions = np.asarray(actions)
    gaps = np.asarray(linear.gaps(params))
    worst = int(np.argsort(gaps)[1])  # the smallest positive gap
    tenth = max(1, args.horizon // 10)
    plays = [int((actions[i:i + tenth] == worst).sum()) for i in range(0, args.horizon, tenth)]
    print(f"plays of action {worst} per {tenth} rounds: {plays} (gap {gaps[worst]:.4f})")
    exact_inv = np.linalg.inv(np.asarray(gram))
    kept = state.estimate
    v_err = np.linalg.norm(np.asarray(kept.v_inv, np.float64) - exact_inv) / np.linalg.norm(exact_inv)
    b_err = np.linalg.norm(np.asarray(kept.b, np.float64) - np.asarray(b)) / np.linalg.norm(np.asarray(b))
    print(f"V^-1 relative error {v_err:.1e}; b relative error {b_err:.1e}")
    print("f_hat kept ", np.round(np.asarray(kept.f_hat, np.float64), 4))
    print("f_hat exact", np.round(exact_inv @ np.asarray(b), 4))


if __name__ == "__main__":
    main()
