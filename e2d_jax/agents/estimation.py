"""The estimator a linear agent keeps, chosen by the feedback of its model class.

* Gaussian observations (a :class:`~e2d_jax.envs.linear.LinearModel`): ridge regression
  (:mod:`e2d_jax.estimators.ridge`), the paper's estimation oracle.
* Preference feedback (a :class:`~e2d_jax.envs.preference.PreferenceModel`, Bernoulli outcomes
  with logit M_pi f): regularised logistic maximum likelihood
  (:mod:`e2d_jax.estimators.logistic`).

The choice is a Python ``isinstance`` at trace time, so it costs nothing in a round. Both
states carry ``f_hat`` (the estimate), ``v_inv`` (the inverse design V_t^{-1}), ``logdet`` and
``count``, which is all that the agents read besides the confidence width and, for Thompson
sampling, a posterior draw (:func:`sample_parameter`: the ridge posterior N(f_hat, sigma^2
V_t^{-1}), or the Laplace approximation N(f_hat, H_t^{-1}) of the logistic posterior).
"""
from __future__ import annotations

import jax

from e2d_jax import _linalg
from e2d_jax.envs.preference import PreferenceModel
from e2d_jax.estimators import logistic, ridge


def is_preference(model) -> bool:
    """Whether ``model`` observes Bernoulli preference outcomes (logistic estimation)."""
    return isinstance(model, PreferenceModel)


def init(model, reg):
    """The empty estimator of ``model``'s feedback, with regulariser ``reg`` (V_0 = reg I)."""
    dtype = model.features.dtype
    if is_preference(model):
        return logistic.init(model.num_actions, model.obs_matrices.shape[-2], model.dim, reg=reg, dtype=dtype)
    return ridge.init(model.dim, reg=reg, dtype=dtype)


def update(state, model, action, obs, reg):
    """Adds the round's observation ``obs`` of ``action``."""
    if is_preference(model):
        return logistic.update(state, model.obs_matrices, action, obs, reg=reg)
    return ridge.update(state, model.obs_matrices[action], obs)


def confidence_width(state, model, bound, log_inv_delta, reg):
    """beta_t^{1/2}: the radius of the confidence ellipsoid ||f - f_hat_t||_{V_t} <= beta_t^{1/2}
    (:func:`e2d_jax.estimators.ridge.confidence_width` with the model's sigma, or
    :func:`e2d_jax.estimators.logistic.confidence_width`)."""
    if is_preference(model):
        return logistic.confidence_width(state, model.obs_matrices, bound, log_inv_delta, reg=reg)
    return ridge.confidence_width(state, model.sigma, bound, log_inv_delta, reg=reg)


def sample_parameter(key, state, model, scale):
    """A posterior draw f_tilde, the covariance inflated by ``scale``^2: f_hat + scale sigma
    chol(V^{-1}) z for ridge, f_hat + scale chol(H^{-1}) z for logistic (Laplace)."""
    z = jax.random.normal(key, state.f_hat.shape, state.f_hat.dtype)
    if is_preference(model):
        return state.f_hat + scale * (_linalg.psd_cholesky(state.h_inv) @ z)
    return state.f_hat + scale * model.sigma * (_linalg.psd_cholesky(state.v_inv) @ z)
