"""UCB for linear bandits with side observations (OFUL, Abbasi-Yadkori et al., 2011).

The estimate is ridge regression on *all* observations (side observations included). The
action maximises the optimistic index

    <phi_pi, f_hat_t> + beta_t^{1/2} ||phi_pi||_{V_t^{-1}},
    beta_t^{1/2} = sigma sqrt(2 log(1/delta) + log(det V_t / det V_0)) + sqrt(reg) S,

the confidence width of Abbasi-Yadkori et al. (2011, Theorem 2) with V_0 = reg I and
||f*|| <= S. Every observation row is a sigma-sub-Gaussian scalar observation, so the same
self-normalised bound covers vector observations. Ties go to the lowest index.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _validation as V
from e2d_jax.estimators import ridge
from e2d_jax.types import STATUS_NONFINITE, STATUS_OK, ActInfo, Agent


class UCBState(NamedTuple):
    ridge: ridge.RidgeState


def ucb(*, delta: float = 0.01, radius: float = 1.0, reg: float = 1.0) -> Agent:
    """Builds the UCB agent.

    Args:
      delta: confidence level in (0, 1).
      radius: S, the assumed bound on ||f*|| (the library's random instances have ||f*|| = 1).
      reg: ridge regulariser, V_0 = reg I (> 0).
    """
    V.check_positive("delta", delta)
    if not delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    V.check_positive("radius", radius)
    V.check_positive("reg", reg)

    def init(key, model):
        del key
        return UCBState(ridge.init(model.dim, reg=reg, dtype=model.features.dtype))

    def act(key, state, model):
        del key
        r = state.ridge
        beta_sqrt = model.sigma * jnp.sqrt(2.0 * jnp.log(1.0 / delta) + r.logdet) + jnp.sqrt(reg) * radius
        index = model.features @ r.f_hat + beta_sqrt * ridge.widths(r, model.features)
        status = jnp.where(jnp.all(jnp.isfinite(index)), STATUS_OK, STATUS_NONFINITE)
        return jnp.argmax(index).astype(jnp.int32), state, ActInfo(status=status.astype(jnp.int32))

    def update(state, action, obs, model):
        return UCBState(ridge.update(state.ridge, model.obs_matrices[action], obs))

    return Agent(init=init, act=act, update=update)
