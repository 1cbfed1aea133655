"""The paper's own material: its experiments as Python objects and sweeps
(:mod:`~e2d_jax.paper.presets`), its claims over many instances
(:mod:`~e2d_jax.paper.claims`), Figure 1 and the sensitivity figure
(:mod:`~e2d_jax.paper.figures`), the linear bounds of Table 1 checked against certified
DEC values (:mod:`~e2d_jax.paper.linear_bounds`), the zoo (:mod:`~e2d_jax.paper.zoo`) and the
regret's growth over long horizons (:mod:`~e2d_jax.paper.horizons`).
"""
from e2d_jax.paper.presets import Experiment as Experiment
from e2d_jax.paper.presets import experiment as experiment
from e2d_jax.paper.presets import experiment_spec as experiment_spec

__all__ = ["Experiment", "experiment", "experiment_spec"]
