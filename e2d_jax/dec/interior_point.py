"""A primal-dual interior-point method for the offset DEC of a linear model at a fixed lambda.

The program (the linear-DEC lemma, Section 3.4, at a fixed lambda > 0; see
``e2d_jax.dec.linear``) in observable-span coordinates is

    min_{mu in simplex_K} F(mu),   F(mu) = max_b h_b(mu),
    h_b(mu) = r_b - <mu, r> + c_b(mu) / (4 lambda),   c_b(mu) = x_b^T V(mu)^{-1} x_b,

with r = Phi f_hat, V(mu) = sum_pi mu_pi G_pi + null_proj and x_b = phi_b (gaps Delta_f) or
x_b = phi_b - Phi^T mu (gaps Delta). c_b is the matrix-fractional function (x, V) -> x^T V^{-1}
x, jointly convex, of an affine x and an affine V, so every h_b and F are convex on the open
simplex (where V(mu) is positive definite).

Formulation. The epigraph form with slacks t,

    min_{mu, s, t} s   s.t.   h_b(mu) - s + t_b = 0,  t_b >= 0 (b = 1..K),   mu >= 0,   1^T mu = 1,

with multipliers omega_b >= 0 for the epigraph constraints (the max player's mixture: 1^T
omega = 1 at optimality, from the stationarity in s), z_pi >= 0 for mu >= 0 and nu for the
equality. For a barrier parameter m > 0 the central path solves

    J^T omega - z + nu 1 = 0        (stationarity in mu; J (K, K), row b = grad h_b(mu))
    1^T omega = 1                   (stationarity in s)
    h(mu) - s 1 + t = 0,   1^T mu = 1
    omega_b t_b = m,   z_pi mu_pi = m,

followed by Newton's method with Mehrotra's predictor-corrector (Nocedal and Wright,
Numerical Optimization, 2nd ed., Sections 14.2 and 19.3). The method is infeasible in the
epigraph constraints: a step along the linearisation of the convex h_b overshoots (the true
h_b(mu + dmu) lies above h_b + J dmu), and the next Newton step removes the residual
h - s + t. A feasible variant (t = s - h(mu) at every iterate) is the textbook choice but
stalls here: near an optimum at which V(mu) is almost singular c_b is strongly curved, the
true slacks collapse long before the linearised ones, and the steps shrink to a few percent.

Derivatives (closed forms; ``tests/unit/test_interior_point.py`` checks them against
``jax.hessian``). With w_b = V^{-1} x_b:

    gaps Delta_f:  d c_b / d mu_i = -w_b^T G_i w_b,
                   d^2 c_b / d mu_i d mu_j = 2 (G_i w_b)^T V^{-1} (G_j w_b);
    gaps Delta:    d c_b / d mu_i = -2 phi_i^T w_b - w_b^T G_i w_b,
                   d^2 c_b / d mu_i d mu_j = 2 p_i^T V^{-1} p_j,  p_i = phi_i + G_i w_b.

Newton system. With H = sum_b omega_b grad^2 h_b (K x K, PSD), d = omega / t,
delta = 1^T d and the d-weighted mean gradient g_bar = J^T d / delta, eliminating dt, domega
and dz leaves (dmu, ds, dnu); eliminating ds leaves

    (H + J_c^T diag(d) J_c + diag(z / mu)) dmu + dnu 1 = rhs,   1^T dmu = 1 - 1^T mu,

with J_c = J - 1 g_bar^T (rows centred at the weighted mean: J^T D J - u u^T / delta written
without the cancellation that costs float32 its digits near the optimum). The K x K matrix is
positive definite (diag(z / mu) > 0); it is scaled to unit diagonal (z / mu spans many orders
of magnitude near the optimum) and factored once by Cholesky, the equality is eliminated by a
Schur complement (two solves with the one factor: no LU and no indefinite (K + 2)-system),
and the predictor and the corrector share the factor (with one step of iterative refinement
each). One iteration costs two r x r Cholesky factorisations (V at the new iterate, V at a
second candidate, see the certificate), the K^2 vectors G_i w_b and their V^{-1}-solves,
O(K^3 r) for H, one K x K Cholesky, and the six trial evaluations of the step rule (one
r x r factorisation each). Where every action observes one number (G_i = m_i m_i^T, the
span's observation rows: a linear bandit, a duelling game), G_i w_b = m_i u_ib with
U = M W, so H = (2 / (4 lambda)) (U diag(omega) U^T) o (M V^{-1} M^T), plus the phi_i terms
for gaps Delta (:func:`hessian`): O(K^3 + K^2 r) without the K^2 vectors. Where a few
actions observe several numbers and the others one (the revealing semi-bandit: its span keeps
those actions' Gram matrices G_a apart, ``ObservableSpan.multi_actions``), each adds the
vectors G_a w_b to its row and column of H, O(K^2 r) per such action. The dense form takes
that route above ``MANY_ACTIONS`` actions where r >= ``ROWS_MIN_RANK`` (:func:`uses_rows`).

Step rule. The centring parameter is Mehrotra's sigma = (m_aff / m)^3, raised when the
iterate is badly centred (the rule of Vanderbei's LOQO: sigma >= 0.1 min(0.05 (1 - xi) / xi,
2)^3 with xi = min_i (complementarity product i) / m), and never below ``SIGMA_MIN`` = 0.1,
so that m falls at most tenfold per iteration: the curvature regenerates residuals that the
linear model does not see, and a barrier parameter far below them leaves Newton matrices
whose term J_c^T diag(omega / t) J_c (of size 1 / m) swamps the curvature H, which float32
then loses: without the floor more float32 problems stall above a relative gap of 1e-4, most
at K = 20; with it the median iteration count to 1e-4 rises by one.

All variables take one step length alpha (a common step keeps the multipliers from running
ahead of a primal iterate that the curvature holds back): the largest alpha <= 1 with 1% of the distance to the boundary left
for t, omega, z and 10% for mu (mu_pi shrinks at most tenfold per step, which keeps c_b,
roughly proportional to 1 / mu_pi along poorly covered directions, from jumping by orders of
magnitude within one step), then the longest of the fixed ladder alpha x (1, 0.5, 0.2, 0.05,
0.01, 1e-3) on which the linearisation error of every h_b, h_b(mu + alpha dmu) - h_b(mu) -
alpha J_b dmu >= 0, stays within ``NONLINEARITY`` x its predicted slack t_b + alpha dt_b. The
ladder is evaluated in one batch (no data-dependent loop). A step that is not finite or has
no admissible ladder point is rejected, and the next Newton matrix gets a larger ridge.

Certificate (the iteration is never trusted). For any W = (w_1, ..., w_K) and any b,
c_b(mu) = max_y 2 x_b^T y - y^T V(mu) y >= 2 x_b^T w_b - w_b^T V(mu) w_b, which is affine in
mu on the simplex, so h_b(mu) >= (A mu)_b with the K x K payoff

    A[b, j] = r_b - r_j + (2 (x_b)_j^T w_b - w_b^T (G_j + null_proj) w_b) / (4 lambda),

(x_b)_j = phi_b (Delta_f) or phi_b - phi_j (Delta), with equality at w_b = V(mu)^{-1} x_b.
Hence, for any mixture omega_n,

    lower = min_j (omega_n^T A)_j  <=  min_mu max_b (A mu)_b  <=  min_mu F(mu)

(a matrix game's value is below the convex program's), and upper = max_b (A mu)_b = F(mu)
for W = V(mu)^{-1} X. The bound is the linearisation bound of ``e2d_jax.dec.linear``'s
offset certificate, L(mu, omega_n) + min_pi g_pi - <g, mu> with g = J^T omega_n (equal in
exact arithmetic), written in a form whose validity does not depend on W being the exact
solve: in float32 the linearisation form loses cond(V) x eps relative (large gradients
cancelling near an almost singular V) and can exceed the true optimum, this one cannot,
beyond the rounding of a few dot products. The upper bound needs the opposite care, since
the minorant understates F(mu) when W is inexact: W is computed with one step of iterative
refinement whose residual rho_b = x_b - sum_pi mu_pi G_pi w_b - null_proj w_b is formed term
by term (not through the rounded V); the minorant's shortfall is exactly
rho_b^T V^{-1} rho_b, estimated with one more solve and added back (so upper is F(mu) to a
few ulps of its terms rather than to cond(V) x eps), and where it exceeds 1e-4 x c_b (V(mu)
singular to working precision along x_b) the iterate gets no upper bound at all. Two
more facts give the bound a floor and a second candidate: F >= 0 (max_b r_b - <mu, r> >= 0
and c_b >= 0), so lower >= 0; and at each iterate mu, the mixture with the entries below
1e-3 x max(mu) set to 0 is evaluated too (when its V is not singular to working precision),
which certifies an optimum at a vertex or a face exactly (for gaps Delta, F* = 0 at the
greedy action whenever it is informative enough: the relative gap certifies nothing else).
The best upper bound (with its mu and omega) and the best lower bound over the iterations
are kept, so the returned gap is certified and monotone.

Many actions. Both pieces above grow faster than K: the Hessian costs K^3 r and the Newton
matrix is K x K. They have structure: grad h_b(mu) = -r - (w_b^T G_i w_b)_i / (4 lambda)
(plus -2 phi_i^T w_b / (4 lambda) for gaps Delta) is linear in the rows l_i = (r_i, [phi_i,]
vech G_i) of a (K, p) basis L, p = 1 + r (r + 1) / 2 (+ r), and so is every second
derivative, so J = B L^T and H = L C2 L^T with small factors (:func:`basis`,
:func:`_jacobian_rows`, :func:`hessian_core`). From K >= max(``FACTORED_MIN_ACTIONS``, 2 p)
(:func:`use_factored`) the Newton matrix diag(z / mu) + L C L^T is solved by the
Sherman-Morrison-Woodbury identity (one p x p LU factorisation) with
``FACTORED_REFINEMENTS`` steps of iterative refinement against the exact product, and the
pieces are evaluated without K x K arrays (:func:`evaluate_factored`: the refinement residual
is formed term by term over the ``TERMWISE_ACTIONS`` heaviest actions of mu and through the
sum of the others' Gram matrices; where every action observes one number, G_i = m_i m_i^T,
the terms go through the observation rows m_i of the span, an r-vector per action instead of
an r x r matrix): O(K p^2) an iteration. The sums over all K Gram matrices (V(mu), the basis's
vech G_i, the game values' <G_i, P>) are the span's own (``e2d_jax.envs.linear.gram_sum`` and
``gram_inner``), through the observation rows once the (K, r, r) array outgrows the cache. The
two forms agree to rounding (``tests/unit/test_interior_point.py``).

Above ``MANY_ACTIONS`` actions four more rules hold in the plain method, in both forms (a
working set's restricted program, certified on all actions by its own bounds, runs without
them). The optimum then spreads over many actions (at small lambda the program is close to a
G-optimal design, whose support has up to r (r + 1) / 2 + 1 actions), and float32 loses the
multipliers omega first: at K = 1,000 the lower bound from the normalised omega stalls a few
1e-3 below the optimum. So each iteration also solves the certificate's matrix game for the
max player on a few rows and columns (:func:`restricted_lower`: as many of the largest h_b as
an optimal mixture may need, :func:`support_bound`, and twice as many of the heaviest actions
of mu; a larger game costs float32 its accuracy, since the payoff's spread then squeezes the
relevant entries into a few ulps, except where the actions outnumber that bound hundreds of
times and the largest h_b crowd around a few of the optimum's constraints: there the game
takes 64 rows, :func:`game_rows`) by the matrix-game interior-point method of
:mod:`e2d_jax.dec.matrix_game`, and takes min_j (omega^T A)_j over all K actions at its
mixture: valid whatever that mixture is, and within ~1e-4 of the optimum once mu is. Second,
the same game's min player mixture (zero off its columns) is the second candidate for the
upper bound in place of the purified iterate: on some problems the iterate's objective stalls
1e-3 to 4e-3 above the optimum (float32 near an almost singular V(mu)), while the game's
mixture, which minimises the certificate's affine minorant over the heaviest actions, lands
within the tolerance; its F is evaluated exactly (:func:`checked_objective`), so it is valid
whatever the game did. With it, the purified iterate as a third candidate changes neither the
iterations nor the certified share of E2D's rounds, and costs an evaluation. Third, near the
optimum the Newton matrix's conditioning (z / mu spans many orders of magnitude) can make
float32 return a direction along which every variable hits its bound at once (longest step
~1e-8): such a direction, with a longest step below ``SHORT_STEP``, is rejected like a
non-finite one, and the next Newton matrix gets a ridge. A short step is taken on the fourth
try: a direction still short under three growing ridges is the problem's own (a spread
optimum reached through few-action boundaries), and four rejections in a row would halt the
method with the gap it has (a fifth of the value on a linear bandit with d = 3 and K = 300).
Fourth, the Newton matrix is factored with a relative ridge of at least ``MANY_RIDGE``
(1e-5; in the factored form on the diagonal of the Woodbury identity's preconditioner), and
iterative refinement against the exact matrix removes its bias from the direction. Without
it the iterate's objective stalls a few 1e-3 above the optimum for several float32 iterations,
until rejected steps have grown the ridge: on 64 problems of E2D's rounds (linear bandit,
d = 10, K = 1,000, f_hat around f*) the slowest took 20 iterations to 1e-3 without the floor
and 13 with it.

Floating point. "Certified" is up to the rounding of these evaluations: upper and lower are
each computed to a few ulps of the terms that cancel in them (r_b - r_j and c_b / (4 lambda)
for the certificate's payoff), which is a large relative error when the optimum is much
smaller than those terms. In float32, on problems whose optimum is ~1/200 of the spread of
the rewards (large lambda, a noisy f_hat), the evaluation error reaches a few 1e-4 relative,
so a float32 status OK at rtol = 1e-4 then means "within 1e-4 up to that rounding".
``benchmarks/interior_point.py`` reports the true (float64) excess of float32 answers.

Loop. By default a ``lax.while_loop`` that stops once the certified gap is within tolerance,
after ``maxiter`` iterations, or after 4 rejected steps in a row; under ``vmap`` it runs until
the slowest lane stops. A problem that has reached its tolerance is frozen (its state no
longer changes), so this early stop and the fixed loop (``early_stop=False``: a
``lax.fori_loop`` of exactly ``maxiter`` iterations, with no predicate to evaluate) return the
same answer.

Warm starts. ``mu0`` and ``omega0`` may be given (e.g. the previous round's answer); they are
mixed with ``WARM_MIX`` of the uniform distribution (an interior-point method must start in
the interior, and away from the boundary, or its first steps are short), and the slacks and
the multipliers z, nu are rebuilt around them as for a cold start. On slowly changing
problems (f_hat moving by steps of norm 0.01, ``benchmarks/interior_point.py``) a warm start
cuts the iterations to 1e-4 from 9 to 6 in the median (p90 11 to 8): a saving with the early
stop (the default); the fixed loop runs its budget either way, and the worst case (the
iterations a cold start may need) is unchanged. On many actions the previous round's answer
sits near the boundary of the few actions it holds, and when the optimum moves to a spread of
others the Newton steps from there stall (short steps, rejected); so
:class:`~e2d_jax.dec.solvers.InteriorPoint` starts its plain method on more than
``MANY_ACTIONS`` actions from the uniform mixture.

Accuracy (float32, 25 iterations, rtol 1e-4, ``benchmarks/interior_point.py``, random
problems of shapes (K, d) in {(3, 2), (10, 3), (10, 30), (20, 5)}, lambda in [0.1, 100]):
97.5-100% certified at 1e-4, in 7-10 iterations in the median and at most 14 where K <= 10;
the certified lower bound is within 6.5e-5 of the optimum at the 90th percentile over a
lambda grid in [1e-2, 1e3] (the misses are at lambda >= 10, see 'Floating point').

References:
  Kirschner, Bakhtiari, Chandak, Tkachuk and Szepesvari (2023), Regret Minimization via
  Saddle Point Optimization, Section 3.4 (the linear-DEC lemma).
  Mehrotra (1992), On the implementation of a primal-dual interior point method.
  Vanderbei and Shanno (1999), An interior-point algorithm for nonconvex nonlinear
  programming (LOQO's centring rule).
  Nocedal and Wright (2006), Numerical Optimization, Chapters 14 and 19.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax import _linalg
from e2d_jax.dec import loop, matrix_game
from e2d_jax.envs.linear import ObservableSpan, gram_inner, gram_sum, through_rows
from e2d_jax.types import GAP_TYPES

#: Default budget: Newton iterations of the fixed loop.
MAXITER = 25
#: Fraction of the distance to the boundary a step may cover, for t, omega and z.
BOUNDARY_FRACTION = 0.99
#: The same for mu (see the module docstring, 'Step rule').
SUPPORT_FRACTION = 0.9
#: Trial steps, as fractions of the longest step allowed by the boundary.
STEP_LADDER = (1.0, 0.5, 0.2, 0.05, 0.01, 1e-3)
#: Largest accepted linearisation error of h_b along a step, in units of its predicted slack.
NONLINEARITY = 10.0
#: Entries of mu below this fraction of its largest are set to 0 in the purified candidate.
PURIFY = 1e-3
#: Largest accepted estimated shortfall of the minorant, relative to c_b (see :func:`evaluate`).
SHORTFALL = 1e-4
#: Share of the uniform distribution mixed into a warm start.
WARM_MIX = 0.1
#: Smallest centring parameter: the barrier parameter falls at most tenfold per iteration.
SIGMA_MIN = 0.1
#: The factored form (see 'Many actions') is used from this many actions on, and where K is at
#: least twice the number of its columns p.
FACTORED_MIN_ACTIONS = 64
#: The heaviest actions of mu over which the factored form's residuals are formed term by term.
TERMWISE_ACTIONS = 32
#: Steps of iterative refinement of the factored form's Woodbury solve.
FACTORED_REFINEMENTS = 2
#: Above this many actions every iteration also solves the restricted max player's game for
#: a lower bound (:func:`restricted_lower`) and rejects collapsed directions (``SHORT_STEP``);
#: up to it the method is the plain one of the sections above.
MANY_ACTIONS = 32
#: The restricted game's columns (the heaviest actions of mu) per row (its rows are the
#: :func:`support_bound` constraints with the largest h_b), and its interior-point iterations.
GAME_COLUMNS_PER_ROW = 2
GAME_STEPS = 15
#: Where the actions outnumber the :func:`support_bound` ``GAME_WIDE_RATIO`` times, the
#: restricted game takes at least ``GAME_MIN_ROWS`` rows: among so many actions the largest h_b
#: at an inexact mu crowd around a few of the optimum's constraints, and the game's bound then
#: stalls near 1e-3 below the optimum in float32.
GAME_WIDE_RATIO = 200
GAME_MIN_ROWS = 64
#: Above ``MANY_ACTIONS``, a direction whose longest step inside the boundary fractions is
#: shorter than this is rejected like a non-finite one (the next Newton matrix gets a ridge),
#: up to three times in a row: the fourth short direction is taken.
SHORT_STEP = 0.05
#: Smallest rank of the span at which the dense form's Hessian goes through the observation
#: rows (:func:`uses_rows`).
ROWS_MIN_RANK = 6
#: Above ``MANY_ACTIONS``, the smallest relative ridge of the Newton matrix's factorisation
#: (iterative refinement against the exact matrix removes its bias from the direction).
MANY_RIDGE = 1e-5


class Pieces(NamedTuple):
    """The program evaluated at one mu (see :func:`evaluate`)."""

    h: jax.Array  # (K,) h_b(mu)
    jac: jax.Array  # (K, K) row b = grad h_b(mu)
    payoff: jax.Array  # (K, K) A[b, j] of the certificate (module docstring)
    p: jax.Array | None  # (K_b, K_i, r) p_{b,i}, with grad^2 c_b = 2 P_b^T V^{-1} P_b; None with ``one``
    low: jax.Array  # (r, r) Cholesky factor of V(mu)
    upper: jax.Array  # () F(mu) = max_b h_b, or +inf where it cannot be evaluated accurately
    one: RankOne | None = None  # the Hessian's factors where the dense form goes through the rows (:func:`uses_rows`)


class RankOne(NamedTuple):
    """The Hessian's factors where every Gram matrix is an outer product G_i = m_i m_i^T but
    those of a few multi actions a (:func:`hessian`): p_{b,i} = m_i u_ib + [i = a] G_a w_b
    (+ phi_i for gaps Delta), u_ib = m_i^T w_b (m_a = 0)."""

    u: jax.Array  # (K_i, K_b) m_i^T w_b
    mvm: jax.Array  # (K, K) m_i^T V^{-1} m_j
    mvf: jax.Array | None  # (K, K) m_i^T V^{-1} phi_j (gaps Delta; None for Delta_f)
    fvf: jax.Array | None  # (K, K) phi_i^T V^{-1} phi_j (gaps Delta; None for Delta_f)
    multi: jax.Array | None = None  # (J,) the multi actions a (``ObservableSpan.multi_actions``)
    e: jax.Array | None = None  # (J, r, K_b) e_ba = G_a w_b
    ve: jax.Array | None = None  # (J, r, K_b) V^{-1} e_ba
    mve: jax.Array | None = None  # (J, K_i, K_b) m_i^T V^{-1} e_ba
    fve: jax.Array | None = None  # (J, K_i, K_b) phi_i^T V^{-1} e_ba (gaps Delta; else None)


class InteriorPointState(NamedTuple):
    """The iterate and the best certificate so far (every field keeps its shape and dtype)."""

    mu: jax.Array  # (K,) float, primal mixture, > 0, 1^T mu = 1
    s: jax.Array  # () float, epigraph variable
    t: jax.Array  # (K,) float, slacks of the epigraph constraints, > 0
    omega: jax.Array  # (K,) float, multipliers of the epigraph constraints, > 0
    z: jax.Array  # (K,) float, multipliers of mu >= 0, > 0
    nu: jax.Array  # () float, multiplier of 1^T mu = 1
    pieces: Pieces | FactoredPieces  # the program evaluated at mu
    best_mu: jax.Array  # (K,) float, mu with the lowest upper bound so far
    best_omega: jax.Array  # (K,) float, omega / 1^T omega at best_mu
    upper: jax.Array  # () float, F(best_mu)
    lower: jax.Array  # () float, highest certified lower bound so far
    ridge: jax.Array  # () float, relative ridge of the Newton matrix after rejected steps (0 until one fails)
    failures: jax.Array  # () int32, consecutive rejected steps
    iter_num: jax.Array  # () int32, Newton iterations taken (frozen once converged)


class InteriorPointSolution(NamedTuple):
    """The answer with its certificate (the fields of ``saddle.SaddleSolution`` it shares).

    Attributes:
      mu: (K,) the mixture with the lowest certified objective seen.
      omega: (K,) the max player's mixture (normalised multipliers) paired with ``mu``.
      upper: () F(mu), the exact objective of ``mu``.
      lower: () a certified lower bound on min F.
      gap: () upper - lower (>= 0 up to rounding).
      iterations: () int32 Newton iterations taken until the tolerance (or ``maxiter``).
      status: () int32 :class:`~e2d_jax.types.Status`: OK (gap <= rtol |upper| + atol),
        MAX_ITER, or NONFINITE (a non-finite certificate, e.g. NaN inputs, or no iterate whose
        objective could be evaluated: do not trust the answer).
    """

    mu: jax.Array
    omega: jax.Array
    upper: jax.Array
    lower: jax.Array
    gap: jax.Array
    iterations: jax.Array
    status: jax.Array


# --------------------------------------------------------------------------------------
# The program's pieces


def design_matrix(mu, s: ObservableSpan):
    """V(mu) = sum_pi mu_pi G_pi + null_proj, (r, r)."""
    return gram_sum(mu, s) + s.null_proj


def directions(mu, s: ObservableSpan, gap_type: str = "delta_f"):
    """x_b as rows, (K, r): phi_b (Delta_f) or phi_b - Phi^T mu (Delta)."""
    return s.features if gap_type == "delta_f" else s.features - mu @ s.features


def _refined_weights(mu, s: ObservableSpan, low, x):
    """W = V(mu)^{-1} X^T (r, K), G_pi w_b (K_b, K_pi, r), and the estimated shortfall of the
    minorant 2 x_b^T w_b - w_b^T V w_b below c_b (K,).

    One refinement step whose residual x_b - sum_pi mu_pi G_pi w_b - null_proj w_b is formed
    term by term, not through the rounded V. The shortfall is exactly rho_b^T V^{-1} rho_b
    for the final residual rho_b; it is estimated with one more solve.
    """
    def residual(w, gw):
        return x.T - jnp.einsum("p,bpi->ib", mu, gw) - s.null_proj @ w

    w = _linalg.cholesky_solve(low, x.T)
    w = w + _linalg.cholesky_solve(low, residual(w, jnp.einsum("pij,jb->bpi", s.grams, w)))
    gw = jnp.einsum("pij,jb->bpi", s.grams, w)
    rho = residual(w, gw)
    shortfall = jnp.einsum("ib,ib->b", rho, _linalg.cholesky_solve(low, rho))
    return w, gw, shortfall


def _multi_times(s: ObservableSpan, w):
    """G_a w_b for the span's multi actions a, (J, r, K_b), or None where it has none."""
    return None if s.multi_actions is None else jnp.einsum("jkl,lb->jkb", s.multi_grams, w)


def _multi_weights(mu, s: ObservableSpan):
    """mu at the span's multi actions (0 for one a working set's span does not hold: its index
    is then out of range, :meth:`~e2d_jax.envs.linear.ObservableSpan.take`)."""
    return mu.at[s.multi_actions].get(mode="fill", fill_value=0.0)


def _refined_weights_rows(mu, s: ObservableSpan, low, x):
    """:func:`_refined_weights` where every Gram matrix is an outer product G_pi = m_pi m_pi^T
    (``s.rows``) but those of a few multi actions a: G_pi w_b = m_pi u_pi,b (+ G_a w_b) with
    U = M W (K_pi, K_b), so the residual is x_b - M^T (mu * U)_b - sum_a mu_a G_a w_b - null_proj
    w_b, O(K^2 r) instead of O(K^2 r^2). Returns W, U, the G_a w_b (or None) and the shortfall."""
    def residual(w, u, e):
        rest = x.T - s.rows.T @ (mu[:, None] * u) - s.null_proj @ w
        return rest if e is None else rest - jnp.einsum("j,jkb->kb", _multi_weights(mu, s), e)

    w = _linalg.cholesky_solve(low, x.T)
    w = w + _linalg.cholesky_solve(low, residual(w, s.rows @ w, _multi_times(s, w)))
    u, e = s.rows @ w, _multi_times(s, w)
    rho = residual(w, u, e)
    shortfall = jnp.einsum("ib,ib->b", rho, _linalg.cholesky_solve(low, rho))
    return w, u, e, shortfall


def _payoff(s: ObservableSpan, r, lam, w, wgw, gap_type, mu):
    """A (K_b, K_j) of the certificate from the weights w and wgw[b, pi] = w_b^T G_pi w_b, the
    piece of the Jacobian it shares (phi_pi^T w_b), and the minorant's
    c_b = 2 x_b^T w_b - w_b^T V(mu) w_b (K,)."""
    wnw = jnp.einsum("ib,ij,jb->b", w, s.null_proj, w)
    fw = (s.features @ w).T  # (b, pi): phi_pi^T w_b
    if gap_type == "delta_f":
        xw = jnp.broadcast_to(jnp.diagonal(fw)[:, None], fw.shape)  # phi_b^T w_b
    else:
        xw = jnp.diagonal(fw)[:, None] - fw  # (phi_b - phi_j)^T w_b
    quad = 2.0 * xw - wgw - wnw[:, None]
    payoff = r[:, None] - r[None, :] + quad / (4.0 * lam)
    return payoff, fw, quad @ mu


def _rank_one(s: ObservableSpan, low, u, e, gap_type: str) -> RankOne:
    """The Hessian's factors of :class:`RankOne` at the factor ``low`` of V(mu)."""
    mvm = s.rows @ _linalg.cholesky_solve(low, s.rows.T)
    multi = {}
    if e is not None:
        j, rr, kb = e.shape
        ve = _linalg.cholesky_solve(low, e.transpose(1, 0, 2).reshape(rr, j * kb)).reshape(rr, j, kb).transpose(1, 0, 2)
        multi = dict(multi=s.multi_actions, e=e, ve=ve, mve=jnp.einsum("ir,jrb->jib", s.rows, ve),
                     fve=None if gap_type == "delta_f" else jnp.einsum("ir,jrb->jib", s.features, ve))
    if gap_type == "delta_f":
        return RankOne(u=u, mvm=mvm, mvf=None, fvf=None, **multi)
    vf = _linalg.cholesky_solve(low, s.features.T)  # (r, K) V^{-1} phi_j
    return RankOne(u=u, mvm=mvm, mvf=s.rows @ vf, fvf=s.features @ vf, **multi)


def uses_rows(s: ObservableSpan) -> bool:
    """Whether the dense form goes through the observation rows (static): where every action
    observes one number but a few multi actions (the revealing semi-bandit's), on more than
    ``MANY_ACTIONS`` actions and a span of rank at least ``ROWS_MIN_RANK`` (at smaller r XLA's
    CPU products with an inner dimension of r make the Gram form the faster one)."""
    k, rank = s.features.shape
    return s.rows is not None and k > MANY_ACTIONS and rank >= ROWS_MIN_RANK


def evaluate(mu, s: ObservableSpan, r, lam, gap_type: str = "delta_f") -> Pieces:
    """h, its Jacobian, the certificate's payoff matrix and what the Hessian needs, at mu.

    h_b = (A mu)_b + shortfall_b / (4 lambda), the minorant plus its estimated shortfall
    (equal to r_b - <mu, r> + c_b / (4 lambda), see the module docstring). ``upper`` is
    max_b h_b, or +inf where the solve is too inaccurate to evaluate F (a shortfall above
    ``SHORTFALL`` x c_b: V(mu) is singular to working precision along some x_b).
    """
    low = _linalg.psd_cholesky(design_matrix(mu, s))
    x = directions(mu, s, gap_type)
    if uses_rows(s):
        w, u, e, shortfall = _refined_weights_rows(mu, s, low, x)
        wgw = (u ** 2).T  # w_b^T G_pi w_b = (m_pi^T w_b)^2 (+ w_b^T G_a w_b)
        if e is not None:
            wgw = wgw.at[:, s.multi_actions].add(jnp.einsum("jkb,kb->bj", e, w), mode="drop")
        p, one = None, _rank_one(s, low, u, e, gap_type)
    else:
        w, gw, shortfall = _refined_weights(mu, s, low, x)
        wgw = jnp.einsum("bpi,ib->bp", gw, w)  # w_b^T G_pi w_b
        p, one = (gw if gap_type == "delta_f" else gw + s.features[None, :, :]), None
    payoff, fw, c = _payoff(s, r, lam, w, wgw, gap_type, mu)
    dc = -wgw if gap_type == "delta_f" else -wgw - 2.0 * fw
    jac = -r[None, :] + dc / (4.0 * lam)
    h = payoff @ mu + shortfall / (4.0 * lam)
    accurate = jnp.all(shortfall <= SHORTFALL * (c + shortfall)) & jnp.all(jnp.isfinite(h))
    return Pieces(h=h, jac=jac, payoff=payoff, p=p, low=low,
                  upper=jnp.where(accurate, jnp.max(h), jnp.inf), one=one)


def objective(mu, s: ObservableSpan, r, lam, gap_type: str = "delta_f"):
    """F(mu) = max_b h_b(mu), evaluated as the certificate's upper bound (+inf where the
    solve is too inaccurate, see :func:`evaluate`)."""
    return evaluate(mu, s, r, lam, gap_type).upper


def _constraints_fast(mu, s: ObservableSpan, r, lam, gap_type):
    """h(mu) (K,) by one plain solve (the step rule's trial points, where precision is not
    needed)."""
    x = directions(mu, s, gap_type)
    w = _linalg.psd_solve_wide(design_matrix(mu, s), x.T)
    return r - mu @ r + jnp.einsum("ik,ki->k", w, x) / (4.0 * lam)


def hessian(weights, pieces: Pieces, lam):
    """sum_b weights_b grad^2 h_b = (2 / (4 lambda)) sum_b weights_b P_b^T V^{-1} P_b, (K, K).

    Where every action observes one number (``pieces.one``), p_{b,i} = m_i u_ib (+ phi_i for
    gaps Delta), so the sum is (U diag(weights) U^T) o (M V^{-1} M^T) (+ the phi terms), O(K^3)
    instead of O(K^3 r). A multi action a adds e_ba = G_a w_b to p_{b,a}: its row and column
    gain t_aj = sum_b weights_b e_ba^T V^{-1} (m_j u_jb (+ phi_j)), and the entries between
    multi actions sum_b weights_b e_ba^T V^{-1} e_ba', O(K^2 r) each."""
    if pieces.one is not None:
        one = pieces.one
        hess = ((one.u * weights[None, :]) @ one.u.T) * one.mvm
        if one.fvf is not None:
            a = one.u @ weights  # sum_b weights_b u_ib
            hess = hess + jnp.sum(weights) * one.fvf + a[:, None] * one.mvf + a[None, :] * one.mvf.T
        if one.multi is not None:
            t = jnp.einsum("ib,jib->ji", one.u * weights[None, :], one.mve)
            if one.fve is not None:
                t = t + one.fve @ weights
            # (a working set's span may not hold a multi action: its index is out of range, dropped)
            hess = hess.at[one.multi, :].add(t, mode="drop").at[:, one.multi].add(t.T, mode="drop")
            hess = hess.at[one.multi[:, None], one.multi[None, :]].add(
                jnp.einsum("jrb,lrb,b->jl", one.ve, one.e, weights), mode="drop")
        hess = hess * (2.0 / (4.0 * lam))
        return 0.5 * (hess + hess.T)
    p = pieces.p
    k, _, rr = p.shape
    vp = _linalg.cholesky_solve(pieces.low, p.reshape(k * k, rr).T).reshape(rr, k, k)  # V^{-1} p_{b,j}
    hess = jnp.einsum("b,bir,rbj->ij", weights, p, vp) * (2.0 / (4.0 * lam))
    return 0.5 * (hess + hess.T)


def certificate(mu, omega, pieces: Pieces):
    """``(upper, lower, omega_n)``: upper = F(mu) (``pieces.upper``, see :func:`evaluate`) and
    lower = min_j (omega_n^T A)_j <= min F, for omega_n = omega / 1^T omega (module docstring)."""
    om = omega / jnp.sum(omega)
    return pieces.upper, jnp.min(om @ pieces.payoff), om


def purified(mu, s: ObservableSpan, r, lam, gap_type: str = "delta_f", factored: bool = False):
    """``(mu_p, F(mu_p))`` for mu_p = mu with the entries below ``PURIFY`` x max(mu) set to 0
    (renormalised); F is +inf when V(mu_p) is singular to working precision
    (:func:`checked_objective`), where the floored solve would understate it."""
    mu_p = jnp.where(mu >= PURIFY * jnp.max(mu), mu, 0.0)
    mu_p = mu_p / jnp.sum(mu_p)
    return mu_p, checked_objective(mu_p, s, r, lam, gap_type, factored)


def checked_objective(mu, s: ObservableSpan, r, lam, gap_type: str = "delta_f", factored: bool = False):
    """F(mu) for a candidate mixture mu on the closed simplex (some entries 0), or +inf where
    V(mu) is singular to working precision (a pivot of its Cholesky factor below sqrt(eps) x
    its largest diagonal entry, or a shortfall as in :func:`evaluate`)."""
    v = design_matrix(mu, s)
    eps = jnp.finfo(mu.dtype).eps
    regular = jnp.min(jnp.diagonal(_linalg.psd_cholesky(v)) ** 2) >= jnp.sqrt(eps) * jnp.max(jnp.diagonal(v))
    upper = evaluate_factored(mu, s, r, lam, gap_type).upper if factored else objective(mu, s, r, lam, gap_type)
    return jnp.where(regular, upper, jnp.inf)


# --------------------------------------------------------------------------------------
# Many actions: the factored form


class FactoredPieces(NamedTuple):
    """The program evaluated at one mu in the factored form (see :func:`evaluate_factored`):
    the Jacobian is ``b @ basis(s, r, gap_type).T``, no K x K array is formed."""

    h: jax.Array  # (K,) h_b(mu)
    b: jax.Array  # (K, p) the Jacobian's row factors
    w: jax.Array  # (r, K) W = V(mu)^{-1} X^T (refined)
    low: jax.Array  # (r, r) Cholesky factor of V(mu)
    upper: jax.Array  # () F(mu), or +inf where it cannot be evaluated accurately


def _pairs(rank: int):
    """Index pairs (a, c), a <= c, of the upper triangle of an r x r matrix."""
    a, c = np.triu_indices(rank)
    return jnp.asarray(a), jnp.asarray(c)


def num_columns(rank: int, gap_type: str) -> int:
    """p, the columns of the factored form's basis: 1 + r (r + 1) / 2, plus r for gaps Delta."""
    return 1 + rank * (rank + 1) // 2 + (rank if gap_type == "delta" else 0)


def use_factored(num_actions: int, rank: int, gap_type: str) -> bool:
    """Whether the factored form is the cheaper one (static: shapes only)."""
    return num_actions >= max(FACTORED_MIN_ACTIONS, 2 * num_columns(rank, gap_type))


def basis(s: ObservableSpan, r, gap_type: str):
    """The (K, p) basis L of the factored form: rows l_i = (r_i, [phi_i,] vech G_i)."""
    k, rank = s.features.shape
    a, c = _pairs(rank)
    if through_rows(s, k):  # vech(m_i m_i^T), plus the multi actions' Gram matrices
        vech = s.rows[:, a] * s.rows[:, c]
        if s.multi_actions is not None:
            vech = vech.at[s.multi_actions].add(s.multi_grams[:, a, c], mode="drop")
    else:
        vech = s.grams[:, a, c]
    cols = [r[:, None]] + ([s.features] if gap_type == "delta" else []) + [vech]
    return jnp.concatenate(cols, axis=1)


def _jacobian_rows(w, lam, gap_type: str):
    """The (K, p) factors B with Jacobian = B L^T: grad h_b = -r - (2 phi^T w_b [Delta] + w_b^T G w_b) / (4 lambda)."""
    rank, k = w.shape
    a, c = _pairs(rank)
    coef = jnp.where(a == c, 1.0, 2.0).astype(w.dtype)
    cols = [-jnp.ones((k, 1), w.dtype)]
    if gap_type == "delta":
        cols.append(-(2.0 / (4.0 * lam)) * w.T)
    cols.append(-(coef / (4.0 * lam)) * w[a].T * w[c].T)
    return jnp.concatenate(cols, axis=1)


def _split_design(mu, s: ObservableSpan, m: int):
    """The m heaviest actions of mu (their weights, and their observation rows (m, r) where
    every action observes one number, else their Gram matrices (m, r, r)) and the sum of the
    others' Gram matrices weighted by mu."""
    _, top = lax.top_k(mu, m)
    rest = gram_sum(mu.at[top].set(0.0), s)
    return mu[top], (s.rows if s.one_number else s.grams)[top], rest


def evaluate_factored(mu, s: ObservableSpan, r, lam, gap_type: str = "delta_f") -> FactoredPieces:
    """:func:`evaluate` in O(K r^2 m) without K x K arrays: the residual of the refined solve
    and the minorant's w_b^T V w_b are formed term by term over the ``TERMWISE_ACTIONS``
    heaviest actions of mu and through the sum of the others' Gram matrices (all of them
    term by term where K is at most that)."""
    k, rank = s.features.shape
    m = min(k, TERMWISE_ACTIONS)
    mu_top, top, rest = _split_design(mu, s, m)
    low = _linalg.psd_cholesky(design_matrix(mu, s))
    x = directions(mu, s, gap_type)

    def applied(w):  # sum_p mu_p G_p w + null_proj w (term by term over the top), and sum_p mu_p w_b^T G_p w_b there
        if not s.one_number:
            gw = (top.reshape(m * rank, rank) @ w).reshape(m, rank, k)
            return jnp.einsum("p,pib->ib", mu_top, gw) + rest @ w + s.null_proj @ w, \
                lambda: jnp.einsum("p,pib,ib->b", mu_top, gw, w)
        gw = top @ w  # (m, K): m_p^T w_b, so that G_p w_b = m_p (m_p^T w_b)
        return top.T @ (mu_top[:, None] * gw) + rest @ w + s.null_proj @ w, lambda: mu_top @ gw ** 2

    w = _linalg.cholesky_solve(low, x.T)
    w = w + _linalg.cholesky_solve(low, x.T - applied(w)[0])
    vw, top_quad = applied(w)
    rho = x.T - vw
    shortfall = jnp.einsum("ib,ib->b", rho, _linalg.cholesky_solve(low, rho))
    total = jnp.sum(mu)
    wvw = top_quad() + jnp.einsum("ib,ij,jb->b", w, rest, w) \
        + total * jnp.einsum("ib,ij,jb->b", w, s.null_proj, w)
    if gap_type == "delta_f":
        xw = total * jnp.einsum("bi,ib->b", s.features, w)
    else:  # sum_j mu_j (phi_b - phi_j)^T w_b
        xw = total * jnp.einsum("bi,ib->b", s.features, w) - (mu @ s.features) @ w
    c = 2.0 * xw - wvw
    h = total * r - mu @ r + c / (4.0 * lam) + shortfall / (4.0 * lam)
    accurate = jnp.all(shortfall <= SHORTFALL * (c + shortfall)) & jnp.all(jnp.isfinite(h))
    return FactoredPieces(h=h, b=_jacobian_rows(w, lam, gap_type), w=w, low=low,
                          upper=jnp.where(accurate, jnp.max(h), jnp.inf))


def game_values(om, w, s: ObservableSpan, r, lam, gap_type: str):
    """(omega^T A)_j over all K actions j for a mixture omega (K,), A's minorants at the
    weights w (r, K): the certificate's matrix-game bound is their minimum, in O(K r^2)."""
    p = jnp.einsum("b,ib,jb->ij", om, w, w)  # sum_b omega_b w_b w_b^T
    fw = jnp.einsum("bi,ib->b", s.features, w)
    if gap_type == "delta_f":
        cross = 2.0 * (om @ fw) * jnp.ones_like(r)
    else:  # sum_b omega_b (phi_b - phi_j)^T w_b
        cross = 2.0 * (om @ fw - s.features @ (w @ om))
    quad = gram_inner(s, p) + jnp.sum(s.null_proj * p)
    return om @ r - r + (cross - quad) / (4.0 * lam)


def hessian_core(weights, w, low, lam, gap_type: str):
    """C2 (p, p) with sum_b weights_b grad^2 h_b = L C2 L^T: with p_{b,i} = R_b l_i (R_b maps
    (r_i, phi_i, vech G_i) to [phi_i +] G_i w_b), C2 = (2 / (4 lambda)) sum_b weights_b
    R_b^T V^{-1} R_b, in closed form from S = sum_b weights_b w_b w_b^T and V^{-1}."""
    rank = w.shape[0]
    dtype = w.dtype
    vinv = _linalg.cholesky_solve(low, jnp.eye(rank, dtype=dtype))
    vinv = 0.5 * (vinv + vinv.T)
    sw = (w * weights) @ w.T
    a, c = _pairs(rank)
    half = jnp.where(a == c, 0.5, 1.0).astype(dtype)
    A, C, E, F = a[:, None], c[:, None], a[None, :], c[None, :]
    # col_k^T V^{-1} col_l summed with the weights, col_k = half_k (e_a w_c + e_c w_a)
    cvv = (vinv[A, E] * sw[C, F] + vinv[A, F] * sw[C, E] + vinv[C, E] * sw[A, F] + vinv[C, F] * sw[A, E])
    cvv = cvv * half[:, None] * half[None, :]
    inner = cvv
    if gap_type == "delta":  # the phi block: sum_b weights_b V^{-1}, and its cross terms with G_i w_b
        wbar = w @ weights
        cpv = (vinv[:, a] * wbar[c][None, :] + vinv[:, c] * wbar[a][None, :]) * half[None, :]  # (r, s)
        inner = jnp.block([[jnp.sum(weights) * vinv, cpv], [cpv.T, cvv]])
    n = inner.shape[0]
    core = jnp.zeros((n + 1, n + 1), dtype).at[1:, 1:].set(inner)
    return core * (2.0 / (4.0 * lam))


def _newton_solver_factored(state: InteriorPointState, lam, s: ObservableSpan, r, gap_type: str):
    """:func:`_newton_solver` in the factored form: the K x K matrix is diag(z / mu) + L C L^T
    with C (p, p) = B_c^T diag(d) B_c + C2, solved by the Sherman-Morrison-Woodbury identity
    (one p x p LU factorisation) with two steps of iterative refinement against the exact
    product."""
    mu, t, omega, z, nu = state.mu, state.t, state.omega, state.z, state.nu
    dtype = mu.dtype
    pieces = state.pieces
    basis_l = basis(s, r, gap_type)
    rows = pieces.b
    col = jnp.maximum(jnp.sqrt(jnp.sum(basis_l ** 2, axis=0)), jnp.finfo(dtype).tiny)
    basis_l = basis_l / col  # unit columns; B scaled inversely keeps B L^T
    rows = rows * col
    h = pieces.h
    jac_t = lambda v: basis_l @ (v @ rows)  # noqa: E731  v^T J
    jac_m = lambda u: rows @ (u @ basis_l)  # noqa: E731  J u

    r_mu = jac_t(omega) - z + nu
    r_s = 1.0 - jnp.sum(omega)
    r_p = h - state.s + t
    r_eq = jnp.sum(mu) - 1.0
    d = omega / t
    delta = jnp.sum(d)
    bd = d @ rows
    u = basis_l @ bd
    centred = rows - bd / delta
    core = centred.T @ (d[:, None] * centred) + hessian_core(omega, pieces.w, pieces.low, lam, gap_type) \
        * col[:, None] * col[None, :]
    core = 0.5 * (core + core.T)
    zm = z / mu
    diag = zm + jnp.sum((basis_l @ core) * basis_l, axis=1)
    dg = zm + state.ridge * diag
    scaled = basis_l / dg[:, None]
    p = core.shape[0]
    lu = _linalg.lu_factor(jnp.eye(p, dtype=dtype) + core @ (basis_l.T @ scaled))

    # The right-hand sides are solved one vector at a time: products with one vector of K
    # entries run as matrix-vector products, where a (K, 2) block contracted over K runs
    # several times slower on CPU (its output layout).
    def matvec(y):
        return zm * y + basis_l @ (core @ (y @ basis_l))

    def once(b):
        db = b / dg
        return db - scaled @ _linalg.lu_solve(lu, core @ (db @ basis_l))

    def solve_vec(rhs):  # two steps of iterative refinement
        y = once(rhs)
        for _ in range(FACTORED_REFINEMENTS):
            y = y + once(rhs - matvec(y))
        return y

    y_ones = solve_vec(jnp.ones_like(mu))  # the equality's column, shared by both directions

    def newton(c1, c2):
        q = (c1 + omega * r_p) / t
        b1 = -r_mu - jac_t(q) + c2 / mu
        b2 = r_s - jnp.sum(q)
        y0 = solve_vec(b1 - u * (b2 / delta))
        dnu = (jnp.sum(y0) + r_eq) / jnp.sum(y_ones)
        dmu = y0 - dnu * y_ones
        ds = (u @ dmu - b2) / delta
        dt = ds - jac_m(dmu) - r_p
        domega = (c1 - omega * dt) / t
        dz = (c2 - z * dmu) / mu
        return dmu, ds, dt, domega, dz, dnu

    return newton


def jacobian_times(pieces, vector, s: ObservableSpan, r, gap_type: str):
    """J @ vector for either form of the pieces."""
    if isinstance(pieces, FactoredPieces):
        return pieces.b @ (basis(s, r, gap_type).T @ vector)
    return pieces.jac @ vector


def times_jacobian(vector, pieces, s: ObservableSpan, r, gap_type: str):
    """vector^T J for either form of the pieces."""
    if isinstance(pieces, FactoredPieces):
        return basis(s, r, gap_type) @ (vector @ pieces.b)
    return vector @ pieces.jac


def support_bound(rank: int, gap_type: str = "delta_f") -> int:
    """Actions an optimal mixture needs at most (Caratheodory): both players' strategies
    depend on mu through V(mu) (dim Sym(r)) and <mu, r> (and Phi^T mu for gaps Delta), plus one.
    Rounds dominated by exploration (small lambda, f_hat near 0) come close to it when every
    action observes one number (a G-optimal design of r = 10 features in general position has
    up to 56 support points); an action observing many (the revealing action of a semi-bandit)
    concentrates the optimum on few."""
    return rank * (rank + 1) // 2 + 2 + (rank if gap_type == "delta" else 0)


def game_rows(num_actions: int, rank: int, gap_type: str = "delta_f") -> int:
    """The restricted game's rows (:func:`restricted_lower`): the :func:`support_bound`, or
    ``GAME_MIN_ROWS`` where that is more and the actions outnumber it ``GAME_WIDE_RATIO`` times."""
    bound = support_bound(rank, gap_type)
    return max(bound, GAME_MIN_ROWS) if num_actions >= GAME_WIDE_RATIO * bound else bound


def restricted_lower(mu, pieces, s: ObservableSpan, r, lam, gap_type: str):
    """A certified lower bound from the max player's side and a candidate from the min
    player's, ``(lower, omega, mu_game)``.

    The certificate's matrix game min_mu max_b (A mu)_b (module docstring) is solved for the
    max player on a few rows and columns: the :func:`game_rows` constraints with the
    largest h_b at ``mu`` and ``GAME_COLUMNS_PER_ROW`` times as many of the heaviest actions of
    ``mu``, by the interior-point method
    of :mod:`e2d_jax.dec.matrix_game` (``GAME_STEPS`` iterations, its Newton systems of the
    rows' size). Its best mixture omega, zero off the rows, gives min_j (omega^T A)_j over all
    K actions j, a valid bound whatever omega is (see 'Many actions'). The game's best min
    player mixture, zero off the columns, is ``mu_game``: a candidate for the upper bound
    (its F is evaluated exactly, so it too is valid whatever the game did)."""
    k = mu.shape[0]
    num_rows = min(k, game_rows(k, s.features.shape[1], gap_type))
    _, rows = lax.top_k(pieces.h, num_rows)
    _, cols = lax.top_k(mu, min(k, GAME_COLUMNS_PER_ROW * num_rows))
    if isinstance(pieces, FactoredPieces):
        w = pieces.w[:, rows]
        x = s.features[rows]
        if not s.one_number:
            quad = jnp.einsum("jkl,kb,lb->bj", s.grams[cols], w, w)
        else:  # w_b^T m_j m_j^T w_b
            quad = ((s.rows[cols] @ w) ** 2).T
        quad = quad + jnp.einsum("kb,kl,lb->b", w, s.null_proj, w)[:, None]
        cross = 2.0 * jnp.einsum("bi,ib->b", x, w)[:, None]
        if gap_type == "delta":  # (x_b)_j = phi_b - phi_j
            cross = cross - 2.0 * (s.features[cols] @ w).T
        block = r[rows][:, None] - r[cols][None, :] + (cross - quad) / (4.0 * lam)
    else:
        block = pieces.payoff[rows][:, cols]
    a = -block  # the max player of A is the min player of -A
    scaled = matrix_game.ipm_scaled(a)
    game = lax.fori_loop(0, GAME_STEPS, lambda _, g: matrix_game.ipm_step(a, scaled, g),
                         loop.batched_with(a, matrix_game.ipm_start(a, scaled)))
    omega = jnp.zeros_like(mu).at[rows].set(game.best_mu)
    if isinstance(pieces, FactoredPieces):
        values = game_values(omega, pieces.w, s, r, lam, gap_type)
    else:
        values = omega @ pieces.payoff
    return jnp.min(values), omega, jnp.zeros_like(mu).at[cols].set(game.best_omega)


def _certificate_any(mu, omega, pieces, s, r, lam, gap_type):
    if isinstance(pieces, FactoredPieces):
        om = omega / jnp.sum(omega)
        return pieces.upper, jnp.min(game_values(om, pieces.w, s, r, lam, gap_type)), om
    return certificate(mu, omega, pieces)


# --------------------------------------------------------------------------------------
# The method


def _max_step(v, dv):
    """Largest alpha in (0, 1] with v + alpha dv >= 0 (v > 0)."""
    ratio = jnp.where(dv < 0, -v / jnp.where(dv < 0, dv, -1.0), jnp.inf)
    return jnp.minimum(1.0, jnp.min(ratio))


def interior(p, k, dtype):
    """A point of the open simplex from a nonnegative vector (mixed with the uniform)."""
    p = jnp.clip(jnp.asarray(p, dtype), 0.0, None)
    total = jnp.sum(p)
    p = jnp.where((total > 0) & jnp.isfinite(total), p / jnp.where(total > 0, total, 1.0), 1.0 / k)
    return (1.0 - WARM_MIX) * p + WARM_MIX / k


def init(s: ObservableSpan, r, lam, gap_type: str = "delta_f", mu0=None, omega0=None,
         factored: bool | None = None) -> InteriorPointState:
    """A well-centred start around (mu0, omega0) (default: uniform).

    With g = J^T omega_n and theta = F(mu0) - lower(mu0, omega0) (the start's gap, floored at
    1e-3 x the scale of h and g), the start sets s = F(mu0) + theta and t = s - h(mu0) >= theta
    (feasible), z = g - min g + theta and nu = theta - min g, so that both stationarity
    conditions hold and both kinds of complementarity products start at the scale of the gap.
    ``factored`` (None: by :func:`use_factored`) chooses the factored form of 'Many actions'.
    """
    k, rank = s.features.shape
    if factored is None:
        factored = use_factored(k, rank, gap_type)
    dtype = s.features.dtype
    lam = jnp.asarray(lam, dtype)
    mu = jnp.full((k,), 1.0 / k, dtype) if mu0 is None else interior(mu0, k, dtype)
    omega = jnp.full((k,), 1.0 / k, dtype) if omega0 is None else interior(omega0, k, dtype)
    pieces = evaluate_factored(mu, s, r, lam, gap_type) if factored else evaluate(mu, s, r, lam, gap_type)
    upper, lower, om = _certificate_any(mu, omega, pieces, s, r, lam, gap_type)
    g = times_jacobian(om, pieces, s, r, gap_type)
    value = jnp.max(pieces.h)  # = upper unless the start's solve is inaccurate (upper = inf)
    size = jnp.maximum(jnp.max(jnp.abs(pieces.h)), jnp.max(jnp.abs(g)))
    theta = jnp.maximum(value - lower, jnp.maximum(1e-3 * size, jnp.finfo(dtype).tiny ** 0.5))
    gmin = jnp.min(g)
    return InteriorPointState(
        mu=mu, s=value + theta, t=value + theta - pieces.h, omega=om, z=g - gmin + theta, nu=theta - gmin,
        pieces=pieces, best_mu=mu, best_omega=om, upper=upper, lower=jnp.maximum(lower, 0.0),
        ridge=jnp.zeros((), dtype), failures=jnp.zeros((), jnp.int32), iter_num=jnp.zeros((), jnp.int32),
    )


def _newton_solver(state: InteriorPointState, lam):
    """The Newton system of the KKT conditions at ``state``, reduced to the K x K system in mu
    (Jacobi-scaled, Cholesky-factored once): returns ``newton(c1, c2)``, the direction
    (dmu, ds, dt, domega, dz, dnu) for complementarity targets omega * dt + t * domega = c1 and
    z * dmu + mu * dz = c2 (the linearised rest of the system holds exactly)."""
    mu, t, omega, z, nu = state.mu, state.t, state.omega, state.z, state.nu
    k = mu.shape[0]
    dtype = mu.dtype
    h, jac = state.pieces.h, state.pieces.jac
    hess = hessian(omega, state.pieces, lam)

    # Residuals: stationarity in mu and in s, the epigraph constraints, the equality.
    r_mu = omega @ jac - z + nu
    r_s = 1.0 - jnp.sum(omega)
    r_p = h - state.s + t
    r_eq = jnp.sum(mu) - 1.0
    d = omega / t
    delta = jnp.sum(d)
    u = d @ jac  # J^T d
    centred = jac - u / delta
    mat = hess + centred.T @ (d[:, None] * centred) + jnp.diag(z / mu)
    scale = lax.rsqrt(jnp.maximum(jnp.diagonal(mat), jnp.finfo(dtype).tiny))
    factor = _linalg.psd_cholesky(mat * scale[:, None] * scale[None, :] + state.ridge * jnp.eye(k, dtype=dtype))

    def solve_mat(rhs):  # (K, n), with one step of iterative refinement
        once = lambda b: scale[:, None] * _linalg.cholesky_solve(factor, scale[:, None] * b)
        y = once(rhs)
        return y + once(rhs - mat @ y)

    ones = jnp.ones((k,), dtype)

    def newton(c1, c2):
        q = (c1 + omega * r_p) / t
        b1 = -r_mu - jac.T @ q + c2 / mu
        b2 = r_s - jnp.sum(q)
        y = solve_mat(jnp.stack([b1 - u * (b2 / delta), ones], axis=1))
        dnu = (jnp.sum(y[:, 0]) + r_eq) / jnp.sum(y[:, 1])
        dmu = y[:, 0] - dnu * y[:, 1]
        ds = (u @ dmu - b2) / delta
        dt = ds - jac @ dmu - r_p
        domega = (c1 - omega * dt) / t
        dz = (c2 - z * dmu) / mu
        return dmu, ds, dt, domega, dz, dnu

    return newton


def _direction(state: InteriorPointState, lam, s: ObservableSpan, r, gap_type: str):
    """Mehrotra's predictor (affine scaling), the centring parameter, and the corrector with
    centring: the direction (dmu, ds, dt, domega, dz, dnu) and its longest step a_max inside
    the boundary fractions (see the module docstring, 'Step rule')."""
    mu, t, omega, z = state.mu, state.t, state.omega, state.z
    k = mu.shape[0]
    if isinstance(state.pieces, FactoredPieces):
        newton = _newton_solver_factored(state, lam, s, r, gap_type)
    else:
        newton = _newton_solver(state, lam)

    def longest(dmu, dt, domega, dz, fraction=1.0, fraction_mu=1.0):
        return jnp.minimum(
            jnp.minimum(fraction_mu * _max_step(mu, dmu), fraction * _max_step(t, dt)),
            fraction * jnp.minimum(_max_step(omega, domega), _max_step(z, dz)))

    m = (omega @ t + z @ mu) / (2 * k)
    dmu, ds, dt, domega, dz, _ = newton(-omega * t, -z * mu)
    a_aff = longest(dmu, dt, domega, dz)
    m_aff = ((omega + a_aff * domega) @ (t + a_aff * dt) + (z + a_aff * dz) @ (mu + a_aff * dmu)) / (2 * k)
    sigma = jnp.clip(m_aff / m, 0.0, 1.0) ** 3
    xi = jnp.minimum(jnp.min(omega * t), jnp.min(z * mu)) / m
    sigma = jnp.maximum(sigma, 0.1 * jnp.minimum(0.05 * (1.0 - xi) / xi, 2.0) ** 3)
    sigma = jnp.maximum(sigma, SIGMA_MIN)
    direction = newton(sigma * m - omega * t - domega * dt, sigma * m - z * mu - dz * dmu)
    dmu, _, dt, domega, dz, _ = direction
    return direction, longest(dmu, dt, domega, dz, BOUNDARY_FRACTION, SUPPORT_FRACTION)


def _ladder(s: ObservableSpan, r, lam, state: InteriorPointState, direction, a_max, gap_type: str,
            many: bool = False):
    """The step ladder: the longest of the steps ``a_max * STEP_LADDER`` at which every
    constraint's linearisation error stays within NONLINEARITY of its slack (the trial points
    evaluated in one batch); returns the new point and whether it is accepted (admissible,
    finite, strictly interior)."""
    mu, t, omega, z, nu = state.mu, state.t, state.omega, state.z, state.nu
    dmu, ds, dt, domega, dz, dnu = direction
    h = state.pieces.h
    alphas = a_max * jnp.asarray(STEP_LADDER, mu.dtype)
    trial_h = jax.vmap(lambda a: _constraints_fast(mu + a * dmu, s, r, lam, gap_type))(alphas)
    error = trial_h - h[None, :] - alphas[:, None] * jacobian_times(state.pieces, dmu, s, r, gap_type)[None, :]
    admissible = jnp.all((error <= NONLINEARITY * (t[None, :] + alphas[:, None] * dt[None, :]))
                         & jnp.isfinite(error), axis=1)
    first = jnp.argmax(admissible)
    alpha = alphas[first]
    new = (mu + alpha * dmu, state.s + alpha * ds, t + alpha * dt, omega + alpha * domega, z + alpha * dz,
           nu + alpha * dnu)
    ok = admissible[first] & jnp.all(jnp.stack([jnp.all(jnp.isfinite(v)) for v in new])) \
        & (((a_max >= SHORT_STEP) | (state.failures >= 3)) if many else True) \
        & jnp.all(new[0] > 0) & jnp.all(new[2] > 0) & jnp.all(new[3] > 0) & jnp.all(new[4] > 0)
    return new, ok


def step(s: ObservableSpan, r, lam, state: InteriorPointState, gap_type: str = "delta_f",
         many: bool | None = None) -> InteriorPointState:
    """One Mehrotra predictor-corrector iteration (:func:`_direction`, :func:`_ladder`), then
    the certificate of the new iterate and of a second candidate, its purified neighbour.
    ``many`` (static; None: more than ``MANY_ACTIONS`` actions) adds the rules of 'Many
    actions': the restricted game's lower bound, its mixture as the second candidate, the
    rejection of collapsed directions and the Newton matrix's ridge floor (a working set's
    restricted program, certified on all actions by its own bounds, runs without them)."""
    dtype = state.mu.dtype
    lam = jnp.asarray(lam, dtype)
    many = state.mu.shape[0] > MANY_ACTIONS if many is None else many
    solved = state._replace(ridge=jnp.maximum(state.ridge, MANY_RIDGE)) if many else state
    direction, a_max = _direction(solved, lam, s, r, gap_type)
    new, ok = _ladder(s, r, lam, state, direction, a_max, gap_type, many)
    mu, s_var, t, omega, z, nu = (jnp.where(ok, v, old) for v, old in
                                  zip(new, (state.mu, state.s, state.t, state.omega, state.z, state.nu)))

    factored = isinstance(state.pieces, FactoredPieces)
    pieces = evaluate_factored(mu, s, r, lam, gap_type) if factored else evaluate(mu, s, r, lam, gap_type)
    upper, lower, om = _certificate_any(mu, omega, pieces, s, r, lam, gap_type)
    if many:  # the restricted game's bound, and its mixture as the second candidate
        lower_g, _, mu_p = restricted_lower(mu, pieces, s, r, lam, gap_type)
        lower = jnp.maximum(lower, lower_g)
        upper_p = checked_objective(mu_p, s, r, lam, gap_type, factored)
    else:
        mu_p, upper_p = purified(mu, s, r, lam, gap_type, factored)
    better = ok & (upper < state.upper)
    best_mu = jnp.where(better, mu, state.best_mu)
    best_omega = jnp.where(better, om, state.best_omega)
    best_upper = jnp.where(better, upper, state.upper)
    better_p = ok & (upper_p < best_upper)
    return InteriorPointState(
        mu=mu, s=s_var, t=t, omega=omega, z=z, nu=nu, pieces=pieces,
        best_mu=jnp.where(better_p, mu_p, best_mu),
        best_omega=jnp.where(better_p, om, best_omega),
        upper=jnp.where(better_p, upper_p, best_upper),
        lower=jnp.where(ok & jnp.isfinite(lower), jnp.maximum(state.lower, lower), state.lower),
        # A rejected step (a non-finite direction, mostly float32 near the optimum, or no
        # admissible ladder point) is retried with a relative ridge 100x larger.
        ridge=jnp.where(ok, state.ridge, jnp.maximum(100.0 * state.ridge, 10.0 * jnp.finfo(dtype).eps)),
        failures=jnp.where(ok, 0, state.failures + 1).astype(jnp.int32),
        iter_num=state.iter_num + 1,
    )


def _check(s: ObservableSpan, r, gap_type, maxiter):
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    if not isinstance(maxiter, int) or isinstance(maxiter, bool) or maxiter < 0:
        raise ValueError(f"maxiter must be an int >= 0, got {maxiter!r}")
    if jnp.ndim(s.features) != 2:
        raise ValueError(f"s.features must have shape (K, r), got {jnp.shape(s.features)}")
    k, rr = jnp.shape(s.features)
    if jnp.shape(s.grams) != (k, rr, rr):
        raise ValueError(f"s.grams must have shape (K, r, r) = {(k, rr, rr)}, got {jnp.shape(s.grams)}")
    if s.rows is not None and jnp.shape(s.rows) != (k, rr):
        raise ValueError(f"s.rows must have shape (K, r) = {(k, rr)} or be None, got {jnp.shape(s.rows)}")
    if jnp.shape(s.null_proj) != (rr, rr):
        raise ValueError(f"s.null_proj must have shape (r, r) = {(rr, rr)}, got {jnp.shape(s.null_proj)}")
    if jnp.shape(r) != (k,):
        raise ValueError(f"r must have shape (K,) = {(k,)}, got {jnp.shape(r)}")


def symmetrised(s: ObservableSpan) -> ObservableSpan:
    """The span with exactly symmetric Gram matrices: the Cholesky factor reads one triangle and
    the quadratic forms of the certificate both (a float32 span's Gram matrices differ by an ulp
    across them)."""
    return s._replace(grams=0.5 * (s.grams + jnp.swapaxes(s.grams, -1, -2)), null_proj=0.5 * (s.null_proj + s.null_proj.T))


def halted(state: InteriorPointState) -> jax.Array:
    """Stop without the tolerance: a NaN objective or an infinite lower bound (an upper bound of
    +inf only means that none is certified yet), or four rejected steps in a row."""
    return jnp.isnan(state.upper) | ~jnp.isfinite(state.lower) | (state.failures >= 4)


def solve(s: ObservableSpan, r, lam, *, gap_type: str = "delta_f", maxiter: int = MAXITER, rtol: float = 1e-4,
          atol: float = 0.0, mu0=None, omega0=None, early_stop: bool = True) -> InteriorPointSolution:
    """min_{mu in simplex} max_b r_b - <mu, r> + c_b(mu) / (4 lambda), with a certified gap.

    The steps of :class:`~e2d_jax.dec.solvers.InteriorPoint`, for a span and rewards given
    directly. Traceable (jit, vmap over problems and over ``lam``); the checks are on static
    shapes and configuration only. The Gram matrices are symmetrised first (:func:`symmetrised`).

    Args:
      s: the model class in observable-span coordinates (features (K, r), grams (K, r, r),
        null_proj (r, r), and the observation rows (K, r) where every action observes one
        number, else None; ``basis`` is not used).
      r: (K,) rewards r = Phi f_hat of the reference model.
      lam: () lambda > 0 (may be traced, e.g. vmapped over a grid).
      gap_type: ``"delta_f"`` (x_b = phi_b) or ``"delta"`` (x_b = phi_b - Phi^T mu); static.
      maxiter: Newton iterations (static).
      rtol: a problem is done, and frozen, once ``gap <= rtol |upper| + atol``.
      atol: see ``rtol``.
      mu0: optional (K,) warm start (nonnegative; normalised and mixed with the uniform).
      omega0: optional (K,) warm start of the multipliers (same treatment).
      early_stop: a ``lax.while_loop`` that stops when done (default); False: the fixed loop.

    Returns:
      InteriorPointSolution (shapes as in the problem, dtype of ``s.features``).
    """
    _check(s, r, gap_type, maxiter)
    s = symmetrised(s)
    dtype = s.features.dtype
    r = jnp.asarray(r, dtype)
    lam = jnp.asarray(lam, dtype)
    state = loop.run(lambda st: step(s, r, lam, st, gap_type), init(s, r, lam, gap_type, mu0, omega0),
                     steps=maxiter, done=lambda st: loop.converged(st.upper, st.lower, rtol, atol), halted=halted,
                     early_stop=early_stop, count=lambda st: st.iter_num)
    answer = loop.Answer(mu=state.best_mu, omega=state.best_omega, lam=lam, value=state.upper, lower=state.lower,
                         iterations=state.iter_num, carry=None)
    return InteriorPointSolution(mu=state.best_mu, omega=state.best_omega, upper=state.upper, lower=state.lower,
                                 gap=state.upper - state.lower, iterations=state.iter_num,
                                 status=loop.status(answer, rtol, atol))
