"""Agents: Anytime-E2D and fixed-horizon E2D for both model families (:mod:`~e2d_jax.agents.e2d`), and
the baselines UCB, Thompson sampling and information-directed sampling."""
