"""The average-constrained DEC for linear feedback (the linear-DEC lemma, Section 3.4) and its solvers.

For linear bandits with side observations, M = R^d and the divergence
I_f(pi, g) = ||M_pi (g - f)||^2, the linear-DEC lemma reduces the ac-DEC with gaps Delta_f to

    dec^{ac,f}_eps(f_hat) = min_{lambda >= 0, mu in simplex} psi(lambda, mu),
    psi(lambda, mu) = max_b <phi_b - phi_mu, f_hat> + ||phi_b||^2_{V(mu)^{-1}} / (4 lambda) + lambda eps^2,

with V(mu) = sum_pi mu_pi G_pi, G_pi = M_pi^T M_pi. Write r_b = <phi_b, f_hat>,
a_b(mu) = r_b - <mu, r> and c_b(mu) = ||phi_b||^2_{V(mu)^{-1}}.

Exact form (solver ``"saddle"``, the default). For fixed mu, min over lambda of the max over b
equals (Sion) the max over mixtures omega of actions of
omega.a + omega.c / (4 lambda) + lambda eps^2, minimised at lambda = sqrt(omega.c) / (2 eps):

    g(mu) = min_lambda psi(lambda, mu) = max_{omega in simplex} omega.a(mu) + eps sqrt(omega.c(mu)).

L(mu, omega) = omega.a + eps sqrt(omega.c) is concave in omega and convex in mu
(sqrt(tr(V(mu)^{-1} A)) = (1 / tr(V^{-1} A))^{-1/2} with 1/tr(V^{-1} A) concave in V, and
t -> t^{-1/2} convex and decreasing), so min_mu max_omega L is a convex-concave saddle problem
over two simplices, solved by mirror-prox (``e2d_jax.dec.saddle``) without any lambda grid.
For a given mu, g(mu) is computed *exactly*: (omega.a, omega.c) ranges over the convex hull of
the points (a_b, c_b), and x + eps sqrt(y) is concave and increasing, so the maximum lies on a
segment between two points and has a closed form (``max_sqrt_mixture``); that also gives
lambda*(mu). Every returned ``value`` is psi honestly evaluated at the returned (lambda, mu).

Paper's mode (solver ``"fw-grid"``). The fixed-lambda program (Appendix 'Convex Program for
Fixed lambda') solved by smoothed Frank-Wolfe (``e2d_jax.dec.frank_wolfe``) on a vectorised
lambda grid over a range that provably contains the minimiser, then refined
(``e2d_jax.dec.lambda_search``). ``"saddle-grid"`` uses mirror-prox for the inner problem.

Gaps Delta instead of Delta_f (``gap_type="delta"``): max over g of <phi_b - phi_mu, g> -
lambda ||g - f_hat||^2_V gives c_b(mu) = ||phi_b - phi_mu||^2_{V(mu)^{-1}}; each fixed-lambda
program is still convex in mu, but the exact form need not be. The default there is the
certified branch-and-bound search over lambda (solver ``"lambda-search"``,
:mod:`e2d_jax.dec.lambda_search`): mirror-prox at each lambda, and at each evaluated point the
linearisation of the Lagrangian as a minorant of dec^o for every lambda, minimised exactly
over each interval (:func:`_interval_bounds`), so its lower bound covers the whole proven
range.

d > K (the paper's Experiment 2). V(mu) has rank <= K < d for every mu. Every reward and
observation depends on f only through its component in the observable span
S = range(sum_pi G_pi), which contains every phi_b (the reward is observed, Example 2.2). In an
orthonormal basis U of S, V_S(mu) = U^T V(mu) U is invertible for mu in the interior of the
simplex and ||phi_b||^2_{V(mu)^+} = ||U^T phi_b||^2_{V_S(mu)^{-1}}, so the program is solved
exactly in S, without a ridge. Directions of the basis that the observations do not reach
(numerically zero eigenvalues of sum_pi G_pi) get an identity block, which the features do
not see, so the answer is unchanged.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax import _linalg
from e2d_jax import _checks as V
from e2d_jax.dec import lambda_search, loop, saddle
from e2d_jax.dec import solvers as S
from e2d_jax.envs import linear as envs_linear
from e2d_jax.envs.linear import LinearModel, ObservableSpan, gram_inner, gram_sum, observable_span
from e2d_jax.types import GAP_TYPES, DecResult, WarmStart



# --------------------------------------------------------------------------------------
# Pieces of the objective


def design_matrix(mu, s: ObservableSpan):
    """V(mu) in the span (plus the identity on unreached directions), (r, r)."""
    return gram_sum(mu, s) + s.null_proj


def feature_norms(mu, s: ObservableSpan, active=None):
    """c_b(mu) = ||phi_b||^2_{V(mu)^{-1}} (K,) and W = V(mu)^{-1} Phi^T (r, K), for mu on every
    action or on the actions ``active`` only (a working set's; c_b and W of every action)."""
    w = _linalg.psd_solve_wide(gram_sum(mu, s, active) + s.null_proj, s.features.T)
    # (einsum rather than a broadcast product: fewer kernels under vmap on CPU)
    return jnp.einsum("ik,ki->k", w, s.features), w


def info_gradient(w, weights, s: ObservableSpan):
    """d/dmu_pi of sum_b weights_b c_b(mu) = -<G_pi, W diag(weights) W^T>, (K,).

    Written as (G flattened) @ (W diag(weights) W^T flattened), or through the observation
    rows (:func:`gram_inner`): two matrix products, O(K r^2), the fastest of the formulations
    tried under vmap on CPU (docs: Design notes).
    """
    return -gram_inner(s, (w * weights) @ w.T)


def delta_norms(mu, s: ObservableSpan):
    """c_b(mu) = ||phi_b - phi_mu||^2_{V(mu)^{-1}} for gaps Delta, (K,)."""
    x = s.features - mu @ s.features  # (K, r)
    w = _linalg.psd_solve_wide(design_matrix(mu, s), x.T)
    return jnp.einsum("ik,ki->k", w, x)


#: Up to this many actions :func:`max_sqrt_mixture` searches every pair of actions (K (K - 1) / 2
#: segments, the fastest there); above it, the dual search picks the candidates.
PAIRS_MAX_ACTIONS = 32
#: Actions the dual search hands to the pairwise formula: the best lines at the minimiser and
#: the best at each end of its final bracket.
DUAL_CANDIDATES = 6
#: Bisection steps of the dual search, in log u over a bracket of at most 0.5 log(1e12) ~ 13.8,
#: by the dtype's size in bytes (4: float32 and narrower): a float32 bracket of 2^-27 of that
#: is a relative change of u of 1e-7, float32's resolution, beyond which halving changes
#: nothing.
DUAL_STEPS = {4: 27, 8: 48}


def _max_over_pairs(a, c, eps):
    """max over the K (K - 1) / 2 segments and the K vertices (see :func:`max_sqrt_mixture`)."""
    k = a.shape[0]
    if k > 1:
        ii, jj = np.triu_indices(k, 1)
        ii = np.concatenate([ii, np.arange(k)])
        jj = np.concatenate([jj, np.arange(k)])
    else:
        ii = jj = np.zeros(1, int)
    ai, aj, ci, cj = a[ii], a[jj], c[ii], c[jj]
    dx, dy = aj - ai, cj - ci
    interior = dx * dy < 0
    sdx = jnp.where(interior, dx, 1.0)
    sdy = jnp.where(interior, dy, 1.0)
    y_star = (eps * sdy / (2.0 * sdx)) ** 2
    t_stat = jnp.where(interior, jnp.clip((y_star - ci) / sdy, 0.0, 1.0), 0.0)
    # Without an interior stationary point the segment is monotone: take its better end.
    t_end = jnp.where(aj + eps * jnp.sqrt(jnp.maximum(cj, 0.0)) > ai + eps * jnp.sqrt(jnp.maximum(ci, 0.0)), 1.0, 0.0)
    t = jnp.where(interior, t_stat, t_end)
    y = jnp.maximum(ci + t * dy, 0.0)
    val = ai + t * dx + eps * jnp.sqrt(y)
    idx = jnp.argmax(val)
    tt = t[idx]
    omega = ((1.0 - tt) * jax.nn.one_hot(jnp.asarray(ii)[idx], k, dtype=a.dtype)
             + tt * jax.nn.one_hot(jnp.asarray(jj)[idx], k, dtype=a.dtype))
    return val[idx], omega, y[idx]


def _dual_candidates(a, c, eps):
    """The actions that can carry the maximiser, from the dual min_{u > 0} phi(u),
    phi(u) = max_b (a_b + c_b u) + eps^2 / (4 u) (convex; eps sqrt(y) = min_u y u + eps^2 / (4 u)):
    bisection in log u on the sign of phi's slope c_{b(u)} - eps^2 / (4 u^2), b(u) the best line
    at u, over [eps / (2 sqrt(max c)), eps / (2 sqrt(min c))] (min c floored at 1e-12 max c), where
    the minimiser lies (u* = eps / (2 sqrt(omega*.c))). The maximising mixture's two actions are
    the best lines at u* (they meet there); the best ones at u* and at both ends of the bracket are
    returned, (DUAL_CANDIDATES,) indices."""
    cmax = jnp.maximum(jnp.max(c), jnp.finfo(c.dtype).tiny)
    cmin = jnp.maximum(jnp.min(c), 1e-12 * cmax)
    half_eps = 0.5 * jnp.maximum(eps, jnp.finfo(c.dtype).tiny)
    lo, hi = jnp.log(half_eps * lax.rsqrt(cmax)), jnp.log(half_eps * lax.rsqrt(cmin))
    best = lambda log_u: jnp.argmax(a + c * jnp.exp(log_u))  # noqa: E731

    def slope(log_u):
        # c of the best line at u (the largest c among tied lines), as two plain reductions:
        # an arg-max is a slower, variadic reduction on CPU.
        lines = a + c * jnp.exp(log_u)
        return jnp.max(jnp.where(lines >= jnp.max(lines), c, -jnp.inf))

    def bisect(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        rising = slope(mid) * jnp.exp(2.0 * mid) > half_eps**2  # phi increases at mid
        return jnp.where(rising, lo, mid), jnp.where(rising, mid, hi)

    lo, hi = lax.fori_loop(0, DUAL_STEPS[8 if jnp.dtype(c.dtype).itemsize >= 8 else 4], bisect, (lo, hi))
    _, top = lax.top_k(a + c * jnp.exp(0.5 * (lo + hi)), DUAL_CANDIDATES - 2)
    return jnp.concatenate([top, jnp.stack([best(lo), best(hi)])])


def max_sqrt_mixture(a, c, eps):
    """Exact max_{omega in simplex} omega.a + eps sqrt(omega.c) for c >= 0.

    The maximiser mixes at most two actions (see module docstring): each segment between two
    points (a_i, c_i), (a_j, c_j) is searched in closed form (the stationary point of the
    concave 1-D function, clipped to the segment). Up to ``PAIRS_MAX_ACTIONS`` actions over all
    K (K - 1) / 2 pairs i < j and the K vertices; above, over the pairs of the few candidates
    of the dual search (:func:`_dual_candidates`, O(K) per bisection step), which hold the
    maximising pair. Returns ``(value, omega (K,), y = omega.c)``; ``value`` is attained by
    ``omega`` (a feasible mixture) either way.
    """
    k = a.shape[0]
    if k <= PAIRS_MAX_ACTIONS:
        return _max_over_pairs(a, c, eps)
    idx = _dual_candidates(a, c, eps)
    value, om, y = _max_over_pairs(a[idx], c[idx], eps)
    return value, jnp.zeros_like(a).at[idx].add(om), y


def _eps(eps2):
    return jnp.sqrt(jnp.maximum(eps2, 0.0))


def _lambda_star(y, eps):
    """The minimising lambda of max_b a_b + c_b / (4 lambda) + lambda eps^2, from the
    maximising mixture's y = omega.c (see :func:`max_sqrt_mixture`)."""
    return jnp.sqrt(y) / (2.0 * eps)


def best_lambda(a, c, eps2):
    """min_lambda max_b a_b + c_b / (4 lambda) + lambda eps2, exactly: (value, lambda, omega)."""
    eps = _eps(eps2)
    value, omega, y = max_sqrt_mixture(a, c, eps)
    return value, _lambda_star(y, eps), omega


def psi(lam, mu, s: ObservableSpan, f_hat_r, eps2, gap_type: str = "delta_f"):
    """psi(lambda, mu) of the linear-DEC lemma evaluated honestly (structure coordinates)."""
    r = s.features @ f_hat_r
    c = feature_norms(mu, s)[0] if gap_type == "delta_f" else delta_norms(mu, s)
    return jnp.max(r - mu @ r + c / (4.0 * lam)) + lam * eps2


def exact_value(mu, s: ObservableSpan, f_hat_r, eps2, gap_type: str = "delta_f", *, r=None):
    """g(mu) = min_lambda psi(lambda, mu), exactly, with the minimising lambda (``r`` = the
    rewards Phi f_hat, instead of ``f_hat_r``)."""
    r = s.features @ f_hat_r if r is None else r
    c = feature_norms(mu, s)[0] if gap_type == "delta_f" else delta_norms(mu, s)
    value, lam, _ = best_lambda(r - mu @ r, c, eps2)
    return value, lam


# --------------------------------------------------------------------------------------
# Problem callbacks for the generic solvers


def _psi_value(a, c, lam, eps2):
    """psi(lambda, mu) = max_b a_b + c_b / (4 lambda) + lambda eps2, for a = r - mu.r."""
    return jnp.max(a + c / (4.0 * lam)) + lam * eps2


def _exact_problem(s, r, eps2):
    """grads / certificate of L(mu, omega) = omega.a(mu) + eps sqrt(omega.c(mu))."""
    eps = _eps(eps2)

    def grads(mu, omega):
        c, w = feature_norms(mu, s)
        root = jnp.sqrt(omega @ c)
        g_mu = -r + eps / (2.0 * root) * info_gradient(w, omega, s)
        g_om = r + eps * c / (2.0 * root)
        return g_mu, g_om

    def certificate(mu, omega):
        c, w = feature_norms(mu, s)
        a = r - mu @ r
        upper, om_star, y = max_sqrt_mixture(a, c, eps)
        lower = -jnp.inf
        for om in (omega, om_star):
            root = jnp.sqrt(om @ c)
            g = -r + eps / (2.0 * root) * info_gradient(w, om, s)
            lagr = om @ a + eps * root
            lower = jnp.maximum(lower, lagr + jnp.min(g) - g @ mu)
        # lambda*(mu) and psi(lambda*, mu), honestly evaluated, as solve_acdec reports them:
        # kept by the solver for its best mu, so not computed again after the solve.
        lam = _lambda_star(y, eps)
        return upper, lower, lam, _psi_value(a, c, lam, eps2)

    def screen(active, mu_w, omega_w):
        # The certificate of mu and of one or more max-player mixtures (omega_w (m,) or (j, m))
        # held on the actions ``active`` (mu_w (m,); None: all of them), the lower bound the
        # best over them and the best response: the sums over their supports run over m
        # actions (the best response mixes at most two), those over all K are W, c and the
        # gradients (one product).
        on = (lambda x: x) if active is None else (lambda x: x[active])  # noqa: E731
        c, w = feature_norms(mu_w, s, active)
        a = r - mu_w @ on(r)
        upper, om_star, y = max_sqrt_mixture(a, c, eps)
        _, pair = lax.top_k(om_star, 2)
        w_on, omegas = on(w.T).T, jnp.atleast_2d(omega_w)
        weights = [(w_on * om) @ w_on.T for om in omegas] + [(w[:, pair] * om_star[pair]) @ w[:, pair].T]
        roots = jnp.sqrt(jnp.concatenate([omegas @ on(c), (om_star[pair] @ c[pair])[None]]))
        g = -r[:, None] + eps / (2.0 * roots) * -gram_inner(s, jnp.stack(weights))
        lagr = jnp.concatenate([omegas @ on(a), (om_star[pair] @ a[pair])[None]]) + eps * roots
        lower = jnp.max(lagr + jnp.min(g, axis=0) - mu_w @ on(g))
        lam = _lambda_star(y, eps)
        return upper, lower, lam, _psi_value(a, c, lam, eps2), g[:, 0], om_star

    return grads, certificate, screen


def _offset_problem(s, r, lam, gap_type):
    """grads / certificate / smoothed gradient / arg-max subgradient of L(mu, omega) =
    sum_b omega_b h_b(mu), h_b(mu) = a_b(mu) + c_b(mu) / (4 lambda) (without the constant
    lambda eps^2). The subgradient ``mu -> (g, h)`` is the gradient of h_b at the first
    maximiser b of h (by the envelope theorem, the gradient with the alternative model of b
    held fixed)."""
    def pieces(mu, weights_fn):
        if gap_type == "delta_f":
            c, w = feature_norms(mu, s)
            extra = 0.0
        else:
            # c_b = x_b^T V^{-1} x_b with x_b = phi_b - phi_mu: d/dmu_pi adds
            # -2 phi_pi^T V^{-1} x_b to the -x_b^T V^{-1} G_pi V^{-1} x_b of Delta_f.
            x = s.features - mu @ s.features
            w = _linalg.psd_solve_wide(design_matrix(mu, s), x.T)
            c = jnp.einsum("ik,ki->k", w, x)
        h = r - mu @ r + c / (4.0 * lam)
        weights = weights_fn(h)
        if gap_type != "delta_f":
            extra = -2.0 * (s.features @ (w @ weights))
        g = -r + (info_gradient(w, weights, s) + extra) / (4.0 * lam)
        return h, weights, g

    def grads(mu, omega):
        h, _, g = pieces(mu, lambda h: omega)
        return g, h

    def certificate(mu, omega):
        h, _, g = pieces(mu, lambda h: omega)
        upper = jnp.max(h)
        lower = omega @ h + jnp.min(g) - g @ mu
        h2, _, g2 = pieces(mu, lambda h: jax.nn.one_hot(jnp.argmax(h), h.shape[0], dtype=h.dtype))
        lower2 = jnp.max(h2) + jnp.min(g2) - g2 @ mu
        return upper, jnp.maximum(lower, lower2)

    def smoothed_grad(mu, tau):
        h, p, g = pieces(mu, lambda h: jax.nn.softmax(h / tau))
        return g, p, h

    def subgradient(mu):
        h, _, g = pieces(mu, lambda h: jax.nn.one_hot(jnp.argmax(h), h.shape[0], dtype=h.dtype))
        return g, h

    return grads, certificate, smoothed_grad, subgradient


# --------------------------------------------------------------------------------------
# The lambda range


def lambda_range(s: ObservableSpan, r, eps2, mu_ref, gap_type="delta_f"):
    """A range [lo, hi] that provably contains the minimising lambda.

    Let U = g(mu_ref) (computed exactly) >= the optimal value psi*, and Lam = max_pi tr G_pi,
    so that V(mu) <= Lam I on the span for every mu.

    Upper end: the max over b is at least its mu-average, which is >= 0 for both gap
    choices, so psi >= lambda eps^2 and lambda* <= U / eps^2.

    Lower end, gaps Delta_f: for b_hat = argmax_b r_b, a_{b_hat} >= 0 and c_{b_hat}(mu) >=
    ||phi_{b_hat}||^2 / Lam, so psi >= C / (4 lambda) with C = ||phi_{b_hat}||^2 / Lam, and
    C / (4 lambda*) <= U gives lambda* >= C / (4 U).
    Gaps Delta: a_b >= -R with R = max r - min r, and max_b ||phi_b - phi_mu|| >= D / 2 with
    D the diameter of the features (triangle inequality), so psi >= -R + D^2 / (16 Lam lambda)
    and lambda* >= D^2 / (16 Lam (U + R)).
    """
    c = feature_norms(mu_ref, s)[0] if gap_type == "delta_f" else delta_norms(mu_ref, s)
    upper, _, _ = best_lambda(r - mu_ref @ r, c, eps2)
    big = jnp.max(jnp.trace(s.grams, axis1=1, axis2=2))
    if gap_type == "delta_f":
        lo = jnp.sum(s.features[jnp.argmax(r)] ** 2) / (4.0 * big * upper)
    else:
        diff = s.features[:, None, :] - s.features[None, :, :]
        diam2 = jnp.max(jnp.sum(diff**2, axis=-1))
        lo = diam2 / (16.0 * big * (upper + jnp.max(r) - jnp.min(r)))
    hi = upper / eps2
    # Degenerate inputs (a zero feature): fall back to a tiny positive lower end.
    lo = jnp.where(lo > 0, jnp.minimum(lo, hi), hi * 1e-9)
    return lo, hi


# --------------------------------------------------------------------------------------
# Solvers in structure coordinates (used by the agents)


def _info_terms(mu, omega, s: ObservableSpan, gap_type):
    """omega.c(mu) and its gradient d/dmu omega.c(mu), (K,) (for the minorants)."""
    if gap_type == "delta_f":
        c, w = feature_norms(mu, s)
        return omega @ c, info_gradient(w, omega, s)
    x = s.features - mu @ s.features
    w = _linalg.psd_solve_wide(design_matrix(mu, s), x.T)
    c = jnp.einsum("ik,ki->k", w, x)
    return omega @ c, info_gradient(w, omega, s) - 2.0 * (s.features @ (w @ omega))


def _interval_bounds(lams, lowers, minorant, eps2, *, s: ObservableSpan, r, gap_type, subdivide: int = 1):
    """Sorted lams and a certified lower bound of v(lam) = dec^o_lam + lam eps2 on each
    interval between them (:mod:`e2d_jax.dec.lambda_search`).

    Minorant of a pair (mu, omega) of the simplices: L(., omega) = omega.a + omega.c / (4 lam)
    is convex in mu and below the offset objective, so for every lam dec^o_lam >= min_mu
    L(mu, omega) >= L(mu, omega) + min_pi g_pi - g.mu (g its gradient at mu); with
    u = 1 / (4 lam) that is min_pi alpha_pi + u beta_pi, alpha_pi = omega.r - r_pi and
    beta_pi = omega.c - g1.mu + g1_pi (g1 the gradient of omega.c at mu). Its exact minimum
    over an interval, plus lam eps2: each term alpha + beta / (4 lam) + lam eps2 is convex in
    lam when beta > 0 (minimised at sqrt(beta) / (2 eps), clipped to the interval) and
    increasing otherwise (minimised at the left end).

    Each interval's bound is the larger of the zero-order one lb(l_{i+1}) + l_i eps2 and the
    minorants of its end points' solutions; with ``subdivide`` = S > 1, of the interval's S
    equal pieces, each with the minorants of the pairs (mu_t, omega_t) = (1 - t) (end) + t
    (other end) at its two knots (any pair gives a valid minorant; following the solution
    this way makes the loss shrink with the piece's width).
    """
    mus, omegas = minorant
    order = jnp.argsort(lams)
    sl, slb, sm, so = lams[order], lowers[order], mus[order], omegas[order]
    left, right = sl[:-1], sl[1:]
    zero_order = slb[1:] + left * eps2
    finite = jnp.isfinite(right)
    safe_right = jnp.where(finite, right, left)
    eps = _eps(eps2)
    t = jnp.linspace(0.0, 1.0, subdivide + 1, dtype=sl.dtype)

    def coefficients(mu, omega):
        oc, g1 = _info_terms(mu, omega, s, gap_type)
        return omega @ r - r, oc - g1 @ mu + g1

    def lowest(alpha, beta, lo, hi):
        lam = jnp.clip(jnp.sqrt(jnp.maximum(beta, 0.0)) / (2.0 * eps), lo, hi)
        return jnp.min(alpha + beta / (4.0 * lam) + lam * eps2)

    def interval(mu_l, om_l, mu_r, om_r, lo, hi):
        mix = lambda a, b: (1.0 - t)[:, None] * a[None] + t[:, None] * b[None]
        alpha, beta = jax.vmap(coefficients)(mix(mu_l, mu_r), mix(om_l, om_r))  # (S + 1, K)
        knots = lo + t * (hi - lo)
        pieces = jnp.maximum(jax.vmap(lowest)(alpha[:-1], beta[:-1], knots[:-1], knots[1:]),
                             jax.vmap(lowest)(alpha[1:], beta[1:], knots[:-1], knots[1:]))
        return jnp.min(pieces)

    first_order = jax.vmap(interval)(sm[:-1], so[:-1], sm[1:], so[1:], left, safe_right)
    bounds = jnp.where(finite, jnp.maximum(zero_order, first_order), jnp.inf)
    bounds = jnp.where(jnp.isnan(bounds), -jnp.inf, bounds)
    return order, sl, bounds


# --------------------------------------------------------------------------------------
# The programs, as the solvers of e2d_jax.dec.solvers take them


def _as(dtype, x):
    return jnp.asarray(x, dtype)


class _Linear:
    """What both linear programs give the solvers (see :mod:`e2d_jax.dec.solvers`)."""

    family: ClassVar[str] = "linear"

    def floor(self):
        """The rounding floor added to the absolute tolerance: none (the certificates are
        formed to a few ulps of their terms; see :mod:`e2d_jax.dec.interior_point`)."""
        return None

    def cold_start(self) -> WarmStart:
        return WarmStart.cold(self.span.features.shape[0], dtype=self.span.features.dtype)

    @staticmethod
    def next_start(mu, omega, step) -> WarmStart:
        return WarmStart(mu, omega, step)

    def rewards(self):
        """r_b = <phi_b, f_hat>, (K,)."""
        return self.span.features @ self.f_hat

    def restricted(self, active):
        """The same program on the actions ``active`` (their features, Gram matrices and
        observation rows; the same span and reference model)."""
        return dataclasses.replace(self, span=self.span.take(active))


@functools.partial(jax.tree_util.register_dataclass, data_fields=["span", "f_hat", "lam"], meta_fields=["gap_type"])
@dataclasses.dataclass(frozen=True)
class LinearOffset(_Linear):
    """The offset DEC of a linear model at a fixed lambda, in observable-span coordinates:
    min_mu max_b a_b(mu) + c_b(mu) / (4 lambda) (see the module docstring).

    Attributes:
      span: the model's observable span.
      f_hat: (r,) the reference model in span coordinates.
      lam: () lambda > 0.
      gap_type: ``"delta_f"`` or ``"delta"``.
    """

    span: ObservableSpan
    f_hat: jax.Array
    lam: jax.Array
    gap_type: str = "delta_f"
    program: ClassVar[str] = "offset"

    def saddle_form(self) -> saddle.SaddleForm:
        """L(mu, omega) = sum_b omega_b h_b(mu) (:func:`_offset_problem`); the answer is the
        objective of mu at the given lambda."""
        lam = _as(self.span.features.dtype, self.lam)
        grads, cert, _, _ = _offset_problem(self.span, self.rewards(), lam, self.gap_type)
        return saddle.SaddleForm(grads, cert, lambda upper, aux: (lam, upper))

    def smoothed_form(self):
        """``(smoothed_grad, certificate)`` of the fixed-lambda program for Frank-Wolfe."""
        _, cert, smooth, _ = _offset_problem(self.span, self.rewards(), _as(self.span.features.dtype, self.lam),
                                             self.gap_type)
        return smooth, cert

    def subgradient(self):
        """``mu -> (g, h)``: the objectives h_b(mu) and the arg-max subgradient of max_b h_b
        (:func:`_offset_problem`), for plain Frank-Wolfe."""
        return _offset_problem(self.span, self.rewards(), _as(self.span.features.dtype, self.lam), self.gap_type)[3]


@functools.partial(jax.tree_util.register_dataclass, data_fields=["span", "f_hat", "eps2"], meta_fields=["gap_type"])
@dataclasses.dataclass(frozen=True)
class LinearAcdec(_Linear):
    """The ac-DEC of a linear model in observable-span coordinates (see the module docstring).

    Attributes:
      span: the model's :class:`~e2d_jax.envs.linear.ObservableSpan`.
      f_hat: (r,) the reference model in span coordinates (U^T f_hat).
      eps2: () the radius eps^2 > 0.
      gap_type: ``"delta_f"`` or ``"delta"``.
    """

    span: ObservableSpan
    f_hat: jax.Array
    eps2: jax.Array
    gap_type: str = "delta_f"
    program: ClassVar[str] = "acdec"

    def _eps2(self):
        return _as(self.span.features.dtype, self.eps2)

    def saddle_form(self) -> saddle.SaddleForm:
        """The exact form L(mu, omega) = omega.a(mu) + eps sqrt(omega.c(mu)) (gaps Delta_f;
        :func:`_exact_problem`), whose certificate also returns lambda*(mu) and psi(lambda*, mu)."""
        grads, cert, screen = _exact_problem(self.span, self.rewards(), self._eps2())
        return saddle.SaddleForm(grads, cert, lambda upper, aux: aux, screen,
                                 lambda active: self.restricted(active).saddle_form())

    def at(self, lam) -> LinearOffset:
        """The offset DEC at lambda (the lambda searches' points)."""
        return LinearOffset(self.span, self.f_hat, lam, self.gap_type)

    def lambda_range(self, mu_ref):
        """``(lo, hi)``: a range that provably contains the minimising lambda (:func:`lambda_range`)."""
        return lambda_range(self.span, self.rewards(), self._eps2(), mu_ref, self.gap_type)

    def paper_range(self):
        """sqrt(r) / eps: the top of the paper's lambda range [0, eps^-2 max dec] with its
        bound dec <= eps sqrt(r), which holds when every action observes its own reward (on
        other games the minimising lambda may lie beyond it)."""
        eps2 = self._eps2()
        return jnp.sqrt(jnp.asarray(self.span.features.shape[1], eps2.dtype) / eps2)

    def exact_answer(self, mu):
        """``(lambda*(mu), psi(lambda*, mu))``: the exact minimiser over lambda for mu, and the
        objective honestly evaluated there."""
        r = self.rewards()
        c = feature_norms(mu, self.span)[0] if self.gap_type == "delta_f" else delta_norms(mu, self.span)
        eps2 = self._eps2()
        _, lam, _ = best_lambda(r - mu @ r, c, eps2)
        return lam, _psi_value(r - mu @ r, c, lam, eps2)

    def search(self, solver: S.LambdaSearch, carry) -> "S.SearchWork":
        """The branch and bound of :class:`~e2d_jax.dec.solvers.LambdaSearch` on this program:
        the proven range [lo, hi] (:func:`lambda_range`), a geometric first grid over it, each
        point an offset DEC by the solver's inner solver at the tolerance ``inner_rtol``
        (relative to lambda eps^2), the minorants of :func:`_interval_bounds` (each point's
        (mu, omega)), and as the answer the candidate mu with the smallest exact objective, with
        lambda*(mu)."""
        s, r, eps2 = self.span, self.rewards(), self._eps2()
        k = s.features.shape[0]
        dtype = s.features.dtype
        warm = self.cold_start() if carry is None else carry
        inner = solver.inner_for("linear")

        def solve_at(lam, mu_init, om_init):
            return S.inner_point(inner, self.at(lam), mu_init, om_init, rtol=solver.inner_rtol,
                                 atol=solver.inner_rtol * lam * eps2)

        def interval_bounds(lams, lowers, minorant, eps2_):
            return _interval_bounds(lams, lowers, minorant, eps2_, s=s, r=r, gap_type=self.gap_type,
                                    subdivide=solver.subdivide)

        family = lambda_search.Family(solve_at=solve_at, minorant=lambda sols: (sols.mu, sols.omega),
                                      interval_bounds=interval_bounds)
        lo, hi = lambda_range(s, r, eps2, warm.mu, self.gap_type)
        p = solver.lam_refine
        n_init = -(-solver.lam_grid // p)
        g = n_init * p
        first = lo * (hi / lo) ** (jnp.arange(g, dtype=dtype) / max(g - 1, 1))
        n = g + solver.lam_rounds * p
        zero = jnp.zeros((k,), dtype)
        rounds = lambda_search.Rounds(family=family, first=first, eps2=eps2, n_init=n_init, rounds=solver.lam_rounds,
                                      p=p, offset=0, tail=jnp.inf, mu0=warm.mu, omega0=warm.omega)
        start = lambda_search.start(lambda_search.empty_points(n, k, k, (zero, zero), dtype))

        def answer(search, lower):
            cand, solved = lambda_search.candidates(search, eps2, min(solver.candidates, n))
            values = jnp.where(solved, jax.vmap(lambda mu: exact_value(mu, s, None, eps2, self.gap_type, r=r)[0])(
                search.points.mus[cand]), jnp.inf)
            pick = cand[jnp.argmin(values)]
            mu, omega = search.points.mus[pick], search.points.omegas[pick]
            lam, value = self.exact_answer(mu)
            return loop.Answer(mu=mu, omega=omega, lam=lam, value=value, lower=lower, iterations=search.iterations,
                               carry=WarmStart(mu, omega, jnp.zeros((), dtype)), finite=jnp.isfinite(lam))

        return S.SearchWork(rounds=rounds, start=start, answer=answer)


def solve_acdec(s: ObservableSpan, f_hat_r, eps2, solver: S.Solver = S.SOLVERS["saddle"],
                warm: WarmStart | None = None, gap_type: str = "delta_f") -> tuple[DecResult, WarmStart]:
    """ac-DEC in observable-span coordinates (``f_hat_r`` = U^T f_hat), warm-startable
    (traceable; no argument checks beyond the solver's fit): ``solver.solve(LinearAcdec(...),
    warm)``.

    Args:
      s: the observable span.
      f_hat_r: (r,) the reference model in span coordinates.
      eps2: () the radius eps^2.
      solver: a value of :mod:`e2d_jax.dec.solvers` that solves the linear ac-DEC:
        :class:`~e2d_jax.dec.solvers.Saddle` (the exact form, gaps Delta_f),
        :class:`~e2d_jax.dec.solvers.FrankWolfeGrid`, :class:`~e2d_jax.dec.solvers.SaddleGrid`
        or :class:`~e2d_jax.dec.solvers.LambdaSearch`.
      warm: the warm start (the previous solve's).
      gap_type: ``"delta_f"`` or ``"delta"``.

    Returns:
      ``(DecResult, WarmStart)``: the answer and the warm start of the next solve.
    """
    return solver.solve(LinearAcdec(s, f_hat_r, eps2, gap_type), warm)


def solve_offset(s: ObservableSpan, f_hat_r, lam, solver: S.Solver = S.SOLVERS["saddle"],
                 warm: WarmStart | None = None, gap_type: str = "delta_f") -> tuple[DecResult, WarmStart]:
    """Offset DEC min_mu max_b a_b + c_b / (4 lambda) in observable-span coordinates
    (traceable; no argument checks beyond the solver's fit): ``solver.solve(LinearOffset(...),
    warm)``.

    ``solver``: :class:`~e2d_jax.dec.solvers.Saddle` or :class:`~e2d_jax.dec.solvers.SaddleGrid`
    (mirror-prox with its budget), :class:`~e2d_jax.dec.solvers.InteriorPoint`,
    :class:`~e2d_jax.dec.solvers.FrankWolfeGrid` (smoothed Frank-Wolfe; no grid for a fixed
    lambda).

    Returns:
      ``(DecResult, WarmStart)``: the answer and the warm start of the next solve.
    """
    return solver.solve(LinearOffset(s, f_hat_r, lam, gap_type), warm)


# --------------------------------------------------------------------------------------
# Public functions


def _check_problem(features, grams, f_hat):
    for name, x in (("features", features), ("grams", grams), ("f_hat", f_hat)):
        V.check_floating(name, x)
    if jnp.ndim(features) != 2:
        raise ValueError(f"features must have shape (K, d), got {jnp.shape(features)}")
    k, d = jnp.shape(features)
    if k < 2:
        raise ValueError(f"features must have K >= 2 rows (actions), got K={k}")
    V.check_shape("grams", grams, (k, d, d), what="(K, d, d) with G_pi = M_pi^T M_pi")
    V.check_shape("f_hat", f_hat, (d,))
    for name, x in (("features", features), ("grams", grams), ("f_hat", f_hat)):
        V.check_finite(name, x)
    V.check_psd("grams", grams)


def _check_gaps(model, features, grams, gap_type):
    """Gaps Delta_f need every reward in the observable span (not only the differences)."""
    if model is not None:
        envs_linear.check_gap_type(model, gap_type)
    else:
        envs_linear.check_gap_type_arrays(features, grams, gap_type)


def _warm(mu0, omega0, k, dtype):
    if mu0 is None and omega0 is None:
        return None
    cold = WarmStart.cold(k, dtype=dtype)
    return WarmStart(cold.mu if mu0 is None else jnp.asarray(mu0, dtype),
                     cold.omega if omega0 is None else jnp.asarray(omega0, dtype), cold.step)


def _static_rank(grams, rank):
    """The observable span's dimension, decided in Python (it fixes the compiled shapes)."""
    if rank is not None:
        V.check_int("rank", rank, minimum=1)
        if rank > grams.shape[-1]:
            raise ValueError(f"rank must be <= d={grams.shape[-1]}, got {rank}")
        return rank
    if V.is_concrete(grams):
        return _linalg.numerical_rank(np.sum(np.asarray(grams), axis=0))
    return grams.shape[-1]


@functools.partial(jax.jit, static_argnames=("solver", "gap_type", "rank"))
def _acdec_arrays(features, grams, f_hat, eps2, warm, *, solver, gap_type, rank):
    s = observable_span(features, grams, rank=rank)
    return solve_acdec(s, f_hat @ s.basis, eps2, solver, warm, gap_type)[0]


@functools.partial(jax.jit, static_argnames=("solver", "gap_type"))
def _acdec_span(s, f_hat, eps2, warm, *, solver, gap_type):
    return solve_acdec(s, f_hat @ s.basis, eps2, solver, warm, gap_type)[0]


@functools.partial(jax.jit, static_argnames=("solver", "gap_type", "rank"))
def _offset_arrays(features, grams, f_hat, lam, warm, *, solver, gap_type, rank):
    s = observable_span(features, grams, rank=rank)
    return solve_offset(s, f_hat @ s.basis, lam, solver, warm, gap_type)[0]


@functools.partial(jax.jit, static_argnames=("solver", "gap_type"))
def _offset_span(s, f_hat, lam, warm, *, solver, gap_type):
    return solve_offset(s, f_hat @ s.basis, lam, solver, warm, gap_type)[0]


def _dtype(*xs):
    dt = jnp.result_type(*xs)
    return dt if jnp.issubdtype(dt, jnp.floating) else jax.dtypes.canonicalize_dtype(jnp.float64)


def _problem(fn: str, problem: tuple, last: str):
    """``(model, f_hat, x)`` or ``(features, grams, f_hat, x)`` -> (model or None, features,
    grams, f_hat, x), with the shapes and values checked (``last`` names x)."""
    if problem and isinstance(problem[0], LinearModel):
        if len(problem) != 3:
            raise ValueError(f"{fn}(model, f_hat, {last}) takes 3 positional arguments with a model, got "
                             f"{len(problem)}")
        model, f_hat, x = problem
        _check_problem(model.features, model.grams, f_hat)
        return model, model.features, model.grams, f_hat, x
    if len(problem) != 4:
        raise ValueError(f"{fn} takes (model, f_hat, {last}) or (features, grams, f_hat, {last}), got "
                         f"{len(problem)} positional arguments")
    features, grams, f_hat, x = problem
    _check_problem(features, grams, f_hat)
    return None, features, grams, f_hat, x


def linear_acdec(*problem, solver=None, gap_type: str = "delta_f", mu0=None, omega0=None,
                 rank: int | None = None, **options) -> DecResult:
    """The average-constrained DEC of a linear model with side observations, with a certificate.

    Solves min_{lambda >= 0, mu in simplex} max_b <phi_b - phi_mu, f_hat> +
    ||phi_b||^2_{V(mu)^{-1}} / (4 lambda) + lambda eps^2 (the linear-DEC lemma of Section 3.4;
    see the module docstring), with the information I_f(pi, g) = ||M_pi (g - f)||^2.

    Call it as ``linear_acdec(model, f_hat, eps2)`` with a :class:`~e2d_jax.envs.linear.LinearModel`
    (its precomputed observable span is used) or ``linear_acdec(features, grams, f_hat, eps2)``
    with arrays.

    Args:
      *problem: ``(model, f_hat, eps2)`` or ``(features, grams, f_hat, eps2)``:
        features (K, d) phi_pi as rows; grams (K, d, d) G_pi = M_pi^T M_pi, symmetric
        positive semi-definite (checked on concrete inputs within ``PSD_RTOL`` x max(1,
        max |entry|)); f_hat (d,) the reference model; eps2 () the radius eps^2 > 0.
        Concrete inputs with NaN or inf, mismatched shapes or K < 2 raise ValueError naming
        the argument; under jit/vmap the result's ``status`` reports non-finite answers.
      solver: a solver value or name of :mod:`e2d_jax.dec.solvers` (default: ``"saddle"``, the
        exact form by mirror-prox, for gaps Delta_f; ``"lambda-search"``, the certified
        branch-and-bound search over lambda, for gaps Delta). ``"fw-grid"`` is the paper's
        smoothed Frank-Wolfe on a lambda grid, ``"paper"`` its budget.
      gap_type: ``"delta_f"`` (the lemma's gaps; default) or ``"delta"``.
      mu0: optional (K,) warm starts.
      omega0: see ``mu0``.
      rank: with arrays, the dimension of the observable span if known (static); see
        :func:`~e2d_jax.envs.linear.observable_span`.
      **options: fields of the solver to change (e.g. ``maxiter``, ``rtol``, ``lam_grid``).

    Returns:
      DecResult: ``mu`` (K,), ``lam`` (), ``value`` () = psi(lam, mu), ``lower_bound`` (a
      certified lower bound on the optimum), ``gap`` = value - lower_bound, ``iterations``,
      ``status`` and ``omega``.

    References:
      Kirschner et al. (2023), Section 3.4 (the linear-DEC lemma), Appendix D (the
      fixed-lambda program).
    """
    model, features, grams, f_hat, eps2 = _problem("linear_acdec", problem, "eps2")
    V.check_positive("eps2", eps2)
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    _check_gaps(model, features, grams, gap_type)
    solver = S.resolve(solver, "linear", "acdec", gap_type, **options)
    dtype = _dtype(features, grams, f_hat)
    rank = None if model is not None else _static_rank(jnp.asarray(grams), rank)

    def call(dt):
        warm = _warm(mu0, omega0, features.shape[0], dt)
        if model is not None:
            span = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dt), model.span)
            return _acdec_span(span, jnp.asarray(f_hat, dt), jnp.asarray(eps2, dt), warm, solver=solver,
                               gap_type=gap_type)
        return _acdec_arrays(jnp.asarray(features, dt), jnp.asarray(grams, dt), jnp.asarray(f_hat, dt),
                             jnp.asarray(eps2, dt), warm, solver=solver, gap_type=gap_type, rank=rank)

    return S.in_float64(call, dtype, features, grams, f_hat, eps2)


def linear_offset_dec(*problem, solver=None, gap_type: str = "delta_f", mu0=None, omega0=None,
                      rank: int | None = None, **options) -> DecResult:
    """The offset DEC for a fixed lambda: min_mu max_b <phi_b - phi_mu, f_hat> + ||phi_b||^2_{V(mu)^{-1}} / (4 lambda).

    Called as :func:`linear_acdec` with ``lam`` > 0 in place of ``eps2``:
    ``linear_offset_dec(model, f_hat, lam)`` or ``linear_offset_dec(features, grams, f_hat, lam)``.
    ``solver`` is a solver value or name of :mod:`e2d_jax.dec.solvers` that solves the linear
    offset DEC: ``"saddle"`` (mirror-prox on the max over mixtures, default) or ``"fw-grid"``
    (smoothed Frank-Wolfe; no grid is involved for a fixed lambda); ``**options`` change its
    fields. The returned ``value`` is
    the objective at ``mu`` (no lambda eps^2 term) and ``lam`` is the given lambda.
    """
    model, features, grams, f_hat, lam = _problem("linear_offset_dec", problem, "lam")
    V.check_positive("lam", lam)
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    _check_gaps(model, features, grams, gap_type)
    solver = S.resolve(solver, "linear", "offset", gap_type, **options)
    dtype = _dtype(features, grams, f_hat)
    rank = None if model is not None else _static_rank(jnp.asarray(grams), rank)

    def call(dt):
        warm = _warm(mu0, omega0, features.shape[0], dt)
        if model is not None:
            span = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dt), model.span)
            return _offset_span(span, jnp.asarray(f_hat, dt), jnp.asarray(lam, dt), warm, solver=solver,
                                gap_type=gap_type)
        return _offset_arrays(jnp.asarray(features, dt), jnp.asarray(grams, dt), jnp.asarray(f_hat, dt),
                              jnp.asarray(lam, dt), warm, solver=solver, gap_type=gap_type, rank=rank)

    return S.in_float64(call, dtype, features, grams, f_hat, lam)
