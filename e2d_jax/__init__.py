"""e2d_jax: Anytime-E2D and the average-constrained DEC in JAX.

Kirschner, Bakhtiari, Chandak, Tkachuk, Szepesvari. "Regret Minimization via Saddle Point
Optimization", NeurIPS 2023. The public surface is re-exported here; see README.md.
"""
from e2d_jax.agents.e2d import AGENT_SOLVER, anytime_e2d, fixed_horizon_e2d, tuned_lambda
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
from e2d_jax.dec.linear import PAPER_BUDGET, SolverConfig, linear_acdec, linear_offset_dec
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
from e2d_jax.agents.finite import anytime_e2d as finite_anytime_e2d
from e2d_jax.agents.finite import e2d as finite_e2d
from e2d_jax.agents.finite import linear_view, posterior_sampling, tune_lambda
from e2d_jax.dec.bounds import acdec_curve, compare_with_bound, table1_bound
from e2d_jax.dec.finite import finite_acdec, finite_offset_dec
from e2d_jax.envs import finite
from e2d_jax.envs.finite import (
    BernoulliObs,
    FiniteEnvParams,
    FiniteModel,
    GaussianObs,
    bernoulli_bandit_class,
    finite_class,
    gap_matrix,
    gap_matrix_f,
    info_matrix,
    multi_armed_bandit_class,
    multi_armed_bandit_grid,
    revealing_class,
)
from e2d_jax.estimators import ewa
from e2d_jax.plotting import mean_ci95, plot_regret

__version__ = "0.1.0"

__all__ = [
    "AGENT_SOLVER",
    "PAPER_BUDGET",
    "SolverConfig",
    "anytime_e2d",
    "fixed_horizon_e2d",
    "linear_acdec",
    "linear_offset_dec",
    "tuned_lambda",
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
    "BernoulliObs",
    "FiniteEnvParams",
    "FiniteModel",
    "GaussianObs",
    "acdec_curve",
    "compare_with_bound",
    "mean_ci95",
    "plot_regret",
    "bernoulli_bandit_class",
    "ewa",
    "finite",
    "finite_acdec",
    "finite_anytime_e2d",
    "finite_class",
    "finite_e2d",
    "finite_offset_dec",
    "gap_matrix",
    "gap_matrix_f",
    "info_matrix",
    "linear_view",
    "multi_armed_bandit_class",
    "multi_armed_bandit_grid",
    "posterior_sampling",
    "revealing_class",
    "table1_bound",
    "tune_lambda",
]
