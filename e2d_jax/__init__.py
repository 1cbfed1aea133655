"""e2d_jax: Anytime-E2D and the average-constrained DEC in JAX.

Kirschner, Bakhtiari, Chandak, Tkachuk, Szepesvari. "Regret Minimization via Saddle Point
Optimization", NeurIPS 2023. The public surface is re-exported here; see README.md.
"""
from e2d_jax.agents.e2d import AGENT_SOLVER
from e2d_jax.agents.family import anytime_e2d, family_of, fixed_horizon_e2d, tune_lambda
from e2d_jax.agents.finite import AGENT_SOLVER as FINITE_AGENT_SOLVER
from e2d_jax.agents.finite import posterior_sampling
from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.dec.bounds import acdec_curve, compare_with_bound, table1_bound
from e2d_jax.dec.finite import FiniteSolverConfig, finite_acdec, finite_offset_dec
from e2d_jax.dec.linear import PAPER_BUDGET, LinearSolverConfig, linear_acdec, linear_offset_dec
from e2d_jax.envs import finite, linear
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
from e2d_jax.envs.linear import (
    LinearEnvParams,
    LinearModel,
    linear_bandit,
    linear_side_observation,
    multi_armed_bandit,
    semi_bandit,
)
from e2d_jax.estimators import ewa, ridge
from e2d_jax.plotting import mean_ci95, plot_regret
from e2d_jax.simulate import (
    RolloutResult,
    Simulation,
    SolverStats,
    hparam_grid,
    instance_key,
    instance_keys,
    rollout,
    run_keys,
    seed_keys,
    simulate,
    solver_summary,
    valid_seeds,
)
from e2d_jax.types import (
    STATUS_MAX_ITER,
    STATUS_NONFINITE,
    STATUS_OK,
    ActInfo,
    Agent,
    DecResult,
    E2DInfo,
    Environment,
)

__version__ = "0.2.0"

__all__ = [
    "AGENT_SOLVER",
    "FINITE_AGENT_SOLVER",
    "PAPER_BUDGET",
    "ActInfo",
    "Agent",
    "BernoulliObs",
    "DecResult",
    "E2DInfo",
    "Environment",
    "FiniteEnvParams",
    "FiniteModel",
    "FiniteSolverConfig",
    "GaussianObs",
    "LinearEnvParams",
    "LinearModel",
    "LinearSolverConfig",
    "RolloutResult",
    "STATUS_MAX_ITER",
    "STATUS_NONFINITE",
    "STATUS_OK",
    "Simulation",
    "SolverStats",
    "acdec_curve",
    "anytime_e2d",
    "bernoulli_bandit_class",
    "compare_with_bound",
    "ewa",
    "family_of",
    "finite",
    "finite_acdec",
    "finite_class",
    "finite_offset_dec",
    "fixed_horizon_e2d",
    "gap_matrix",
    "gap_matrix_f",
    "hparam_grid",
    "info_matrix",
    "instance_key",
    "instance_keys",
    "linear",
    "linear_acdec",
    "linear_bandit",
    "linear_offset_dec",
    "linear_side_observation",
    "mean_ci95",
    "multi_armed_bandit",
    "multi_armed_bandit_class",
    "multi_armed_bandit_grid",
    "plot_regret",
    "posterior_sampling",
    "revealing_class",
    "ridge",
    "rollout",
    "run_keys",
    "seed_keys",
    "semi_bandit",
    "simulate",
    "solver_summary",
    "table1_bound",
    "thompson_sampling",
    "tune_lambda",
    "ucb",
    "valid_seeds",
]
