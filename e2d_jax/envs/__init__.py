"""Environments: the model classes a learner knows, the instances drawn from them, and the
functions that play a round.

* :mod:`e2d_jax.envs.linear` - linear bandits with side observations (the paper's
  experiments);
* :mod:`e2d_jax.envs.finite` - finite model classes with Gaussian or Bernoulli observations;
* :mod:`e2d_jax.envs.family` - telling the two apart (``family_of``, ``environment_of``).
"""
