"""UCB for linear bandits with side observations (OFUL, Abbasi-Yadkori et al., 2011).

The estimate is ridge regression on *all* observations (side observations included). The
action maximises the optimistic index

    <phi_pi, f_hat_t> + beta_t^{1/2} ||phi_pi||_{V_t^{-1}},
    beta_t^{1/2} = sigma sqrt(2 log(1/delta) + log(det V_t / det V_0)) + sqrt(reg) S,

the confidence width of Abbasi-Yadkori et al. (2011, Theorem 2) with V_0 = reg I and
||f*|| <= S. S is the class's true bound ``model.radius`` unless given (1 for the random
semi-bandit and linear-bandit instances, sqrt(K) for the multi-armed bandit, max_g ||r_g||
for a finite class's linear view). Every observation row is a sigma-sub-Gaussian scalar
observation, so the same self-normalised bound covers vector observations. Ties go to the
lowest index.

Finite classes with a linear view (the Gaussian bandit builders of :mod:`e2d_jax.envs.finite`)
are run through that view (:func:`e2d_jax.envs.family.as_linear_model`), so the same agent
works on both model families.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.envs.family import as_linear_model
from e2d_jax.estimators import ridge
from e2d_jax.types import ActInfo, Agent, Status


class UCBState(NamedTuple):
    ridge: ridge.RidgeState


def ucb(*, delta=0.01, radius=None, reg=1.0) -> Agent:
    """Builds the UCB agent.

    Args:
      delta: confidence level in (0, 1) (may be traced).
      radius: S, the bound on ||f*|| (may be traced); default the class's ``model.radius``.
      reg: ridge regulariser, V_0 = reg I (> 0; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.ActInfo`.
    """
    V.check_positive("delta", delta)
    if V.is_concrete(delta) and not delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if radius is not None:
        V.check_positive("radius", radius)
    V.check_positive("reg", reg)

    def init(key, model):
        del key
        model = as_linear_model(model, "ucb")
        return UCBState(ridge.init(model.dim, reg=reg, dtype=model.features.dtype))

    def act(key, state, model):
        del key
        model = as_linear_model(model, "ucb")
        r = state.ridge
        s_bound = model.radius if radius is None else radius
        beta_sqrt = model.sigma * jnp.sqrt(2.0 * jnp.log(1.0 / delta) + r.logdet) + jnp.sqrt(reg) * s_bound
        index = model.features @ r.f_hat + beta_sqrt * ridge.widths(r, model.features)
        status = jnp.where(jnp.all(jnp.isfinite(index)), Status.OK, Status.NONFINITE)
        return jnp.argmax(index).astype(jnp.int32), state, ActInfo(status=status.astype(jnp.int32))

    def update(state, action, obs, model):
        model = as_linear_model(model, "ucb")
        return UCBState(ridge.update(state.ridge, model.obs_matrices[action], obs))

    return Agent(init=init, act=act, update=update,
                 config=V.config_key("ucb", delta=delta, radius=radius, reg=reg))
