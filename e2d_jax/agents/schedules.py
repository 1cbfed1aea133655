"""The eps_t^2 schedules of Anytime-E2D (Section 'Anytime-E2D').

The paper sets eps_t^2 = beta / t, where beta bounds the estimation error's growth,
Est_t <= beta log t: beta = d for linear models with ridge regression (eps_t^2 = d / t, the
paper's experiments) and beta = log|M| for finite classes with EWA. A schedule here is either

* a name: ``"rank"`` (r / t with r the dimension of the observable span, linear models; the
  default), ``"dim"`` (d / t, linear models: the paper's experiments), ``"rank-log"`` (r (1 + log t) / t, linear models) or
  ``"log-models"`` (log|M| / t, finite classes); the constant is read from the model class
  at trace time (it is static: a shape); or
* a callable ``t -> eps_t^2`` of the 1-based round t (a float array), e.g.
  ``lambda t: 0.5 / t``.

Why r and not d (the estimation error of ridge regression restricted to the observable
span; the theorem of Appendix A.1 on projected regularized least squares). Let S be
the span of the rows of all observation maps M_pi, r = dim S <= min(d, sum_pi m_pi). With
V_0 = eta I and V_t = V_0 + sum_{s<t} M_s^T M_s, every M_s^T M_s lives on S, so V_t = eta I
on the orthogonal complement S^perp and

    log det(V_n) / det(V_0) = log det(I_r + eta^-1 sum_{s<n} U^T M_s^T M_s U) <= r log(1 + n L^2 / (eta r))

with U an orthonormal basis of S and L >= ||M_pi||: the theorem's bound
Est_n <= (sigma^2 + B^2) E[log det(V_n) / det(V_0)] becomes (sigma^2 + B^2) r log(1 + n L^2 /
(eta r)), the paper's d log n with d replaced by r. The DEC side has the same dimension: the
rewards <phi_pi, f> are observed (phi_pi is in S), so gaps, information and hence
dec^ac_eps(f) depend on f only through its projection on S, and the linear-bounds lemma's
(Section 3.3) Kiefer-Wolfowitz step gives dec^ac_eps <= eps sqrt(r). Section 3.2's regret theorem then reads
R_n <= max_t (sqrt(r) / eps_t) (sum_t eps_t^2 + Est_n), which eps_t^2 = beta / t balances at
beta ~ r (up to the constant sigma^2 + B^2 and the log): ``"rank"``, r / t. Taking
eps_t^2 = Est_t / t literally (the fixed-horizon choice eps^2 = Est_n / n at every t) gives
``"rank-log"``, r (1 + log t) / t. For the paper's Experiment 1 (d = 3 < K = 10) r = d and the
schedules coincide; for Experiment 2 (d = 30, K = 10) r = 10 = d / 3. The theory fixes the
order, not the constant; which one works is an empirical question, answered over many
instances in the docs' 'What holds' (``e2d-jax reproduce candidates``): r / t is the default
because it had lower regret than d / t on most instances of Experiment 2's shape, and
``"dim"`` is the paper's preset.

Either way the agent multiplies it by ``eps2_scale`` (c in eps_t^2 = c beta / t; a number or
a traced value, so a grid of c is one vmapped axis). A callable is checked on its first ten
values before any tracing: each must be finite and > 0 (a schedule of zeros would make every
round's program degenerate).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

LINEAR_SCHEDULES = ("dim", "rank", "rank-log")
FINITE_SCHEDULES = ("log-models",)
SCHEDULES = LINEAR_SCHEDULES + FINITE_SCHEDULES


def check_schedule(schedule, family: str) -> None:
    """Raises ValueError naming ``eps2_schedule`` if it is not usable for ``family``."""
    if isinstance(schedule, str):
        allowed = LINEAR_SCHEDULES if family == "linear" else FINITE_SCHEDULES
        if schedule not in allowed:
            raise ValueError(f"eps2_schedule must be one of {allowed} for {family} models, or a callable "
                             f"t -> eps_t^2; got {schedule!r}")
        return
    if not callable(schedule):
        raise ValueError(f"eps2_schedule must be a name {SCHEDULES} or a callable t -> eps_t^2, "
                         f"got {type(schedule).__name__}")
    t = np.arange(1, 11, dtype=np.float64)
    try:
        # Evaluated now even when the agent is built inside a compiled program (the simulator
        # builds it there with traced numbers): the schedule's jnp operations on t are constants.
        with jax.ensure_compile_time_eval():
            values = np.asarray(schedule(t), np.float64)
    except Exception as err:  # noqa: BLE001 - any failure is reported with the argument's name
        raise ValueError(f"eps2_schedule must be a callable t -> eps_t^2 of the round t (an array); "
                         f"calling it on t = 1..10 failed: {type(err).__name__}: {err}") from None
    values = np.broadcast_to(values, t.shape)
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"eps2_schedule must give finite values > 0; its first ten values are "
                         f"{np.array2string(values, precision=3)}")


def base_constant(schedule: str, model) -> float:
    """beta of a named schedule for a model class (static)."""
    if schedule in ("dim",):
        return float(model.dim)
    if schedule in ("rank", "rank-log"):
        return float(model.span.features.shape[-1])
    if schedule == "log-models":
        return math.log(model.num_models)
    raise ValueError(f"unknown eps2_schedule {schedule!r}")


def evaluate(schedule, scale, t, model):
    """eps_t^2 = scale * schedule(t) for a float array t (traceable)."""
    if isinstance(schedule, str):
        beta = base_constant(schedule, model)
        if schedule == "rank-log":
            return scale * beta * (1.0 + jnp.log(t)) / t
        return scale * beta / t
    return scale * schedule(t)


def describe(schedule) -> str:
    """A short text for logs and tables."""
    if isinstance(schedule, str):
        return {"dim": "d/t", "rank": "r/t", "rank-log": "r(1+log t)/t", "log-models": "log|M|/t"}[schedule]
    name = getattr(schedule, "__name__", "callable")
    return f"callable {name}"

