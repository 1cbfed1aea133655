"""Thompson sampling with the Gaussian posterior of ridge regression.

With prior f ~ N(0, sigma^2 / reg I) and Gaussian noise of known sigma, the posterior after
all observations (side observations included) is N(f_hat_t, sigma^2 V_t^{-1}). Each round
draws f_tilde = f_hat_t + scale * sigma * L_t z, z ~ N(0, I_d), L_t L_t^T = V_t^{-1}, and plays
argmax_pi <phi_pi, f_tilde> (``scale`` > 1 inflates the posterior, as in frequentist
analyses of linear TS). Finite classes with a linear view run through it (see
``e2d_jax.agents.ucb.as_linear``).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _linalg
from e2d_jax import _validation as V
from e2d_jax.agents.ucb import as_linear
from e2d_jax.estimators import ridge
from e2d_jax.types import STATUS_NONFINITE, STATUS_OK, ActInfo, Agent


class TSState(NamedTuple):
    ridge: ridge.RidgeState


def sample_parameter(key, state: TSState, sigma, scale):
    """f_tilde ~ N(f_hat, (scale sigma)^2 V^{-1}) as f_hat + scale sigma chol(V^{-1}) z."""
    r = state.ridge
    z = jax.random.normal(key, r.f_hat.shape, r.f_hat.dtype)
    return r.f_hat + scale * sigma * (_linalg.psd_cholesky(r.v_inv) @ z)


def thompson_sampling(*, scale=1.0, reg=1.0) -> Agent:
    """Builds the TS agent.

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
        model = as_linear(model, "thompson_sampling")
        return TSState(ridge.init(model.dim, reg=reg, dtype=model.features.dtype))

    def act(key, state, model):
        model = as_linear(model, "thompson_sampling")
        f_tilde = sample_parameter(key, state, model.sigma, scale)
        values = model.features @ f_tilde
        status = jnp.where(jnp.all(jnp.isfinite(values)), STATUS_OK, STATUS_NONFINITE)
        return jnp.argmax(values).astype(jnp.int32), state, ActInfo(status=status.astype(jnp.int32))

    def update(state, action, obs, model):
        model = as_linear(model, "thompson_sampling")
        return TSState(ridge.update(state.ridge, model.obs_matrices[action], obs))

    return Agent(init=init, act=act, update=update)
