"""UCB for linear bandits with side observations (OFUL, Abbasi-Yadkori et al., 2011).

The estimate is ridge regression on *all* observations (side observations included). The
action maximises the optimistic index

    <phi_pi, f_hat_t> + beta_t^{1/2} ||phi_pi||_{V_t^{-1}},
    beta_t^{1/2} = sigma sqrt(2 log(1/delta_t) + log(det V_t / det V_0)) + sqrt(reg) S,

the confidence width of Abbasi-Yadkori et al. (2011, Theorem 2) with V_0 = reg I and
||f*|| <= S. S is the class's true bound ``model.radius`` unless given (1 for the random
semi-bandit and linear-bandit instances, sqrt(K) for the multi-armed bandit, max_g ||r_g||
for a finite class's linear view). Every observation row is a sigma-sub-Gaussian scalar
observation, so the same self-normalised bound covers vector observations. Ties go to the
lowest index.

The confidence level delta_t is either fixed (``delta``, default 0.01) or the anytime level of
the authors' code (``delta="anytime"``): delta_s = 1 / (s log s), s = max(2, 1 + m (t - 1))
before round t, where m (t - 1) counts the scalar observations received so far, every row of
the (K, m, d) observation maps included (see :func:`e2d_jax.estimators.ridge.anytime_log_inv_delta`).
The anytime level shrinks as data arrives, so its widths grow like sqrt(2 log(s log s)): on
the revealing semi-bandit with K = 10 (m = 10) at n = 2000, s reaches 2 x 10^4 and delta_s
about 5 x 10^-6, so 2 log(1/delta) is about 24 against 9.2 for the fixed default 0.01, which
explores less.

Finite classes with a linear view (the Gaussian bandit builders of :mod:`e2d_jax.envs.finite`)
are run through that view (:func:`e2d_jax.envs.family.as_linear_model`), so the same agent
works on both model families.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.agents import estimation
from e2d_jax.envs.family import as_linear_model
from e2d_jax.envs.linear import playable
from e2d_jax.estimators import logistic, ridge
from e2d_jax.types import ActInfo, Agent, AgentSpec, Status


class UCBState(NamedTuple):
    estimate: ridge.RidgeState | logistic.LogisticState  # by the model's feedback (agents.estimation)


#: ``ucb(delta=ANYTIME)``: the anytime level delta_s = 1 / (s log s) of the authors' code.
ANYTIME = "anytime"


def ucb(*, delta=0.01, radius=None, reg=1.0) -> Agent:
    """Builds the UCB agent.

    Args:
      delta: the confidence level: a number in (0, 1) held fixed over the run (may be traced;
        default 0.01), or ``"anytime"`` for delta_s = 1 / (s log s) as the authors' code
        (kirschnj/pm-ids, branch e2d) sets it when no level is given: before round t,
        s = max(2, 1 + m (t - 1)) with m the rows of every observation map (zero rows of a
        padded map included, as that code stores every observation as m entries), natural log,
        entering the width as 2 log(1/delta_s) = 2 (log s + log log s). With V_0 = I and
        S = 1, beta_t = (sigma sqrt(log det V_t + 2 log(1/delta_s)) + 1)^2 is their beta.
        The fixed default 0.01 differs from that choice: its widths are narrower once
        s log s > 100, i.e. s >= 30 (from the fourth round on the revealing semi-bandit with
        K = 10), so UCB explores less with it.
      radius: S, the bound on ||f*|| (may be traced); default the class's ``model.radius``.
      reg: ridge regulariser, V_0 = reg I (> 0; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.ActInfo`.

    References:
      Abbasi-Yadkori, Pal and Szepesvari (2011), Improved algorithms for linear stochastic
      bandits, Theorem 2.
    """
    anytime = isinstance(delta, str)
    if anytime and delta != ANYTIME:
        raise ValueError(f"delta must be a number in (0, 1) or {ANYTIME!r}, got {delta!r}")
    if not anytime:
        try:
            V.check_positive("delta", delta)
        except TypeError:
            raise ValueError(f"delta must be a number in (0, 1) or {ANYTIME!r}, got {delta!r}") from None
        if V.is_concrete(delta) and not delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
    if radius is not None:
        V.check_positive("radius", radius)
    V.check_positive("reg", reg)

    def init(key, model):
        del key
        model = as_linear_model(model, "ucb")
        return UCBState(estimation.init(model, reg))

    def act(key, state, model):
        del key
        model = as_linear_model(model, "ucb")
        r = state.estimate
        s_bound = model.radius if radius is None else radius
        if anytime:
            # r.count rounds seen, each an observation of m rows (the padded map's).
            log_inv_delta = ridge.anytime_log_inv_delta(model.obs_matrices.shape[-2] * r.count, r.f_hat.dtype)
        else:
            log_inv_delta = jnp.log(1.0 / delta)
        beta_sqrt = estimation.confidence_width(r, model, s_bound, log_inv_delta, reg)
        index = model.features @ r.f_hat + beta_sqrt * ridge.widths(r, model.features)
        status = jnp.where(jnp.all(jnp.isfinite(index)), Status.OK, Status.NONFINITE)
        return playable(model, jnp.argmax(index).astype(jnp.int32)), state, ActInfo(status=status.astype(jnp.int32))

    def update(state, action, obs, model):
        model = as_linear_model(model, "ucb")
        return UCBState(estimation.update(state.estimate, model, action, obs, reg))

    return Agent(init=init, act=act, update=update,
                 config=AgentSpec.of(ucb, ("delta", "radius", "reg"), delta=delta, radius=radius, reg=reg))
