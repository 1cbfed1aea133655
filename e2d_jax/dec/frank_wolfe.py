"""Frank-Wolfe on a smoothed max over the simplex, with a certified duality gap.

Solves ``min_{mu in simplex_K} F(mu)``, ``F(mu) = max_b h_b(mu)`` with every h_b convex and
smooth in the interior: the fixed-lambda program of Appendix 'Convex Program for Fixed
lambda'. The max makes F non-smooth, and Frank-Wolfe with the arg-max subgradient does not
converge on it (a vertex-seeking step cannot settle on a kink). We run Frank-Wolfe on the
log-sum-exp smoothing

    F_tau(mu) = tau log sum_b exp(h_b(mu) / tau),     F <= F_tau <= F + tau log N,

with a temperature tau_k = tau_0 / sqrt(k + 1) that decreases with the iteration (the
smoothing Frank-Wolfe of Lan, 2013, and Nesterov's smoothing): its gradient is the gradient of
the Lagrangian L(mu, p) = sum_b p_b h_b(mu) at the soft-max weights p = softmax(h / tau), and
the scheme converges at rate O(1/sqrt(k)) on F. Steps are the open-loop gamma_k = 2/(k + 3)
(k counted from 0; never 1, so a warm start's support is kept and the design matrix stays
invertible).

Certificate: every ``check_every`` steps, ``certificate(mu, omega)`` returns the exact F(mu)
and the lower bound ``L(mu, omega) + min_pi grad_pi - <grad, mu>`` (valid for any omega in the
simplex, because L(., omega) is convex and below F), evaluated at the running average of the
soft-max weights. The best upper bound (and its mu) and the best lower bound are kept, so the
returned gap is certified and monotone.

Loop: blocks of ``check_every`` steps, each followed by the certificate (:func:`block`), run by
the certified loop of :mod:`e2d_jax.dec.loop` (the :class:`~e2d_jax.dec.solvers.FrankWolfeGrid`
solver's steps on a fixed-lambda program).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax.dec import loop
from e2d_jax.dec.saddle import SaddleSolution, blocks, certified, floor_simplex


class FWState(NamedTuple):
    mu: jax.Array  # (K,) current iterate
    omega_avg: jax.Array  # (N,) running average of the soft-max weights
    tau0: jax.Array  # () initial temperature
    best_mu: jax.Array  # (K,) iterate with the lowest certified value
    best_omega: jax.Array  # (N,)
    upper: jax.Array  # () lowest exact objective seen
    lower: jax.Array  # () highest valid lower bound seen
    iter_num: jax.Array  # () int32


def init(smoothed_grad, certificate, mu0, tau0=None) -> FWState:
    """``smoothed_grad(mu, tau) -> (grad_mu, p, h)``: gradient of F_tau, soft-max weights, h."""
    mu0, _ = floor_simplex(mu0)
    _, p, h = smoothed_grad(mu0, jnp.ones((), mu0.dtype))
    if tau0 is None:
        tau0 = jnp.maximum(0.1 * (jnp.max(h) - jnp.min(h)), 1e-6 * jnp.maximum(jnp.max(jnp.abs(h)), 1.0))
    upper, lower = certificate(mu0, p)
    return FWState(mu=mu0, omega_avg=p, tau0=jnp.asarray(tau0, mu0.dtype), best_mu=mu0, best_omega=p,
                   upper=upper, lower=lower, iter_num=jnp.zeros((), jnp.int32))


def step(smoothed_grad, state: FWState) -> FWState:
    k = state.iter_num.astype(state.mu.dtype)
    tau = state.tau0 / jnp.sqrt(k + 1.0)
    grad, p, _ = smoothed_grad(state.mu, tau)
    vertex = jax.nn.one_hot(jnp.argmin(grad), state.mu.shape[0], dtype=state.mu.dtype)
    gamma = 2.0 / (k + 3.0)
    return state._replace(
        mu=state.mu + gamma * (vertex - state.mu),
        omega_avg=state.omega_avg + gamma * (p - state.omega_avg),
        iter_num=state.iter_num + 1,
    )


def certify(certificate, state: FWState) -> FWState:
    up, lo = certificate(state.mu, state.omega_avg)
    better = up < state.upper
    lower = jnp.maximum(state.lower, jnp.where(jnp.isfinite(lo), lo, state.lower))
    return state._replace(
        best_mu=jnp.where(better, state.mu, state.best_mu),
        best_omega=jnp.where(better, state.omega_avg, state.best_omega),
        upper=jnp.where(better, up, state.upper),
        lower=lower,
    )


def block(smoothed_grad, certificate, state: FWState, check_every: int) -> FWState:
    """``check_every`` steps, then the certificate (:func:`certify`)."""
    state = jax.lax.fori_loop(0, check_every, lambda _, x: step(smoothed_grad, x), state)
    return certify(certificate, state)


def solve(
    smoothed_grad: Callable,
    certificate: Callable,
    mu0: jax.Array,
    *,
    maxiter: int = 100,
    rtol: float = 1e-4,
    atol: float = 0.0,
    check_every: int = 10,
    tau0=None,
) -> SaddleSolution:
    """Smoothed Frank-Wolfe from ``mu0`` (warm-startable) with a step budget and a tolerance,
    for a problem of one's own given by its callbacks (the DEC programs of the library run
    through :class:`~e2d_jax.dec.solvers.FrankWolfeGrid`, which takes the same steps).

    Returns a ``SaddleSolution`` (mu, omega = averaged soft-max weights, upper = F(mu),
    certified lower bound, gap, iterations, status).
    """
    every, n_blocks = blocks(maxiter, check_every)
    state = loop.run(lambda x: block(smoothed_grad, certificate, x, every), init(smoothed_grad, certificate, mu0, tau0),
                     steps=n_blocks, min_steps=1, done=lambda x: loop.converged(x.upper, x.lower, rtol, atol),
                     halted=lambda x: ~certified(x))
    answer = loop.Answer(mu=state.best_mu, omega=state.best_omega, lam=jnp.zeros((), state.upper.dtype),
                         value=state.upper, lower=state.lower, iterations=state.iter_num, carry=None)
    return SaddleSolution(
        mu=state.best_mu, omega=state.best_omega, upper=state.upper, lower=state.lower,
        gap=state.upper - state.lower, iterations=state.iter_num,
        status=loop.status(answer, rtol, atol), step=state.tau0,
    )
