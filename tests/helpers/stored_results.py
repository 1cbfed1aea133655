"""Per-seed results of environments without contexts, stored so that a change of the simulator
(contexts, the round's instance) can be checked against them.

``python tests/helpers/stored_results.py OUT.npz [AGENT,...]`` writes them (every agent, or
those named), in a process of its own with
fixed settings (x64 enabled, as the tests run: float32 instances then still compute some
scalars in float64; XLA's CPU optimisation level 0, whose float rounding differs from level
1's), so that the stored file and the test's fresh run compare whatever the test run's flags.
``tests/data/no_context_results.npz`` was written so by the simulator before contexts existed.
"""
import os
import sys

#: The process's XLA flags (set before jax starts).
XLA_FLAGS = "--xla_backend_optimization_level=0"

if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = XLA_FLAGS

import jax  # noqa: E402
import numpy as np  # noqa: E402

import e2d_jax as e2d  # noqa: E402
from e2d_jax.dec.solvers import TRACKING  # noqa: E402
from e2d_jax.experiments import registry  # noqa: E402

#: (registered environment, builder options): a linear and a finite family, preference feedback.
CASES = (("semi-bandit", {"d": 3, "arms": 10}), ("finite-mab", {}), ("preference", {"d": 3, "arms": 4}))
AGENTS = ("anytime-e2d", "e2d", "ids", "ucb", "ts")
HORIZON, SEEDS, EVERY = 30, 4, 10


def _agent(name, env, linear):
    if name == "anytime-e2d":
        # On linear models, the per-round budget the stored file was written with: its warm
        # starts unmixed.
        return e2d.anytime_e2d(solver=TRACKING.replace(warm_mix=0.0, exchange=False)) if linear else e2d.anytime_e2d()
    if name == "e2d":
        return e2d.fixed_horizon_e2d(horizon=HORIZON)
    if name == "ts" and env == "finite-mab":
        return e2d.posterior_sampling()
    return {"ids": e2d.ids, "ucb": e2d.ucb, "ts": e2d.thompson_sampling}[name]()


def compute(agents=AGENTS) -> dict:
    """``{env/agent/regret: (seeds, R), env/agent/action_counts: (seeds, K)}`` in float32."""
    out = {}
    for env, options in CASES:
        _, params, _ = registry.build_instance(env, 0, options, "float32")
        for name in agents:
            linear = isinstance(params.model, e2d.LinearModel)
            sim = e2d.simulate(params, _agent(name, env, linear), horizon=HORIZON, num_seeds=SEEDS, record_every=EVERY)
            out[f"{env}/{name}/regret"] = np.asarray(sim.result.regret)
            out[f"{env}/{name}/action_counts"] = np.asarray(sim.result.action_counts)
    return out


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    np.savez_compressed(sys.argv[1], **compute(tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else AGENTS))
