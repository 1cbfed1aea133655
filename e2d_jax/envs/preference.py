"""Preference feedback (Bradley-Terry): duels whose outcome is a coin flip.

The feedback that ranking and RLHF collect: the learner picks an ordered pair (a, b) of base
arms x_1, ..., x_k in R^d, as in the duelling game (:mod:`e2d_jax.envs.dueling`: features
phi_(a,b) = x_a + x_b, reward <x_a + x_b, f*>, one-row observation map M_(a,b) =
(x_a - x_b)^T), and observes whether a was preferred to b:

    y = 1 with probability sigma(<x_a - x_b, f*>),   sigma(z) = 1 / (1 + e^{-z}),

and y = 0 otherwise (the Bradley-Terry model). A self-duel (a, a) is a fair coin: it reveals
nothing. The game is linear in the logit M_pi f, so the observable span, global observability
and both DECs are those of the duelling game; what changes is the noise and the estimator.

The model class is a :class:`PreferenceModel` (a :class:`~e2d_jax.envs.linear.LinearModel`
of this feedback), which tells the linear agents to estimate f* by regularised logistic
maximum likelihood (:mod:`e2d_jax.estimators.logistic`) instead of ridge regression.

Information. The KL divergence of two Bernoulli outcomes with logits z, z' is a Bregman
divergence of the log-partition log(1 + e^z), whose curvature sigma'(z) is at most 1/4, so

    KL(Bern(sigma(z)) || Bern(sigma(z'))) <= (z - z')^2 / 8,

the Gaussian KL (z - z')^2 / (2 sigma^2) with sigma = 2. A preference model therefore has
``sigma = 2``: the agents' ``divergence="kl"`` is this bound, and ``divergence="squared"``
(the default, ||M_pi (g - f)||^2) is eight times it. The bound is tight where the outcome is
uncertain (logits near 0) and loose for lopsided duels, where sigma'(z) is small.

Builders: :func:`random_preference` (base arms as the authors' ``random_dueling``: N(0, 1),
optionally normalised, f* = e_1, all k^2 ordered pairs) and :func:`from_base_arms`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.envs import dueling
from e2d_jax.envs.linear import LinearEnvParams, LinearModel, assemble_model, default_dtype, linear_side_observation
from e2d_jax.types import Environment

#: The noise level of a preference model: the Gaussian whose KL bounds the Bernoulli KL.
PREFERENCE_SIGMA = 2.0


class PreferenceModel(LinearModel):
    """A linear model whose observations are Bernoulli outcomes with logit M_pi f
    (Bradley-Terry). The same fields as :class:`~e2d_jax.envs.linear.LinearModel`;
    ``sigma`` is :data:`PREFERENCE_SIGMA` (see the module docstring)."""

    __slots__ = ()


class PreferenceEnvParams(LinearEnvParams):
    """A preference instance: the :class:`PreferenceModel` and the true parameter f*."""

    __slots__ = ()


def observe(key: jax.Array, params: PreferenceEnvParams, action: jax.Array) -> jax.Array:
    """Samples y_i ~ Bernoulli(sigma((M_pi f*)_i)) for ``pi = action``, as 0.0 or 1.0; padded
    entries are 0."""
    model = params.model
    mat = model.obs_matrices[action]
    mask = model.obs_mask[action]
    win = jax.random.uniform(key, mask.shape, dtype=mat.dtype) < jax.nn.sigmoid(mat @ params.theta)
    return jnp.where(mask, win.astype(mat.dtype), 0.0)


def mean_rewards(params: PreferenceEnvParams) -> jax.Array:
    """(K,) expected rewards <phi_pi, f*>."""
    return params.model.features @ params.theta


def _model(params: PreferenceEnvParams) -> PreferenceModel:
    return params.model


ENVIRONMENT = Environment(observe=observe, mean_rewards=mean_rewards, model=_model)


def as_preference(params: LinearEnvParams) -> PreferenceEnvParams:
    """The preference game of a linear game's features and observation maps (the logits), with
    the same f*: its noise becomes Bernoulli and ``sigma`` :data:`PREFERENCE_SIGMA`."""
    model = params.model
    model = PreferenceModel(*model._replace(sigma=jnp.asarray(PREFERENCE_SIGMA, model.features.dtype)))
    return PreferenceEnvParams(model=model, theta=params.theta)


def random_preference(key: jax.Array, d: int, num_arms: int, *, normalize: bool = False,
                      dtype=None) -> PreferenceEnvParams:
    """The Bradley-Terry duelling bandit with random base arms (those of the authors'
    ``random_dueling``: i.i.d. N(0, 1) entries, optionally normalised, f* = e_1).

    Args:
      key: PRNG key for the base arms (a batch of keys under ``jax.vmap`` gives a batch).
      d: dimension (>= 1).
      num_arms: k base arms (>= 2); the game has K = k^2 pair actions (pair (a, b) is a k + b).
      normalize: scale each base arm to unit norm.
      dtype: float dtype (default float64 under x64, else float32).

    Returns:
      PreferenceEnvParams with K = k^2 actions and ``model.radius`` = 1; the same base arms and
      f* as :func:`e2d_jax.envs.dueling.random_dueling` with the same key.
    """
    V.check_int("d", d, minimum=1)
    V.check_int("num_arms", num_arms, minimum=2)
    dtype = default_dtype(dtype)
    base = jax.random.normal(key, (num_arms, d), dtype=jnp.float32).astype(dtype)
    if normalize:
        base = base / jnp.linalg.norm(base, axis=-1, keepdims=True)
    features, obs = dueling.pairs(base)
    mask = jnp.ones((num_arms * num_arms, 1), bool)
    model = assemble_model(features, obs, mask, PREFERENCE_SIGMA, min(d, num_arms - 1), 1.0)
    return PreferenceEnvParams(model=PreferenceModel(*model), theta=jnp.zeros((d,), dtype).at[0].set(1.0))


def from_base_arms(base, theta=None, *, radius=None, dtype=None) -> PreferenceEnvParams:
    """The Bradley-Terry duelling game of given base arms (all k^2 ordered pairs).

    Args:
      base: (k, d) base arms, k >= 2, finite.
      theta: (d,) f*, finite (default e_1): the logit of a duel (a, b) is <x_a - x_b, theta>.
      radius: the known bound on ||f*|| (default ||theta||).
      dtype: float dtype (default float64 under x64, else float32).

    The game is checked for global observability (:func:`e2d_jax.envs.linear.observability`).
    """
    base, theta = dueling.check_base_arms(base, theta)
    features, obs = dueling.pairs(base)
    params = linear_side_observation(features, obs, theta, sigma=PREFERENCE_SIGMA,
                                     obs_mask=np.ones(obs.shape[:2], bool), radius=radius, dtype=default_dtype(dtype))
    return as_preference(params)
