"""Per-seed runs of every agent family at small sizes, for the bit-identity tests.

Imported by ``tests/integration/test_invariance.py``, and run as a script (``python invariance_case.py
OUT.npz``) in a subprocess with forced host devices, where XLA's device count must be set
before JAX starts. Each case is (environment, agent); the runs are float32 (the library's
default dtype), as sweeps are.
"""
from __future__ import annotations

import sys

import jax
import numpy as np

from e2d_jax.experiments import registry
from e2d_jax.sim.simulate import simulate

HORIZON = 40
SEEDS = 12
#: Seeds per call and device in the device-count test: 12 seeds fill 3 devices at 4 lanes
#: (``simulate`` uses only the devices the seeds fill, so at the default 64 lanes 12 seeds
#: would run on one device and the split would go untested).
SPLIT_LANES = 4

#: (environment name, its sizes, agent name); one E2D agent of each family, Anytime-E2D on a
#: d > K instance (the observable span), and TS (a LAPACK-free linear baseline).
CASES = (
    ("semi-bandit", dict(d=3, arms=5), "anytime-e2d"),
    ("semi-bandit", dict(d=6, arms=4), "anytime-e2d"),
    ("semi-bandit", dict(d=3, arms=5), "e2d-n40"),
    ("finite-mab", dict(arms=3, models=6), "anytime-e2d"),
    ("finite-revealing", dict(arms=4, models=6), "e2d-n40"),
    ("finite-mab", dict(arms=3, models=6), "ts-finite"),
    ("semi-bandit", dict(d=3, arms=5), "ts"),
)


def case_id(case) -> str:
    env, sizes, agent = case
    return f"{env}-{'-'.join(f'{k}{v}' for k, v in sizes.items())}-{agent}"


def run_case(case, num_seeds=SEEDS, first_seed=0, devices=None, lanes=None):
    """The result tree of seeds ``first_seed .. first_seed + num_seeds - 1`` (NumPy)."""
    env_name, sizes, agent_name = case
    _, params, family = registry.build_instance(env_name, 0, sizes, "float32")
    agent = registry.agent_factory(agent_name, horizon=HORIZON, family=family)()
    sim = simulate(params, agent, horizon=HORIZON, num_seeds=num_seeds, first_seed=first_seed, record_every=10,
                   devices=devices, lanes=lanes)
    return sim.result


def flatten(result) -> dict:
    leaves, _ = jax.tree_util.tree_flatten(result)
    return {f"leaf{i}": np.asarray(x) for i, x in enumerate(leaves)}


def main(path, lanes=None):
    out = {}
    for case in CASES:
        for name, arr in flatten(run_case(case, lanes=lanes)).items():
            out[f"{case_id(case)}/{name}"] = arr
    np.savez(path, **out)


if __name__ == "__main__":
    if "--x64" in sys.argv:  # as the test session runs (tests/conftest.py)
        jax.config.update("jax_enable_x64", True)
    lanes = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--lanes=")), None)
    main(sys.argv[1], lanes)
