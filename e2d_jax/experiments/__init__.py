"""Experiments as data: sweep specs, resumable chunked runs, tables, and the paper's presets."""
from e2d_jax.experiments.presets import experiment
from e2d_jax.experiments.runner import SweepError, collect, run_sweep
from e2d_jax.experiments.spec import AgentEntry, SweepSpec, load_toml, units
from e2d_jax.experiments.storage import read_curves, read_table

__all__ = ["AgentEntry", "SweepError", "SweepSpec", "collect", "experiment", "load_toml", "read_curves",
           "read_table", "run_sweep", "units"]
