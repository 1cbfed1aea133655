"""Anytime-E2D (Algorithm 1) and fixed-horizon E2D on linear models with side observations.

Every round: estimate f_hat_t by ridge regression on all observations (the estimation oracle
of Appendix A.1, 'Bounding the Estimation Error of Projected Regularized Least-Squares');
compute the sampling distribution mu_t from the DEC at f_hat_t; sample pi_t ~ mu_t.

* :func:`anytime_e2d`: mu_t solves the average-constrained DEC dec^{ac}_{eps_t}(f_hat_t), with
  eps_t^2 = c r / t by default (c = ``eps2_scale`` = 1, r the dimension of the observable span:
  Est_n <= r log n for ridge restricted to it, derived in :mod:`e2d_jax.agents.schedules`;
  the paper's d / t is ``eps2_schedule="dim"``, the same when the features span R^d, e.g.
  d <= K).
* :func:`fixed_horizon_e2d`: mu_t solves the offset DEC dec^o_lambda(f_hat_t) with the
  horizon-tuned lambda = m sqrt(n / (4 log n)) of Foster et al. (2021, Sec. 6.1.1), as in the
  paper's experiments (m = ``lam_scale`` = 1).

Divergence convention. ``divergence="squared"`` (the default) is I_f(pi, g) =
||M_pi (g - f)||^2, the form of the linear-DEC lemma (Section 3.4) and of the authors' code
behind the paper's figure. ``divergence="kl"`` is the Gaussian KL ||M_pi (g - f)||^2 /
(2 sigma^2) that the paper's text writes (Appendix E): the agent then solves the program
with the constraint mu ||.||^2 nu <= 2 sigma^2 eps^2 and the multiplier lambda / (2 sigma^2).
``lam`` and ``eps2`` in the agents' info are in the agent's convention; ``value`` and ``gap``
are in regret units (the same in both, see :class:`~e2d_jax.types.E2DInfo`).

Gaps: Delta_f by default (the paper's experiments: "both algorithms performed better with
Delta_f"); ``gap_type="delta"`` needs a solver that solves it (Anytime-E2D: a grid solver or
the lambda search, by default :data:`AGENT_SOLVER_DELTA`; the exact form is convex only for
Delta_f). On games that observe reward differences only (duelling, :mod:`e2d_jax.envs.dueling`)
the programs with Delta_f are infinite unless every reward lies in the observable span, and
gaps Delta are refused nowhere (docs: Linear partial monitoring).

Solver: a value or name of :mod:`e2d_jax.dec.solvers`, warm-started from the previous
round's (mu, omega) where the round's model is the previous round's, started cold where it is
not (a context changed the model: the other context's solution is a worse start, and needs
more steps, than uniform mixtures). Anytime-E2D's default :data:`AGENT_SOLVER` (``"tracking"``)
is mirror-prox on the exact form: since f_hat moves little between rounds, a few
warm-started iterations track the solution (the incremental scheme the paper's conclusion
asks for), continued while the round is not certified to 5%. The warm start has 10% of the
uniform mixture mixed in: where the optimum's support moves (early rounds, many actions), an
action the last round left at the floor would take a pure warm start many steps to revive.
Fixed-horizon E2D's :data:`E2D_SOLVER` is an interior-point method (warm-started, until
certified to 1e-3, at most 20 iterations a round): on its program mirror-prox needs hundreds
of steps in a quarter of the rounds. The round's certified gap sets its status (``OK`` when within the
solver's tolerance; docs: Concepts, 'Round statuses') and the simulator summarises it per
seed. ``"paper"`` is the paper's solver (100 Frank-Wolfe steps per lambda on a 50-point
grid), ``"authors"`` the authors' code's solve (:class:`~e2d_jax.dec.solvers.SubgradientGrid`:
arg-max Frank-Wolfe from the last round's mu on 99 lambdas in (0, sqrt(t)]), which reproduces
their runs and is not certified.

Non-finite solves: a round whose solve is non-finite keeps the previous round's mu (and
warm start) to sample from and reports ``Status.NONFINITE``, which the simulator counts per
seed; such seeds are excluded from the results' means and flagged.

Every numeric hyperparameter (``eps2_scale``, ``lam``, ``lam_scale``, ``reg``) may be a traced
value, so a grid of them is one vmapped axis of a compiled sweep.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.agents import estimation, schedules
from e2d_jax.dec import linear as dec_linear
from e2d_jax.dec import solvers as S
from e2d_jax.envs.linear import LinearModel, playable
from e2d_jax.estimators import logistic, ridge
from e2d_jax.types import DIVERGENCES, GAP_TYPES, Agent, AgentSpec, E2DInfo, Status, WarmStart

#: Anytime-E2D's default solver, :data:`e2d_jax.dec.solvers.TRACKING` (the preset
#: ``"tracking"``): warm-started mirror-prox on the exact form (the last round's mixtures with 10%
#: of the uniform one mixed in), until the round is certified to
#: 5% or 200 steps are used.
AGENT_SOLVER = S.TRACKING
#: Anytime-E2D's default solver with gaps Delta (``gap_type="delta"``, e.g. duelling games whose
#: reward level is not observable), where the exact form is not convex: the certified
#: branch-and-bound search over lambda with a round's budget, as the finite agents' plain
#: search: a first grid of 7 lambdas over the proven range, up to three refinements of 8
#: while the round is not certified to 5%, each offset DEC by interior point to 1e-3 in at
#: most 20 iterations.
AGENT_SOLVER_DELTA = S.LambdaSearch(inner=S.InteriorPoint(maxiter=20), rtol=0.05, inner_rtol=1e-3, lam_grid=7,
                                    lam_refine=8, lam_rounds=3, candidates=4, subdivide=8)
#: Fixed-horizon E2D's default solver, :data:`e2d_jax.dec.solvers.E2D_ROUND`: interior-point
#: iterations until the round is certified to 1e-3 (at most 20).
E2D_SOLVER = S.E2D_ROUND


class E2DState(NamedTuple):
    estimate: ridge.RidgeState | logistic.LogisticState  # by the model's feedback (agents.estimation)
    warm: WarmStart  # last round's (mu (K,), omega (K,), step ()): the warm start
    t: jax.Array  # () int32, rounds played so far
    model_key: jax.Array  # () float, model_key of the model the warm start was solved on


def model_key(model: LinearModel) -> jax.Array:
    """A number that tells a round's model from another (a fixed weighted sum of the span's
    features and Gram matrices): a warm start solved on another model (the previous round's
    context) is a worse start than a cold one, so the agents start cold when it changes."""
    span = model.span
    values = jnp.concatenate([span.features.reshape(-1), span.grams.reshape(-1)])
    weights = jnp.cos(jnp.arange(values.shape[0], dtype=values.dtype))
    return jnp.sum(values * weights)


def _warm_start(state: E2DState, key: jax.Array, model: LinearModel) -> WarmStart:
    """The last round's solution where the model is the same, a cold start where it is not."""
    cold = WarmStart.cold(model.num_actions, dtype=model.features.dtype)
    same = key == state.model_key
    return jax.tree_util.tree_map(lambda warm, fresh: jnp.where(same, warm, fresh), state.warm, cold)


def _divergence_scale(divergence, sigma):
    """Factor s with I_agent = ||.||^2 / s: s = 2 sigma^2 for the KL, 1 for the squared norm."""
    return 2.0 * sigma**2 if divergence == "kl" else jnp.ones_like(sigma)


def check_linear_model(model, agent_name: str):
    """Raises a ValueError that says what to do when ``model`` is not a linear model."""
    if not isinstance(model, LinearModel):
        raise ValueError(f"model: e2d_jax.agents.e2d_linear.{agent_name} runs on linear models, got a "
                         f"{type(model).__name__}; e2d_jax.{agent_name} dispatches on the model and runs "
                         "on both families")


def _check_common(divergence, gap_type, reg, solver, program):
    """Checks the shared arguments; returns the solver as a value (a name resolved)."""
    if divergence not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {DIVERGENCES}, got {divergence!r}")
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    V.check_positive("reg", reg)
    return S.resolve(solver, "linear", program, gap_type)


def _init(reg, name):
    def init(key, model):
        del key
        check_linear_model(model, name)
        dtype = model.features.dtype
        return E2DState(estimation.init(model, reg), WarmStart.cold(model.num_actions, dtype=dtype),
                        jnp.zeros((), jnp.int32), model_key(model))

    return init


def _update(reg):
    def update(state, action, obs, model):
        return state._replace(estimate=estimation.update(state.estimate, model, action, obs, reg))

    return update


def _play(key, state, res, warm, model):
    """Samples from mu_t, or from the previous mu if this round's solve is not finite (an
    action the round does not offer is its copy, :func:`~e2d_jax.envs.linear.playable`)."""
    ok = res.status != Status.NONFINITE
    mu = jnp.where(ok, res.mu, state.warm.mu)
    warm = jax.tree_util.tree_map(lambda new, old: jnp.where(ok, new, old), warm, state.warm)
    action = jax.random.categorical(key, jnp.log(mu)).astype(jnp.int32)
    return playable(model, action), warm


def anytime_e2d(
    *,
    eps2_schedule="rank",
    eps2_scale=1.0,
    divergence: str = "squared",
    gap_type: str = "delta_f",
    solver=None,
    reg=1.0,
) -> Agent:
    """Anytime-E2D (Algorithm 1) with ridge regression.

    Args:
      eps2_schedule: ``"rank"`` (r / t with r the dimension of the observable span; the
        default, derived in ``e2d_jax.agents.schedules``), ``"dim"`` (d / t, the paper's
        experiments; equal to ``"rank"`` when the features span R^d, e.g. d <= K), ``"rank-log"``
        or a callable ``t -> eps_t^2``, in the agent's divergence convention.
      eps2_scale: c > 0 in eps_t^2 = c * schedule(t) (may be traced).
      divergence: ``"squared"`` (||M (g - f)||^2, the default) or ``"kl"`` (the Gaussian KL of
        the paper's text); see the module docstring.
      gap_type: ``"delta_f"`` or ``"delta"``.
      solver: a solver value or name of :mod:`e2d_jax.dec.solvers` that solves the linear
        ac-DEC for ``gap_type`` (default: :data:`AGENT_SOLVER` for gaps Delta_f,
        :data:`AGENT_SOLVER_DELTA` for gaps Delta; ``"paper"`` for the paper's).
      reg: ridge regulariser (V_0 = reg I; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.E2DInfo`.
    """
    if solver is None:
        solver = AGENT_SOLVER if gap_type == "delta_f" else AGENT_SOLVER_DELTA
    solver = _check_common(divergence, gap_type, reg, solver, "acdec")
    schedules.check_schedule(eps2_schedule, "linear")
    V.check_positive("eps2_scale", eps2_scale)

    def act(key, state, model):
        t = state.t + 1
        dtype = model.features.dtype
        eps2 = jnp.asarray(schedules.evaluate(eps2_schedule, eps2_scale, t.astype(dtype), model), dtype)
        scale = _divergence_scale(divergence, model.sigma)
        span, mkey = model.span, model_key(model)
        state = state._replace(warm=_warm_start(state, mkey, model), model_key=mkey)
        res, warm = dec_linear.solve_acdec(span, state.estimate.f_hat @ span.basis, eps2 * scale, solver,
                                           state.warm, gap_type)
        action, warm = _play(key, state, res, warm, model)
        info = E2DInfo(status=res.status, value=res.value, lam=res.lam * scale, gap=res.gap,
                       iterations=res.iterations, eps2=eps2)
        return action, state._replace(warm=warm, t=t), info

    config = AgentSpec.of(anytime_e2d, ("eps2_scale", "reg"), eps2_schedule=eps2_schedule, eps2_scale=eps2_scale,
                          divergence=divergence, gap_type=gap_type, solver=solver, reg=reg)
    return Agent(init=_init(reg, "anytime_e2d"), act=act, update=_update(reg), config=config)


def horizon_lambda(horizon: int) -> float:
    """lambda_n = sqrt(n / (4 log n)) (Foster et al., 2021, Sec. 6.1.1; the paper's E2D)."""
    horizon = V.check_int("horizon", horizon, minimum=2)
    return math.sqrt(horizon / (4.0 * math.log(horizon)))


def fixed_horizon_e2d(
    *,
    horizon: int | None = None,
    lam=None,
    lam_scale=1.0,
    divergence: str = "squared",
    gap_type: str = "delta_f",
    solver=E2D_SOLVER,
    reg=1.0,
) -> Agent:
    """E2D with the offset DEC for a fixed lambda (Foster et al., 2021).

    Args:
      horizon: n, to set lambda = lam_scale * sqrt(n / (4 log n)) (:func:`horizon_lambda`).
      lam: lambda in the agent's divergence convention, instead of ``horizon`` (may be traced).
      lam_scale: m > 0 multiplying lambda (may be traced; 1 by default).
      divergence: as in :func:`anytime_e2d`.
      gap_type: as in :func:`anytime_e2d`.
      solver: a solver value or name that solves the linear offset DEC (default
        :data:`E2D_SOLVER`; ``"tracking"`` or ``"fast"`` are warm-started mirror-prox,
        ``"fw-grid"`` or ``"paper"`` plain smoothed Frank-Wolfe: there is no lambda to search).
      reg: as in :func:`anytime_e2d`.

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.E2DInfo` (``eps2`` = 0).
    """
    solver = _check_common(divergence, gap_type, reg, solver, "offset")
    if (lam is None) == (horizon is None):
        raise ValueError("fixed_horizon_e2d needs exactly one of horizon (to tune lambda) or lam")
    base = horizon_lambda(horizon) if lam is None else V.check_positive("lam", lam)
    V.check_positive("lam_scale", lam_scale)

    def act(key, state, model):
        scale = _divergence_scale(divergence, model.sigma)
        span, mkey = model.span, model_key(model)
        state = state._replace(warm=_warm_start(state, mkey, model), model_key=mkey)
        lam_t = jnp.asarray(base * lam_scale, model.features.dtype)
        sized = solver.sized_for(model, gap_type) if isinstance(solver, S.InteriorPoint) else solver
        res, warm = dec_linear.solve_offset(span, state.estimate.f_hat @ span.basis, lam_t / scale, sized,
                                            state.warm, gap_type)
        action, warm = _play(key, state, res, warm, model)
        info = E2DInfo(status=res.status, value=res.value, lam=res.lam * scale, gap=res.gap,
                       iterations=res.iterations, eps2=jnp.zeros_like(res.value))
        return action, state._replace(warm=warm, t=state.t + 1), info

    # The spec holds the tuned lambda (a number), not the horizon: E2D tuned for several
    # horizons is one program with one lambda each.
    config = AgentSpec.of(fixed_horizon_e2d, ("lam", "lam_scale", "reg"), horizon=None, lam=base,
                          lam_scale=lam_scale, divergence=divergence, gap_type=gap_type, solver=solver, reg=reg)
    return Agent(init=_init(reg, "fixed_horizon_e2d"), act=act, update=_update(reg), config=config)
