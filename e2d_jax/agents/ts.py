"""Thompson sampling: with the Gaussian posterior of ridge regression on linear models, and
with the EWA posterior on finite classes.

Linear models (:func:`thompson_sampling`). With prior f ~ N(0, sigma^2 / reg I) and Gaussian
noise of known sigma, the posterior after all observations (side observations included) is
N(f_hat_t, sigma^2 V_t^{-1}). Each round draws f_tilde = f_hat_t + scale * sigma * L_t z,
z ~ N(0, I_d), L_t L_t^T = V_t^{-1}, and plays argmax_pi <phi_pi, f_tilde> (``scale`` > 1
inflates the posterior, as in frequentist analyses of linear TS). Finite classes with a
linear view run through it (:func:`e2d_jax.envs.family.as_linear_model`).

Finite classes (:func:`posterior_sampling`): sample f ~ p_t with the EWA weights (for
eta = 1 the exact Bayesian posterior under a uniform prior) and play argmax_pi r_f(pi).
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.agents import estimation
from e2d_jax.envs import finite
from e2d_jax.envs.family import as_linear_model
from e2d_jax.envs.linear import playable
from e2d_jax.estimators import ewa, logistic, ridge
from e2d_jax.types import ActInfo, Agent, AgentSpec, Status


class TSState(NamedTuple):
    estimate: ridge.RidgeState | logistic.LogisticState  # by the model's feedback (agents.estimation)


def thompson_sampling(*, scale=1.0, reg=1.0) -> Agent:
    """Thompson sampling with the ridge posterior (linear models, or a finite class's linear view).

    Args:
      scale: posterior inflation factor (> 0; may be traced); 1 is the Bayesian posterior.
      reg: ridge regulariser, V_0 = reg I (> 0; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.ActInfo`.
    """
    V.check_positive("scale", scale)
    V.check_positive("reg", reg)

    def init(key, model):
        del key
        model = as_linear_model(model, "thompson_sampling")
        return TSState(estimation.init(model, reg))

    def act(key, state, model):
        model = as_linear_model(model, "thompson_sampling")
        f_tilde = estimation.sample_parameter(key, state.estimate, model, scale)
        values = model.features @ f_tilde
        status = jnp.where(jnp.all(jnp.isfinite(values)), Status.OK, Status.NONFINITE)
        return playable(model, jnp.argmax(values).astype(jnp.int32)), state, ActInfo(status=status.astype(jnp.int32))

    def update(state, action, obs, model):
        model = as_linear_model(model, "thompson_sampling")
        return TSState(estimation.update(state.estimate, model, action, obs, reg))

    return Agent(init=init, act=act, update=update, config=AgentSpec.of(thompson_sampling, ("scale", "reg"), scale=scale, reg=reg))


class PosteriorSamplingState(NamedTuple):
    ewa: ewa.EWAState


def posterior_sampling(*, eta=1.0) -> Agent:
    """Thompson sampling on a finite class: f ~ p_t (EWA weights), play argmax_pi r_f(pi).

    Args:
      eta: EWA learning rate (1: the Bayesian posterior; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.ActInfo`.
    """
    V.check_positive("eta", eta)

    def check(model):
        if not isinstance(model, finite.FiniteModel):
            raise ValueError(f"model: posterior_sampling runs on finite classes, got a {type(model).__name__}; "
                             "for linear models use e2d_jax.thompson_sampling (the ridge posterior)")

    def init(key, model):
        del key
        check(model)
        return PosteriorSamplingState(ewa.init(model.num_models, dtype=model.rewards.dtype))

    def act(key, state, model):
        f = ewa.sample(key, state.ewa)
        action = jnp.argmax(model.rewards[f]).astype(jnp.int32)
        ok = jnp.all(jnp.isfinite(state.ewa.log_weights))
        return action, state, ActInfo(status=jnp.where(ok, Status.OK, Status.NONFINITE).astype(jnp.int32))

    def update(state, action, obs, model):
        ll = finite.log_likelihood(model, action, obs)
        return PosteriorSamplingState(ewa.update(state.ewa, ll, eta=eta))

    return Agent(init=init, act=act, update=update, config=AgentSpec.of(posterior_sampling, ("eta",), eta=eta))
