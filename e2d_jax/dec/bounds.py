"""Certified DEC curves of finite classes and the bounds of the paper's Table 1.

:func:`acdec_curve` computes, for a finite class M and radii eps, the class's coefficient
max_{f in M} dec^ac_eps(f) (the quantity in Corollary cor:worst-case) with a certificate:
every per-model ``value`` is the exact objective h(mu) of a returned mu, an upper bound on
dec^ac_eps(f), and ``lower`` is the solver's certified lower bound, so

    curve.lower <= max_f dec^ac_eps(f) <= curve.value.

Comparing with a bound B(eps) (:func:`table1_bound`, :func:`compare_with_bound`):
``value <= B`` certifies that the bound holds for the class at eps; ``lower > B`` certifies a
violation (a counterexample); anything else is undecided at the solver's tolerance.

Table 1 conventions (checked in tests/test_bounds.py). For the K-armed Gaussian bandit with
unit noise and the KL divergence I_f(pi, g) = (r_g(pi) - r_f(pi))^2 / 2:

* Delta_f: dec^ac <= eps sqrt(2K) <= 2 eps sqrt(K) (Lemma lem:d*-to-dc with the decoupling
  coefficient K of the squared divergence, which is twice the KL);
* Delta: the same route through Lemma lem:dec-Delta_f-comparison gives
  sqrt(2) eps (sqrt(K) + 1), which is <= 2 eps sqrt(K) only for K >= 6; for smaller K the
  table's bound is not implied by the paper's lemmas and is checked numerically.

With the squared divergence (r_g - r_f)^2 (i.e. sigma^2 = 1/2) the Delta route gives
eps (sqrt(K) + 1) <= 2 eps sqrt(K), which is the table's bound for every K >= 1.

Measured (tests/test_bounds.py, ``-m slow``; 120 random classes with means in [0, 1]^K,
K = 2..8, |M| = 10, 20, sigma = 1 and sigma^2 = 1/2, eps = 0.02..0.35): the computed dec^ac
never exceeded 0.52 x 2 eps sqrt(K) with Delta and 0.70 x 2 eps sqrt(K) with Delta_f. On the
grid classes (K = 2 with 11 levels, K = 3 with 5 levels) the largest ratios were 0.57 (Delta)
and 0.78 (Delta_f, K = 2). No counterexample to the table was found.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _validation as V
from e2d_jax.dec import finite as dec
from e2d_jax.envs import finite

SETTINGS = ("mab", "linear")


def table1_bound(setting: str, eps, *, num_actions: int | None = None, d: int | None = None) -> np.ndarray:
    """The ac-DEC column of the paper's Table 1.

    Args:
      setting: ``"mab"`` (2 eps sqrt(|Pi|)) or ``"linear"`` (eps sqrt(d)).
      eps: radii eps (not eps^2), any shape.
      num_actions: |Pi| for ``"mab"``.
      d: dimension for ``"linear"``.

    Returns:
      The bound, same shape as ``eps``.
    """
    eps = np.asarray(eps, np.float64)
    if np.any(~np.isfinite(eps)) or np.any(eps < 0):
        raise ValueError("eps must be finite and >= 0")
    if setting == "mab":
        num_actions = V.check_int("num_actions", num_actions, minimum=2)
        return 2.0 * eps * np.sqrt(num_actions)
    if setting == "linear":
        d = V.check_int("d", d, minimum=1)
        return eps * np.sqrt(d)
    raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")


class DecCurve(NamedTuple):
    """max_f dec^ac_eps(f) of a class on a range of eps, certified.

    Attributes:
      eps: (E,) the radii.
      value: (E,) max over f of the per-model values (upper bound on the class's ac-DEC).
      lower: (E,) max over f of the certified lower bounds (lower bound on it).
      per_model: (E, M) per reference model f the value h(mu) of the returned mu.
      per_model_lower: (E, M) per model the certified lower bound.
      argmax: (E,) int, the reference model attaining ``value``.
      status: (E, M) int32 solver status codes.
    """

    eps: np.ndarray
    value: np.ndarray
    lower: np.ndarray
    per_model: np.ndarray
    per_model_lower: np.ndarray
    argmax: np.ndarray
    status: np.ndarray


GAPS = ("delta", "delta_f")


def acdec_curve(model: finite.FiniteModel, eps, *, gaps: str = "delta", **options) -> DecCurve:
    """Computes max_{f in M} dec^ac_eps(f) for every eps (one solve per (f, eps), batched).

    Args:
      model: the finite class (every member is used as the reference f).
      eps: (E,) radii eps > 0 (the program uses eps^2).
      gaps: ``"delta"`` (Delta) or ``"delta_f"`` (Delta_f).
      **options: fields of ``e2d_jax.dec.finite.FiniteSolverConfig``.

    Returns:
      DecCurve (NumPy arrays).
    """
    eps = np.asarray(eps, np.float64).reshape(-1)
    if eps.size == 0 or np.any(~np.isfinite(eps)) or np.any(eps <= 0):
        raise ValueError("eps must be a non-empty array of finite numbers > 0")
    if gaps not in GAPS:
        raise ValueError(f"gaps must be one of {GAPS}, got {gaps!r}")
    config = dec._config(options, dec.FiniteSolverConfig())
    # About 16 M^2 floats per problem (the exact objectives of the candidates); keep a batch
    # of problems under ~2^26 floats.
    m = model.num_models
    batch = int(max(1, min(m, 2**26 // max(1, 16 * m * m * eps.size))))
    values, lowers, status = _curve(model, jnp.asarray(eps**2, model.rewards.dtype), gaps=gaps, config=config,
                                    batch=batch)
    values, lowers, status = (np.asarray(x) for x in (values, lowers, status))
    arg = np.argmax(values, axis=1)
    return DecCurve(eps=eps, value=values.max(axis=1), lower=lowers.max(axis=1), per_model=values,
                    per_model_lower=lowers, argmax=arg, status=status)


def _per_model(model, f, eps2, gaps, config):
    rewards_f, obs_f = finite.model_at(model, f)
    g = finite.gap_matrix(model.rewards) if gaps == "delta" else finite.gap_matrix_f(model.rewards, rewards_f)
    info = finite.info_matrix(model, obs_f)
    res = jax.vmap(lambda e2: dec.solve_acdec(g, info, e2, config))(eps2)
    return res.value, res.lower_bound, res.status


@functools.partial(jax.jit, static_argnames=("gaps", "config", "batch"))
def _curve(model, eps2, gaps, config, batch):
    """(E, M) values, lower bounds and statuses; reference models are solved ``batch`` at a
    time (each batch vmapped over models and eps), which bounds memory for large classes."""
    values, lowers, status = jax.lax.map(lambda f: _per_model(model, f, eps2, gaps, config),
                                         jnp.arange(model.num_models), batch_size=batch)
    return values.T, lowers.T, status.T


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
    """Compares a certified curve with a bound evaluated at ``curve.eps`` (same shape)."""
    bound = np.asarray(bound, np.float64)
    if bound.shape != curve.eps.shape:
        raise ValueError(f"bound must have shape {curve.eps.shape} like curve.eps, got {bound.shape}")
    ratio = curve.value / bound
    return BoundCheck(holds=curve.value <= bound, violated=curve.lower > bound, ratio=ratio,
                      max_ratio=float(np.max(ratio)))
