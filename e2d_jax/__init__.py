"""e2d_jax: Anytime-E2D and the average-constrained DEC in JAX.

Kirschner, Bakhtiari, Chandak, Tkachuk, Szepesvári. "Regret Minimization via Saddle Point
Optimization", NeurIPS 2023.

The names below are the public surface; the layers they come from are importable on their
own: :mod:`e2d_jax.envs`, :mod:`e2d_jax.estimators`, :mod:`e2d_jax.dec`, :mod:`e2d_jax.agents`,
:mod:`e2d_jax.sim`, :mod:`e2d_jax.experiments` (sweeps, storage, executors),
:mod:`e2d_jax.paper` (the paper's experiments and figures), :mod:`e2d_jax.plotting` and
:mod:`e2d_jax.cli`.
"""
from e2d_jax.version import __version__ as __version__
from e2d_jax.agents.e2d import anytime_e2d as anytime_e2d
from e2d_jax.agents.e2d import fixed_horizon_e2d as fixed_horizon_e2d
from e2d_jax.agents.e2d import tune_lambda as tune_lambda
from e2d_jax.agents.ids import ids as ids
from e2d_jax.agents.oracle import epsilon_greedy as epsilon_greedy
from e2d_jax.agents.oracle import squarecb as squarecb
from e2d_jax.agents.ts import posterior_sampling as posterior_sampling
from e2d_jax.agents.ts import thompson_sampling as thompson_sampling
from e2d_jax.agents.ucb import ucb as ucb
from e2d_jax.dec.bounds import acdec_curve as acdec_curve
from e2d_jax.dec.bounds import table1_bound as table1_bound
from e2d_jax.dec.finite import finite_acdec as finite_acdec
from e2d_jax.dec.finite import finite_offset_dec as finite_offset_dec
from e2d_jax.dec.linear import linear_acdec as linear_acdec
from e2d_jax.dec.linear import linear_offset_dec as linear_offset_dec
from e2d_jax.envs.finite import BernoulliObs as BernoulliObs
from e2d_jax.envs.finite import FiniteModel as FiniteModel
from e2d_jax.envs.finite import GaussianObs as GaussianObs
from e2d_jax.envs.finite import finite_class as finite_class
from e2d_jax.envs.finite import revealing_class as revealing_class
from e2d_jax.envs.linear import LinearModel as LinearModel
from e2d_jax.envs.linear import linear_bandit as linear_bandit
from e2d_jax.envs.linear import linear_side_observation as linear_side_observation
from e2d_jax.envs.linear import multi_armed_bandit as multi_armed_bandit
from e2d_jax.envs.linear import semi_bandit as semi_bandit
from e2d_jax.results import Results as Results
from e2d_jax.sim.results import Simulation as Simulation
from e2d_jax.sim.rollout import instance_key as instance_key
from e2d_jax.sim.rollout import instance_keys as instance_keys
from e2d_jax.sim.rollout import rollout as rollout
from e2d_jax.sim.simulate import enable_compilation_cache as enable_compilation_cache
from e2d_jax.sim.simulate import simulate as simulate
from e2d_jax.sim.summaries import hparam_grid as hparam_grid
from e2d_jax.sim.summaries import valid_seeds as valid_seeds
from e2d_jax.types import ActInfo as ActInfo
from e2d_jax.types import Agent as Agent
from e2d_jax.types import DecResult as DecResult
from e2d_jax.types import E2DInfo as E2DInfo
from e2d_jax.types import Environment as Environment
from e2d_jax.types import Status as Status

__all__ = [
    # types
    "ActInfo", "Agent", "DecResult", "E2DInfo", "Environment", "Status",
    # model classes and instances
    "BernoulliObs", "FiniteModel", "GaussianObs", "LinearModel", "finite_class", "linear_bandit",
    "linear_side_observation", "multi_armed_bandit", "revealing_class", "semi_bandit",
    # the DEC
    "acdec_curve", "finite_acdec", "finite_offset_dec", "linear_acdec", "linear_offset_dec", "table1_bound",
    # agents
    "anytime_e2d", "epsilon_greedy", "fixed_horizon_e2d", "ids", "posterior_sampling", "squarecb", "thompson_sampling",
    "tune_lambda", "ucb",
    # simulation
    "Results", "Simulation", "enable_compilation_cache", "hparam_grid", "instance_key", "instance_keys", "rollout",
    "simulate", "valid_seeds",
]
