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
program is still convex in mu, but the exact form need not be, so only the grid solvers take
it.

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

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _linalg
from e2d_jax import _checks as V
from e2d_jax.dec import frank_wolfe, lambda_search, saddle
from e2d_jax.envs.linear import LinearModel, ObservableSpan, observable_span
from e2d_jax.types import GAP_TYPES, DecResult, Status, WarmStart

SOLVERS = ("saddle", "fw-grid", "saddle-grid")


# --------------------------------------------------------------------------------------
# Pieces of the objective


def design_matrix(mu, s: ObservableSpan):
    """V(mu) in the span (plus the identity on unreachable directions), (r, r)."""
    return jnp.einsum("k,kij->ij", mu, s.grams) + s.null_proj


def feature_norms(mu, s: ObservableSpan):
    """c_b(mu) = ||phi_b||^2_{V(mu)^{-1}} (K,) and W = V(mu)^{-1} Phi^T (r, K)."""
    w = _linalg.psd_solve(design_matrix(mu, s), s.features.T)
    # (einsum rather than a broadcast product: fewer kernels under vmap on CPU)
    return jnp.einsum("ik,ki->k", w, s.features), w


def info_gradient(w, weights, grams):
    """d/dmu_pi of sum_b weights_b c_b(mu) = -<G_pi, W diag(weights) W^T>, (K,).

    Written as (G flattened) @ ((W (x) W) @ weights), the fastest of the formulations tried
    under vmap on CPU (docs: Design notes).
    """
    r, k = w.shape
    outer = (w[:, None, :] * w[None, :, :]).reshape(r * r, k)
    return -(grams.reshape(grams.shape[0], r * r) @ (outer @ weights))


def delta_norms(mu, s: ObservableSpan):
    """c_b(mu) = ||phi_b - phi_mu||^2_{V(mu)^{-1}} for gaps Delta, (K,)."""
    x = s.features - mu @ s.features  # (K, r)
    w = _linalg.psd_solve(design_matrix(mu, s), x.T)
    return jnp.einsum("ik,ki->k", w, x)


def max_sqrt_mixture(a, c, eps):
    """Exact max_{omega in simplex} omega.a + eps sqrt(omega.c) for c > 0.

    The maximiser mixes at most two actions (see module docstring): each segment between two
    points (a_i, c_i), (a_j, c_j) is searched in closed form (the stationary point of the
    concave 1-D function, clipped to the segment), over the K (K - 1) / 2 pairs i < j and the K
    vertices. Returns ``(value, omega (K,), y = omega.c)``.
    """
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


def exact_value(mu, s: ObservableSpan, f_hat_r, eps2, gap_type: str = "delta_f"):
    """g(mu) = min_lambda psi(lambda, mu), exactly, with the minimising lambda."""
    r = s.features @ f_hat_r
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
        g_mu = -r + eps / (2.0 * root) * info_gradient(w, omega, s.grams)
        g_om = r + eps * c / (2.0 * root)
        return g_mu, g_om

    def certificate(mu, omega):
        c, w = feature_norms(mu, s)
        a = r - mu @ r
        upper, om_star, y = max_sqrt_mixture(a, c, eps)
        lower = -jnp.inf
        for om in (omega, om_star):
            root = jnp.sqrt(om @ c)
            g = -r + eps / (2.0 * root) * info_gradient(w, om, s.grams)
            lagr = om @ a + eps * root
            lower = jnp.maximum(lower, lagr + jnp.min(g) - g @ mu)
        # lambda*(mu) and psi(lambda*, mu), honestly evaluated, as solve_acdec reports them:
        # kept by the solver for its best mu, so not computed again after the solve.
        lam = _lambda_star(y, eps)
        return upper, lower, lam, _psi_value(a, c, lam, eps2)

    return grads, certificate


def _offset_problem(s, r, lam, gap_type):
    """grads / certificate / smoothed gradient of L(mu, omega) = sum_b omega_b h_b(mu),
    h_b(mu) = a_b(mu) + c_b(mu) / (4 lambda) (without the constant lambda eps^2)."""
    def pieces(mu, weights_fn):
        if gap_type == "delta_f":
            c, w = feature_norms(mu, s)
            extra = 0.0
        else:
            # c_b = x_b^T V^{-1} x_b with x_b = phi_b - phi_mu: d/dmu_pi adds
            # -2 phi_pi^T V^{-1} x_b to the -x_b^T V^{-1} G_pi V^{-1} x_b of Delta_f.
            x = s.features - mu @ s.features
            w = _linalg.psd_solve(design_matrix(mu, s), x.T)
            c = jnp.einsum("ik,ki->k", w, x)
        h = r - mu @ r + c / (4.0 * lam)
        weights = weights_fn(h)
        if gap_type != "delta_f":
            extra = -2.0 * (s.features @ (w @ weights))
        g = -r + (info_gradient(w, weights, s.grams) + extra) / (4.0 * lam)
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

    return grads, certificate, smoothed_grad


# --------------------------------------------------------------------------------------
# Solver configuration and the lambda range


@dataclasses.dataclass(frozen=True)
class LinearSolverConfig:
    """How to solve the program (static: part of the compiled function).

    Attributes:
      solver: ``"saddle"`` (exact form, mirror-prox), ``"fw-grid"`` (paper: smoothed
        Frank-Wolfe per lambda on a vectorised grid) or ``"saddle-grid"``.
      maxiter: iteration budget per inner solve.
      rtol: stop when the certified gap <= rtol * value (+ ``atol``).

    Defaults (saddle): 1,000 iterations, rtol 1e-3. Most problems certify 1e-3 in a few
    hundred iterations, with a tail of slower ones (float32 rounding slows the last digits);
    a vmapped batch runs as long as its slowest problem, so the budget caps that tail. A
    solve that stops on the budget reports ``Status.MAX_ITER`` with its certified ``gap``;
    raise ``maxiter`` for a tighter certificate.
      atol: absolute part of the tolerance.
      check_every: iterations between certificate evaluations.
      lam_grid: points of the first lambda grid (grid solvers).
      lam_refine: points of each refinement grid.
      lam_rounds: refinement rounds.
    """

    solver: str = "saddle"
    maxiter: int = 1000
    rtol: float = 1e-3
    atol: float = 0.0
    check_every: int = 25
    lam_grid: int = 50
    lam_refine: int = 12
    lam_rounds: int = 2

    def __post_init__(self):
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        V.check_int("maxiter", self.maxiter, minimum=1)
        V.check_int("check_every", self.check_every, minimum=1)
        V.check_int("lam_grid", self.lam_grid, minimum=2)
        V.check_int("lam_refine", self.lam_refine, minimum=1)
        V.check_int("lam_rounds", self.lam_rounds, minimum=0)
        V.check_positive("rtol", self.rtol, allow_zero=True)
        V.check_positive("atol", self.atol, allow_zero=True)


#: The paper's budget (Appendix 'Experimental Setup'): 100 Frank-Wolfe steps warm-started
#: from the previous round's mu on a 50-point lambda grid.
PAPER_SOLVER = LinearSolverConfig(solver="fw-grid", maxiter=100, rtol=0.0, check_every=100, lam_grid=50,
                            lam_refine=1, lam_rounds=0)


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


def solve_acdec(s: ObservableSpan, f_hat_r, eps2, config: LinearSolverConfig = LinearSolverConfig(),
                warm: WarmStart | None = None, gap_type: str = "delta_f") -> tuple[DecResult, WarmStart]:
    """ac-DEC in observable-span coordinates (``f_hat_r`` = U^T f_hat), warm-startable
    (traceable; no argument checks).

    Returns:
      ``(DecResult, WarmStart)``: the answer and the warm start of the next solve.
    """
    warm = WarmStart.cold(s.features.shape[0], dtype=s.features.dtype) if warm is None else warm
    mu0, omega0 = warm.mu, warm.omega
    dtype = s.features.dtype
    r = s.features @ f_hat_r
    eps2 = jnp.asarray(eps2, dtype)
    if config.solver == "saddle":
        if gap_type != "delta_f":
            raise ValueError("solver 'saddle' solves the exact form for gap_type='delta_f' only; "
                             "use solver='fw-grid' or 'saddle-grid' with gap_type='delta'")
        grads, cert = _exact_problem(s, r, eps2)
        sol = saddle.solve(grads, cert, mu0, omega0, maxiter=config.maxiter, rtol=config.rtol,
                           atol=config.atol, check_every=config.check_every, step0=warm.step)
        mu, lower, iters, omega, step = sol.mu, sol.lower, sol.iterations, sol.omega, sol.step
    else:
        lo, hi = lambda_range(s, r, eps2, mu0, gap_type)

        def solve_at(lam):
            grads, cert, smooth = _offset_problem(s, r, lam, gap_type)
            if config.solver == "fw-grid":
                return frank_wolfe.solve(smooth, cert, mu0, maxiter=config.maxiter, rtol=config.rtol,
                                         atol=config.atol, check_every=config.check_every)
            return saddle.solve(grads, cert, mu0, omega0, maxiter=config.maxiter, rtol=config.rtol,
                                atol=config.atol, check_every=config.check_every)

        grid = lambda_search.grid_search(solve_at, lo, hi, eps2, num=config.lam_grid,
                                         refine=config.lam_refine, rounds=config.lam_rounds)
        sol = grid.index_solution
        mu, omega, lower, iters = sol.mu, sol.omega, grid.lower_bound, grid.iterations
        step = jnp.zeros((), dtype)
    if config.solver == "saddle":
        lam, value = sol.aux  # from the certificate of the returned mu
    else:
        # lambda*(mu) exactly for the returned mu, then psi honestly evaluated there.
        c = feature_norms(mu, s)[0] if gap_type == "delta_f" else delta_norms(mu, s)
        _, lam, _ = best_lambda(r - mu @ r, c, eps2)
        value = _psi_value(r - mu @ r, c, lam, eps2)
    gap = value - lower
    converged = gap <= config.rtol * jnp.abs(value) + config.atol
    finite = jnp.isfinite(value) & jnp.isfinite(lower) & jnp.all(jnp.isfinite(mu)) & jnp.isfinite(lam)
    status = jnp.where(~finite, Status.NONFINITE, jnp.where(converged, Status.OK, Status.MAX_ITER))
    result = DecResult(mu=mu, lam=lam, value=value, lower_bound=lower, gap=gap, iterations=iters,
                       status=status.astype(jnp.int32), omega=omega)
    return result, WarmStart(mu, omega, step)


def solve_offset(s: ObservableSpan, f_hat_r, lam, config: LinearSolverConfig = LinearSolverConfig(),
                 warm: WarmStart | None = None, gap_type: str = "delta_f") -> tuple[DecResult, WarmStart]:
    """Offset DEC min_mu max_b a_b + c_b / (4 lambda) in observable-span coordinates
    (traceable; no argument checks).

    Returns:
      ``(DecResult, WarmStart)``: the answer and the warm start of the next solve.
    """
    warm = WarmStart.cold(s.features.shape[0], dtype=s.features.dtype) if warm is None else warm
    mu0, omega0 = warm.mu, warm.omega
    dtype = s.features.dtype
    r = s.features @ f_hat_r
    lam = jnp.asarray(lam, dtype)
    grads, cert, smooth = _offset_problem(s, r, lam, gap_type)
    if config.solver == "fw-grid":
        sol = frank_wolfe.solve(smooth, cert, mu0, maxiter=config.maxiter, rtol=config.rtol,
                                atol=config.atol, check_every=config.check_every)
        step = jnp.zeros((), dtype)
    else:
        sol = saddle.solve(grads, cert, mu0, omega0, maxiter=config.maxiter, rtol=config.rtol,
                           atol=config.atol, check_every=config.check_every, step0=warm.step)
        step = sol.step
    result = DecResult(mu=sol.mu, lam=lam, value=sol.upper, lower_bound=sol.lower, gap=sol.gap,
                       iterations=sol.iterations, status=sol.status, omega=sol.omega)
    return result, WarmStart(sol.mu, sol.omega, step)


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


def solver_config(solver: str = "saddle", **options) -> LinearSolverConfig:
    """The :class:`LinearSolverConfig` of a solver name with its defaults, updated by ``options``
    (fields of the config); a ValueError lists the valid fields for an unknown one."""
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if solver == "fw-grid":
        base = dataclasses.replace(LinearSolverConfig(), solver="fw-grid", maxiter=1000, check_every=50)
    elif solver == "saddle-grid":
        base = dataclasses.replace(LinearSolverConfig(), solver="saddle-grid", maxiter=1000)
    else:
        base = LinearSolverConfig()
    fields = {f.name for f in dataclasses.fields(LinearSolverConfig)}
    unknown = set(options) - fields
    if unknown:
        raise ValueError(f"unknown solver option(s) {sorted(unknown)}; valid: {sorted(fields - {'solver'})}")
    return dataclasses.replace(base, **options)


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


@functools.partial(jax.jit, static_argnames=("config", "gap_type", "rank"))
def _acdec_arrays(features, grams, f_hat, eps2, warm, *, config, gap_type, rank):
    s = observable_span(features, grams, rank=rank)
    return solve_acdec(s, f_hat @ s.basis, eps2, config, warm, gap_type)[0]


@functools.partial(jax.jit, static_argnames=("config", "gap_type"))
def _acdec_span(s, f_hat, eps2, warm, *, config, gap_type):
    return solve_acdec(s, f_hat @ s.basis, eps2, config, warm, gap_type)[0]


@functools.partial(jax.jit, static_argnames=("config", "gap_type", "rank"))
def _offset_arrays(features, grams, f_hat, lam, warm, *, config, gap_type, rank):
    s = observable_span(features, grams, rank=rank)
    return solve_offset(s, f_hat @ s.basis, lam, config, warm, gap_type)[0]


@functools.partial(jax.jit, static_argnames=("config", "gap_type"))
def _offset_span(s, f_hat, lam, warm, *, config, gap_type):
    return solve_offset(s, f_hat @ s.basis, lam, config, warm, gap_type)[0]


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


def linear_acdec(*problem, solver: str = "saddle", gap_type: str = "delta_f", mu0=None, omega0=None,
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
      solver: ``"saddle"`` (exact form by mirror-prox; default), ``"fw-grid"`` (the paper's
        smoothed Frank-Wolfe on a lambda grid) or ``"saddle-grid"``.
      gap_type: ``"delta_f"`` (the lemma's gaps; default) or ``"delta"`` (grid solvers only).
      mu0: optional (K,) warm starts.
      omega0: see ``mu0``.
      rank: with arrays, the dimension of the observable span if known (static); see
        :func:`~e2d_jax.envs.linear.observable_span`.
      **options: fields of :class:`LinearSolverConfig` (maxiter, rtol, atol, check_every,
        lam_grid, lam_refine, lam_rounds).

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
    if solver == "saddle" and gap_type == "delta":
        raise ValueError("solver='saddle' needs gap_type='delta_f' (the exact form is convex only "
                         "for Delta_f); use solver='fw-grid' or 'saddle-grid'")
    config = solver_config(solver, **options)
    dtype = _dtype(features, grams, f_hat)
    warm = _warm(mu0, omega0, features.shape[0], dtype)
    if model is not None:
        span = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), model.span)
        return _acdec_span(span, jnp.asarray(f_hat, dtype), jnp.asarray(eps2, dtype), warm, config=config,
                           gap_type=gap_type)
    features, grams = jnp.asarray(features, dtype), jnp.asarray(grams, dtype)
    rank = _static_rank(grams, rank)
    return _acdec_arrays(features, grams, jnp.asarray(f_hat, dtype), jnp.asarray(eps2, dtype), warm,
                         config=config, gap_type=gap_type, rank=rank)


def linear_offset_dec(*problem, solver: str = "saddle", gap_type: str = "delta_f", mu0=None, omega0=None,
                      rank: int | None = None, **options) -> DecResult:
    """The offset DEC for a fixed lambda: min_mu max_b <phi_b - phi_mu, f_hat> + ||phi_b||^2_{V(mu)^{-1}} / (4 lambda).

    Called as :func:`linear_acdec` with ``lam`` > 0 in place of ``eps2``:
    ``linear_offset_dec(model, f_hat, lam)`` or ``linear_offset_dec(features, grams, f_hat, lam)``.
    ``solver`` is ``"saddle"`` (mirror-prox on the max over mixtures, default) or ``"fw-grid"``
    (smoothed Frank-Wolfe; no grid is involved for a fixed lambda). The returned ``value`` is
    the objective at ``mu`` (no lambda eps^2 term) and ``lam`` is the given lambda.
    """
    model, features, grams, f_hat, lam = _problem("linear_offset_dec", problem, "lam")
    V.check_positive("lam", lam)
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    config = solver_config(solver, **options)
    dtype = _dtype(features, grams, f_hat)
    warm = _warm(mu0, omega0, features.shape[0], dtype)
    if model is not None:
        span = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), model.span)
        return _offset_span(span, jnp.asarray(f_hat, dtype), jnp.asarray(lam, dtype), warm, config=config,
                            gap_type=gap_type)
    features, grams = jnp.asarray(features, dtype), jnp.asarray(grams, dtype)
    rank = _static_rank(grams, rank)
    return _offset_arrays(features, grams, jnp.asarray(f_hat, dtype), jnp.asarray(lam, dtype), warm,
                          config=config, gap_type=gap_type, rank=rank)
