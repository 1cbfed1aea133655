"""Certified DEC curves and the bounds of the paper's Table 1.

:func:`acdec_curve` computes, for a model class and radii eps^2, the class's coefficient
max_f dec^ac_eps(f) (the quantity in the corollary of Section 3.2) with a certificate:
every per-model ``value`` is the exact objective of a returned mu, an upper bound on
dec^ac_eps(f), and ``lower`` is the solver's certified lower bound, so

    curve.lower <= max_f dec^ac_eps(f) <= curve.value.

For a finite class the maximum is over every member f of the class. For a linear model the
class is R^d, whose DEC grows with the scale of f under Delta_f, so the maximum is over the
given ``references`` (default: the K feature vectors).

Comparing with a bound B(eps) (:func:`table1_bound`, :func:`compare_with_bound`):
``value <= B`` certifies that the bound holds for the class at eps; ``lower > B`` certifies a
violation (a counterexample); anything else is undecided at the solver's tolerance.

Table 1 conventions (checked in the tests). For the K-armed Gaussian bandit with unit noise
and the KL divergence I_f(pi, g) = (r_g(pi) - r_f(pi))^2 / 2:

* Delta_f: dec^ac <= eps sqrt(2K) <= 2 eps sqrt(K) (the decoupling lemma of Section 3.3 with
  the decoupling coefficient K of the squared divergence, which is twice the KL);
* Delta: the same route through Section 3.3's comparison of Delta and Delta_f gives
  sqrt(2) eps (sqrt(K) + 1), which is <= 2 eps sqrt(K) only for K >= 6; for smaller K the
  table's bound is not implied by the paper's lemmas and is checked numerically.

With the squared divergence (r_g - r_f)^2 (i.e. sigma^2 = 1/2) the Delta route gives
eps (sqrt(K) + 1) <= 2 eps sqrt(K), which is the table's bound for every K >= 1.

Every function here takes the radius squared, ``eps2`` = eps^2, like the DEC solvers and the
agents.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.dec import finite as dec_finite
from e2d_jax.dec import linear as dec_linear
from e2d_jax.dec import solvers as S
from e2d_jax.envs.finite import FiniteModel
from e2d_jax.envs.linear import LinearModel
from e2d_jax.types import GAP_TYPES

SETTINGS = ("mab", "linear")


def _check_eps2(eps2, *, allow_zero: bool = False) -> np.ndarray:
    eps2 = np.asarray(eps2, np.float64)
    bad = np.any(eps2 < 0) if allow_zero else np.any(eps2 <= 0)
    if eps2.size == 0 or np.any(~np.isfinite(eps2)) or bad:
        raise ValueError(f"eps2 must be a non-empty array of finite numbers {'>=' if allow_zero else '>'} 0 "
                         "(the radius squared, eps^2)")
    return eps2


def table1_bound(setting: str, eps2, *, num_actions: int | None = None, d: int | None = None) -> np.ndarray:
    """The ac-DEC column of the paper's Table 1 at radii eps = sqrt(eps2).

    Args:
      setting: ``"mab"`` (2 eps sqrt(|Pi|)) or ``"linear"`` (eps sqrt(d)).
      eps2: radii squared eps^2 >= 0, any shape.
      num_actions: |Pi| for ``"mab"``.
      d: dimension for ``"linear"``.

    Returns:
      The bound, same shape as ``eps2``.
    """
    eps = np.sqrt(_check_eps2(eps2, allow_zero=True))
    if setting == "mab":
        num_actions = V.check_int("num_actions", num_actions, minimum=2)
        return 2.0 * eps * np.sqrt(num_actions)
    if setting == "linear":
        d = V.check_int("d", d, minimum=1)
        return eps * np.sqrt(d)
    raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")


class DecCurve(NamedTuple):
    """max_f dec^ac_eps(f) of a class on a range of eps^2, certified.

    Attributes:
      eps2: (E,) the radii squared.
      value: (E,) max over f of the per-model values (upper bound on the class's ac-DEC).
      lower: (E,) max over f of the certified lower bounds (lower bound on it).
      per_model: (E, F) per reference model f the value of the returned mu.
      per_model_lower: (E, F) per reference model the certified lower bound.
      argmax: (E,) int, the reference model attaining ``value``.
      status: (E, F) int32 solver status codes.
    """

    eps2: np.ndarray
    value: np.ndarray
    lower: np.ndarray
    per_model: np.ndarray
    per_model_lower: np.ndarray
    argmax: np.ndarray
    status: np.ndarray

    @property
    def eps(self) -> np.ndarray:
        """(E,) the radii eps = sqrt(eps2)."""
        return np.sqrt(self.eps2)


#: The linear curve's solver for gaps Delta_f: certified to 1e-6 relative within 20,000
#: mirror-prox steps.
LINEAR_CURVE_SOLVER = S.Saddle(maxiter=20_000, rtol=1e-6, check_every=50)


def acdec_curve(model, eps2, *, gap_type: str = "delta_f", references=None, solver=None, **options) -> DecCurve:
    """max_f dec^ac_eps(f) for every eps^2 in ``eps2`` (one solve per (f, eps^2), batched).

    Args:
      model: a :class:`~e2d_jax.envs.finite.FiniteModel` (every member is a reference f) or a
        :class:`~e2d_jax.envs.linear.LinearModel` (the references are ``references``).
      eps2: (E,) radii squared eps^2 > 0.
      gap_type: ``"delta_f"`` (Delta_f, default) or ``"delta"`` (Delta).
      references: linear models only: (F, d) reference parameters f (default: the K feature
        vectors phi_pi).
      solver: a solver value or name of :mod:`e2d_jax.dec.solvers` for the family's ac-DEC
        (default: the DEC functions' default, with the linear exact form's budget raised to
        :data:`LINEAR_CURVE_SOLVER`).
      **options: fields of the solver to change.

    Returns:
      DecCurve (NumPy arrays).
    """
    eps2 = _check_eps2(np.reshape(eps2, -1))
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    if isinstance(model, FiniteModel):
        if references is not None:
            raise ValueError("references applies to linear models; a finite class's curve is over its members")
        values, lowers, status = _finite_curve(model, eps2, gap_type, S.resolve(solver, "finite", "acdec", gap_type,
                                                                                **options))
    elif isinstance(model, LinearModel):
        if solver is None and gap_type == "delta_f":
            solver = LINEAR_CURVE_SOLVER
        values, lowers, status = _linear_curve(model, eps2, gap_type, references,
                                               S.resolve(solver, "linear", "acdec", gap_type, **options))
    else:
        raise ValueError(f"model must be a FiniteModel or LinearModel (params.model), got {type(model).__name__}")
    arg = np.argmax(values, axis=1)
    return DecCurve(eps2=eps2, value=values.max(axis=1), lower=lowers.max(axis=1), per_model=values,
                    per_model_lower=lowers, argmax=arg, status=status)


def _finite_curve(model, eps2, gap_type, config):
    # About 16 M^2 floats per problem (the exact objectives of the candidates); keep a batch
    # of problems under ~2^26 floats.
    m = model.num_models
    batch = int(max(1, min(m, 2**26 // max(1, 16 * m * m * eps2.size))))
    out = _finite_jit(model, jnp.asarray(eps2, model.rewards.dtype), gap_type=gap_type, config=config, batch=batch)
    return tuple(np.asarray(x) for x in out)


def _per_model(model, f, eps2, gap_type, config):
    g, info = dec_finite.matrices(model, f, gap_type)
    res, _ = jax.vmap(lambda e2: dec_finite.solve_acdec(g, info, e2, config))(eps2)
    return res.value, res.lower_bound, res.status


@functools.partial(jax.jit, static_argnames=("gap_type", "config", "batch"))
def _finite_jit(model, eps2, gap_type, config, batch):
    """(E, M) values, lower bounds and statuses; reference models are solved ``batch`` at a
    time (each batch vmapped over models and eps), which bounds memory for large classes."""
    values, lowers, status = jax.lax.map(lambda f: _per_model(model, f, eps2, gap_type, config),
                                         jnp.arange(model.num_models), batch_size=batch)
    return values.T, lowers.T, status.T


def _linear_curve(model, eps2, gap_type, references, config):
    dtype = model.features.dtype
    refs = model.features if references is None else jnp.asarray(references, dtype)
    V.check_shape("references", refs, (None, model.dim), what="(F, d)")
    V.check_finite("references", refs)
    out = _linear_jit(model.span, refs, jnp.asarray(eps2, dtype), gap_type=gap_type, config=config)
    return tuple(np.asarray(x) for x in out)


@functools.partial(jax.jit, static_argnames=("gap_type", "config"))
def _linear_jit(span, refs, eps2, gap_type, config):
    def one(f, e2):
        res, _ = dec_linear.solve_acdec(span, f @ span.basis, e2, config, None, gap_type)
        return res.value, res.lower_bound, res.status

    values, lowers, status = jax.vmap(jax.vmap(one, in_axes=(0, None)), in_axes=(None, 0))(refs, eps2)
    return values, lowers, status


class BoundCheck(NamedTuple):
    """A DEC curve against a bound B(eps).

    Attributes:
      holds: (E,) bool, certified: value <= B (the class's ac-DEC is below the bound).
      violated: (E,) bool, certified: lower > B (a counterexample to the bound).
      ratio: (E,) value / B.
      max_ratio: () the largest ratio.
    """

    holds: np.ndarray
    violated: np.ndarray
    ratio: np.ndarray
    max_ratio: float


def compare_with_bound(curve: DecCurve, bound) -> BoundCheck:
    """Compares a certified curve with a bound evaluated at ``curve.eps2`` (same shape)."""
    bound = np.asarray(bound, np.float64)
    if bound.shape != curve.eps2.shape:
        raise ValueError(f"bound must have shape {curve.eps2.shape} like curve.eps2, got {bound.shape}")
    ratio = curve.value / bound
    return BoundCheck(holds=curve.value <= bound, violated=curve.lower > bound, ratio=ratio,
                      max_ratio=float(np.max(ratio)))
