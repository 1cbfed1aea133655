"""Anytime-E2D (Algorithm 1) and fixed-horizon E2D on linear models with side observations.

Every round: estimate f_hat_t by ridge regression on all observations (the estimation oracle
of Appendix 'Bounding the Estimation Error'); compute the sampling distribution mu_t from the
DEC at f_hat_t; sample pi_t ~ mu_t.

* :func:`anytime_e2d`: mu_t solves the average-constrained DEC dec^{ac}_{eps_t}(f_hat_t), with
  eps_t^2 = d / t by default (Section 'Anytime-E2D': Est_n <= d log n for linear models).
* :func:`fixed_horizon_e2d`: mu_t solves the offset DEC dec^o_lambda(f_hat_t) with the
  horizon-tuned lambda = sqrt(n / (4 log n)) of Foster et al. (2021, Sec. 6.1.1), as in the
  paper's experiments.

Divergence convention. The library's DEC functions use I_f(pi, g) = ||M_pi (g - f)||^2
(Lemma lem:linear-dec). The paper's experiments use the Gaussian KL
KL(M_g(pi) || M_f(pi)) = ||M_pi (g - f)||^2 / (2 sigma^2) (Appendix 'Experiments'). With
``divergence="kl"`` (default) the agents convert: the constraint mu I_KL nu <= eps^2 is
mu ||.||^2 nu <= 2 sigma^2 eps^2, and lambda I_KL = (lambda / (2 sigma^2)) ||.||^2. The ``lam``
and ``eps2`` recorded in the agents' info are in the agent's own convention (KL by default).

Gaps: Delta_f by default (the paper's experiments: "both algorithms performed better with
Delta_f"); ``gaps="delta"`` is available with the grid solvers.

Solver: warm-started from the previous round's (mu, omega) every round. The default
``SolverConfig`` here is the exact saddle-point solver with a small per-round budget: since
f_hat moves little between rounds, a few warm-started iterations track the solution (the
incremental scheme the paper's conclusion asks for); the per-round certified gap is recorded.
``e2d_jax.dec.linear.PAPER_BUDGET`` reproduces the paper's solver (100 Frank-Wolfe steps per
lambda on a 50-point grid).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _validation as V
from e2d_jax.dec import linear as dec_linear
from e2d_jax.estimators import ridge
from e2d_jax.types import Agent

#: Per-round budget of the agents' default solver: the exact saddle-point form, warm-started,
#: 10 mirror-prox iterations and one certificate per round (stopping early at a 1e-3 relative gap).
AGENT_SOLVER = dec_linear.SolverConfig(solver="saddle", maxiter=10, rtol=1e-3, check_every=10)

DIVERGENCES = ("kl", "squared")


class E2DState(NamedTuple):
    ridge: ridge.RidgeState
    warm: dec_linear.WarmStart  # last round's (mu (K,), omega (K,), step ()): the warm start
    t: jax.Array  # () int32, rounds played so far


class E2DInfo(NamedTuple):
    """Per-round diagnostics (at recorded rounds in a simulation)."""

    status: jax.Array  # () int32 solver status
    value: jax.Array  # () DEC value at (lam, mu), in the library's squared-norm convention
    lam: jax.Array  # () lambda in the agent's divergence convention
    gap: jax.Array  # () certified duality gap of the round's solve
    iterations: jax.Array  # () int32 solver iterations this round
    eps2: jax.Array  # () eps_t^2 in the agent's convention (0 for fixed-horizon E2D)


def _divergence_scale(divergence, sigma):
    """Factor s with I_agent = ||.||^2 / s: s = 2 sigma^2 for the KL, 1 for the squared norm."""
    return 2.0 * sigma**2 if divergence == "kl" else jnp.ones_like(sigma)


def _check_common(divergence, gaps, reg, solver, exact_form=True):
    if divergence not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {DIVERGENCES}, got {divergence!r}")
    if gaps not in dec_linear.GAPS:
        raise ValueError(f"gaps must be one of {dec_linear.GAPS}, got {gaps!r}")
    V.check_positive("reg", reg)
    if not isinstance(solver, dec_linear.SolverConfig):
        raise ValueError(f"solver must be a SolverConfig, got {type(solver).__name__}")
    if exact_form and gaps == "delta" and solver.solver == "saddle":
        raise ValueError("solver: gaps='delta' needs a grid solver ('fw-grid' or 'saddle-grid')")


def _init(reg):
    def init(key, model):
        del key
        dtype = model.features.dtype
        return E2DState(ridge.init(model.dim, reg=reg, dtype=dtype),
                        dec_linear.cold_start(model.num_actions, dtype), jnp.zeros((), jnp.int32))

    return init


def _update(state, action, obs, model):
    return state._replace(ridge=ridge.update(state.ridge, model.obs_matrices[action], obs))


def anytime_e2d(
    *,
    eps2_schedule: Callable | None = None,
    divergence: str = "kl",
    gaps: str = "delta_f",
    solver: dec_linear.SolverConfig = AGENT_SOLVER,
    reg: float = 1.0,
) -> Agent:
    """Anytime-E2D (Algorithm 1) with ridge regression.

    Args:
      eps2_schedule: ``(t, d) -> eps_t^2`` in the agent's divergence convention, t = 1, 2, ...;
        default d / t.
      divergence: ``"kl"`` (Gaussian KL, the paper's experiments) or ``"squared"``
        (||M (g - f)||^2, Lemma lem:linear-dec).
      gaps: ``"delta_f"`` or ``"delta"``.
      solver: a :class:`~e2d_jax.dec.linear.SolverConfig` (``PAPER_BUDGET`` for the paper's).
      reg: ridge regulariser (V_0 = reg I).
    """
    _check_common(divergence, gaps, reg, solver)
    schedule = eps2_schedule if eps2_schedule is not None else (lambda t, d: d / t)

    def act(key, state, model):
        t = state.t + 1
        dtype = model.features.dtype
        eps2 = jnp.asarray(schedule(t.astype(dtype), model.dim), dtype)
        scale = _divergence_scale(divergence, model.sigma)
        span = model.span
        res, warm = dec_linear.solve_acdec(span, state.ridge.f_hat @ span.basis, eps2 * scale, solver,
                                           state.warm, gaps)
        action = jax.random.categorical(key, jnp.log(res.mu)).astype(jnp.int32)
        info = E2DInfo(status=res.status, value=res.value, lam=res.lam * scale, gap=res.gap,
                       iterations=res.iterations, eps2=eps2)
        return action, state._replace(warm=warm, t=t), info

    return Agent(init=_init(reg), act=act, update=_update)


def tuned_lambda(horizon: int) -> float:
    """lambda = sqrt(n / (4 log n)) (Foster et al., 2021, Sec. 6.1.1; the paper's E2D)."""
    horizon = V.check_int("horizon", horizon, minimum=2)
    return math.sqrt(horizon / (4.0 * math.log(horizon)))


def fixed_horizon_e2d(
    *,
    horizon: int | None = None,
    lam: float | None = None,
    divergence: str = "kl",
    gaps: str = "delta_f",
    solver: dec_linear.SolverConfig = AGENT_SOLVER,
    reg: float = 1.0,
) -> Agent:
    """E2D with the offset DEC for a fixed lambda (Foster et al., 2021).

    Args:
      horizon: n, to set lambda = sqrt(n / (4 log n)) (give ``horizon`` or ``lam``).
      lam: lambda in the agent's divergence convention, overriding ``horizon``.
      divergence, gaps, solver, reg: as in :func:`anytime_e2d` (``"fw-grid"`` means plain
        smoothed Frank-Wolfe here: there is no lambda to search).
    """
    # For a fixed lambda each program is convex in mu for both gap choices: any solver works.
    _check_common(divergence, gaps, reg, solver, exact_form=False)
    if lam is None:
        if horizon is None:
            raise ValueError("fixed_horizon_e2d needs horizon (to tune lambda) or lam")
        lam = tuned_lambda(horizon)
    V.check_positive("lam", lam)

    def act(key, state, model):
        scale = _divergence_scale(divergence, model.sigma)
        span = model.span
        res, warm = dec_linear.solve_offset(span, state.ridge.f_hat @ span.basis, lam / scale, solver,
                                            state.warm, gaps)
        action = jax.random.categorical(key, jnp.log(res.mu)).astype(jnp.int32)
        info = E2DInfo(status=res.status, value=res.value, lam=res.lam * scale, gap=res.gap,
                       iterations=res.iterations, eps2=jnp.zeros_like(res.value))
        return action, state._replace(warm=warm, t=state.t + 1), info

    return Agent(init=_init(reg), act=act, update=_update)
