"""Experiments as data: sweep specs, resumable chunked runs on any executor, and their tables.

Knows no experiment of the paper (those are in :mod:`e2d_jax.paper`) and no command-line
flag (those are in :mod:`e2d_jax.cli`).
"""
from e2d_jax.experiments import catalogue as catalogue
from e2d_jax.experiments.registry import register_agent as register_agent
from e2d_jax.experiments.registry import register_env as register_env
from e2d_jax.experiments.runner import collect_stored as collect_stored
from e2d_jax.experiments.runner import run_sweep as run_sweep
from e2d_jax.experiments.spec import SweepAgent as SweepAgent
from e2d_jax.experiments.spec import SweepError as SweepError
from e2d_jax.experiments.spec import SweepSpec as SweepSpec
from e2d_jax.experiments.spec import load_toml as load_toml
from e2d_jax.experiments.spec import units as units
from e2d_jax.experiments.storage import read_curves as read_curves
from e2d_jax.experiments.storage import read_table as read_table
from e2d_jax.experiments.work import INTERRUPTED as INTERRUPTED
from e2d_jax.experiments.work import Interrupted as Interrupted

__all__ = ["INTERRUPTED", "catalogue", "Interrupted", "SweepAgent", "SweepError", "SweepSpec", "collect_stored", "load_toml",
           "read_curves", "read_table", "register_agent", "register_env", "run_sweep", "units"]
