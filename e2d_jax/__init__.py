"""e2d_jax: Anytime-E2D and the average-constrained DEC in JAX.

Kirschner, Bakhtiari, Chandak, Tkachuk, Szepesvari. "Regret Minimization via Saddle Point
Optimization", NeurIPS 2023. The public surface is re-exported here; see README.md.
"""
from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.envs import linear
from e2d_jax.envs.linear import (
    LinearEnvParams,
    LinearModel,
    linear_bandit,
    linear_side_observation,
    multi_armed_bandit,
    semi_bandit,
)
from e2d_jax.estimators import ridge
from e2d_jax.simulate import RolloutResult, Simulation, rollout, seed_keys, simulate
from e2d_jax.types import (
    STATUS_MAX_ITER,
    STATUS_NONFINITE,
    STATUS_OK,
    ActInfo,
    Agent,
    DecResult,
    Environment,
)

__version__ = "0.1.0"

__all__ = [
    "ActInfo",
    "Agent",
    "DecResult",
    "Environment",
    "LinearEnvParams",
    "LinearModel",
    "RolloutResult",
    "STATUS_MAX_ITER",
    "STATUS_NONFINITE",
    "STATUS_OK",
    "Simulation",
    "linear",
    "linear_bandit",
    "linear_side_observation",
    "multi_armed_bandit",
    "ridge",
    "rollout",
    "seed_keys",
    "semi_bandit",
    "simulate",
    "thompson_sampling",
    "ucb",
]
