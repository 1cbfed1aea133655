"""Simulation: one run as a ``lax.scan`` (:mod:`~e2d_jax.sim.rollout`), many seeds, instances and
hyperparameter cells in one compiled call (:mod:`~e2d_jax.sim.simulate`), and their summaries
(:mod:`~e2d_jax.sim.summaries`)."""
