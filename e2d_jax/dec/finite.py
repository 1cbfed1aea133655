"""The DEC of a finite model class as matrix games (the programs of Section 3.1 and their
Lagrangian forms; Section 3.4, 'Computational Aspects').

With the gap matrix Delta and the information matrix I_f (both |Pi| x |M|, rows actions,
columns models; see ``e2d_jax.envs.finite``):

* offset DEC, a matrix game:   dec^o_lam(f) = min_mu max_g mu (Delta - lam I_f) e_g;
* average-constrained DEC:     dec^ac_eps(f) = min_mu max_nu {mu Delta nu : mu I_f nu <= eps^2}
                                             = min_{lam >= 0} dec^o_lam(f) + lam eps^2.

Offset DEC (:func:`finite_offset_dec`): a matrix game with A = Delta - lam I, solved with an
exact weak-duality certificate by ``e2d_jax.dec.matrix_game`` (interior point by default).

Exact objective of a given mu. For fixed mu, h(mu) = max_nu {a.nu : c.nu <= eps^2} with
a = mu Delta, c = mu I is a linear program over the simplex with one extra constraint, so an
optimum mixes at most two models: a feasible g alone, or a feasible i (c_i <= eps^2) with an
infeasible j (c_j > eps^2) at the mix t = (eps^2 - c_i) / (c_j - c_i) that makes the
constraint tight (:func:`max_constrained_mixture`, O(M^2)). Its multiplier lam*(mu), the
right derivative max_{j: c_j > eps^2} (a_j - h) / (c_j - eps^2) (or 0) of the concave value
function x -> max{a.nu : c.nu <= x} at eps^2, minimises max_g (a_g - lam c_g) + lam eps^2, so
every returned ``value`` is honestly evaluated at the returned (lam, mu) and equals h(mu).

ac-DEC (:func:`finite_acdec`). v(lam) = dec^o_lam + lam eps^2 is not convex in lam (dec^o_lam
is a maximum over nu of concave functions of lam), so we search lam on a grid that provably
contains the minimiser and certify the search:

* Range. If some column g0 has max_pi I(pi, g0) = I0 < eps^2 (always the case when f is in
  the class: its own column is 0), then v(lam) >= min_pi Delta(pi, g0) + lam (eps^2 - I0),
  so lam* <= hi = (U - c0) / (eps^2 - I0) with U = h(uniform) >= dec^ac (exact, closed form)
  and c0 = min_pi Delta(pi, g0); lam <= max Delta / eps^2 is the special case c0 = 0,
  I0 = 0 with the cruder U = max Delta. There is no positive lower end in general (lam* = 0
  when eps^2 is large), so lam = 0 is solved as a grid point of its own, followed by a
  geometric grid on [hi * lam_lo_ratio, hi].
* Certificate. dec^o_lam decreases in lam (I >= 0) and lam eps^2 increases, so on an interval
  [l_i, l_{i+1}] of evaluated points v(lam) >= lb(l_{i+1}) + l_i eps^2, with lb(l) the game
  solver's certified lower bound at l; for lam >= hi, v(lam) >= U. The minimum over all
  intervals is a certified lower bound on dec^ac over all lam >= 0.
  A second, first-order bound is also used: for any max-player mixture omega, psi_omega(lam)
  = min_pi (Delta omega - lam I omega)_pi + lam eps^2 <= v(lam) is concave in lam, so on an
  interval it is at least its smaller end value; the omegas of both end points are tried.
* Guard against non-convexity: best-first branch and bound. Instead of zooming in around the
  incumbent only, each round subdivides the interval whose certified lower bound is the
  smallest (geometrically, or linearly for [0, l_1]) with ``lam_refine`` new points solved in
  one batched call, warm-started from the better end point. A second basin between coarse grid
  points therefore cannot be missed silently: as long as its interval's bound is below the
  incumbent, it is the one refined; the loop stops when the certified gap
  ``value - lower_bound`` meets the tolerance or after ``lam_rounds`` rounds (then the
  status is Status.MAX_ITER and the gap says how far from certified the answer is).
* Answer. Among the ``candidates`` evaluated lams with the smallest v(lam), the mu with the
  smallest exact objective h(mu) (closed form above) is returned, with lam*(mu).

Memory across rounds (:func:`solve_acdec_memory`, :class:`LambdaMemory`). The games
min_mu max_g mu (Delta - lam I) e_g do not involve eps^2: only v(lam) = dec^o_lam + lam eps^2
and the interval bounds do. A caller that meets the same matrices again with another eps^2
(an agent whose f_hat is a sampled model of the class) can therefore pass the games it solved
before: the search recomputes the totals and bounds at the new eps^2, re-proves the range
[0, hi] (hi grows as eps^2 shrinks; the stretch above the largest remembered lam is bounded by
a point at hi with dec^o_hi >= tail - hi eps^2) and continues the branch and bound from
there, so the certificate covers every lam >= 0 exactly as in the plain search.

Loops: every game is a ``lax.while_loop`` (vmapped over the ``lam_refine`` lams of a round,
so a round lasts as long as its slowest game); the rounds, the first grid included (in chunks
of ``lam_refine``), are one ``lax.while_loop`` with fixed-size buffers, so the game solver is
compiled once. Under ``vmap`` over problems both loops run until the slowest problem stops.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax import _checks as V
from e2d_jax.envs import finite as finite_envs
from e2d_jax.dec import lambda_search, loop, matrix_game, saddle
from e2d_jax.dec import solvers as S
from e2d_jax.types import GAP_TYPES, DecResult, WarmStart


# --------------------------------------------------------------------------------------
# Exact objectives


def offset_objective(mu, gaps, info, lam):
    """max_g mu (Delta - lam I) e_g: the exact offset objective of mu, ()."""
    return jnp.max(mu @ gaps - lam * (mu @ info))


def max_constrained_mixture(a, c, eps2):
    """Exact max_{nu in simplex} {a.nu : c.nu <= eps2}, its multiplier and maximiser.

    The optimum mixes at most two models (one linear constraint besides the simplex); see the
    module docstring. O(M^2) work.

    Args:
      a: (M,) objective (mu Delta).
      c: (M,) constraint coefficients (mu I), >= 0.
      eps2: () radius.

    Returns:
      ``(value, lam, nu)``: the optimum (-inf if no nu is feasible), the LP multiplier lam >= 0
      of the constraint (lam*(mu) of the Lagrangian form), and a maximiser nu (M,).
    """
    m = a.shape[0]
    feas = c <= eps2
    neg = jnp.asarray(-jnp.inf, a.dtype)
    single = jnp.where(feas, a, neg)
    i_single = jnp.argmax(single)
    pair_ok = feas[:, None] & ~feas[None, :]
    ci, cj, ai, aj = c[:, None], c[None, :], a[:, None], a[None, :]
    denom = jnp.where(pair_ok, cj - ci, 1.0)
    t = jnp.where(pair_ok, (eps2 - ci) / denom, 0.0)
    pair = jnp.where(pair_ok, ai + t * (aj - ai), neg)
    idx = jnp.argmax(pair.reshape(-1))
    i, j = idx // m, idx % m
    use_pair = pair.reshape(-1)[idx] > single[i_single]
    value = jnp.where(use_pair, pair.reshape(-1)[idx], single[i_single])
    # The multiplier: the right derivative of the value function H(x) = max{a.nu : c.nu <= x}
    # (a concave envelope) at x = eps2, max_{j: c_j > eps2} (a_j - H) / (c_j - eps2), or 0.
    # It is dual optimal even when eps2 hits a vertex of the envelope exactly, where the
    # slope of "the" optimal pair is ambiguous (ties; e.g. models on a grid).
    above = c > eps2
    gap_c = jnp.where(above, c - eps2, 1.0)
    lam = jnp.max(jnp.where(above, (a - value) / gap_c, 0.0))
    lam = jnp.where(jnp.isfinite(value), jnp.maximum(lam, 0.0), 0.0)
    tt = t.reshape(-1)[idx]
    one = lambda k: jax.nn.one_hot(k, m, dtype=a.dtype)
    nu = jnp.where(use_pair, (1.0 - tt) * one(i) + tt * one(j), one(i_single))
    return value, lam, nu


def constrained_objective(mu, gaps, info, eps2):
    """h(mu) = max_nu {mu Delta nu : mu I nu <= eps2} exactly, with lam*(mu) and nu.

    This is the objective of the average-constrained DEC (Section 3.1) at mu; h(mu) = min_lam max_g mu (Delta - lam I) e_g +
    lam eps2 (LP duality), attained at the returned lam.
    """
    return max_constrained_mixture(mu @ gaps, mu @ info, eps2)


def _noise_floor(gaps, info, lam):
    """Absolute tolerance below which the certificates are rounding noise."""
    scale = jnp.max(jnp.abs(gaps)) + lam * jnp.max(jnp.abs(info))
    return 50.0 * jnp.finfo(gaps.dtype).eps * scale


class _Finite:
    """What both finite programs give the solvers (see :mod:`e2d_jax.dec.solvers`)."""

    family: ClassVar[str] = "finite"

    def cold_start(self) -> WarmStart:
        return WarmStart.cold(*self.gaps.shape, self.gaps.dtype)

    @staticmethod
    def next_start(mu, omega, step=None) -> WarmStart:
        # The game solvers choose their step themselves at every start.
        return WarmStart(mu, omega, jnp.zeros((), mu.dtype))


@functools.partial(jax.tree_util.register_dataclass, data_fields=["gaps", "info", "lam"], meta_fields=["gap_type"])
@dataclasses.dataclass(frozen=True)
class FiniteOffset(_Finite):
    """The offset DEC of a finite class at a fixed lam: min_mu max_g mu (Delta - lam I) e_g.

    Attributes:
      gaps: (K, M) Delta or Delta_f.
      info: (K, M) I_f >= 0.
      lam: () lam >= 0.
      gap_type: which gaps ``gaps`` holds (a label).
    """

    gaps: jax.Array
    info: jax.Array
    lam: jax.Array
    gap_type: str = "delta_f"
    program: ClassVar[str] = "offset"

    def _lam(self):
        return jnp.asarray(self.lam, self.gaps.dtype)

    def payoff(self):
        """The game's payoff A = Delta - lam I (rows actions, columns models)."""
        return self.gaps - self._lam() * self.info

    def floor(self):
        """The rounding floor, 50 eps (max|Delta| + lam max|I|): added to the absolute
        tolerance (float32 reaches ~1e-4 relative)."""
        return _noise_floor(self.gaps, self.info, self._lam())

    def saddle_form(self) -> saddle.SaddleForm:
        """The bilinear game's gradients and exact certificate (:func:`e2d_jax.dec.matrix_game.game_form`)."""
        lam = self._lam()
        grads, cert = matrix_game.game_form(self.payoff())
        return saddle.SaddleForm(grads, cert, lambda upper, aux: (lam, upper))


def solve_offset(gaps, info, lam, solver: S.Solver = S.SOLVERS["ipm"],
                 warm: WarmStart | None = None) -> tuple[DecResult, WarmStart]:
    """dec^o_lam as a matrix game (traceable; no argument checks): ``solver.solve(FiniteOffset(
    gaps, info, lam), warm)``.

    Args:
      gaps: (K, M) Delta or Delta_f.
      info: (K, M) I_f >= 0.
      lam: () lam >= 0.
      solver: a :class:`~e2d_jax.dec.solvers.MatrixGameIPM` or
        :class:`~e2d_jax.dec.solvers.Saddle` (mirror-prox on the game, warm-startable).
      warm: the warm start (mirror-prox only).

    Returns:
      ``(DecResult, WarmStart)``: the answer, with ``value`` = max_g mu (Delta - lam I) e_g at
      the returned mu (no lam eps^2 term), ``lower_bound`` certified and ``lam`` the given
      lam; and the warm start of the next solve.
    """
    return solver.solve(FiniteOffset(gaps, info, lam), warm)


# --------------------------------------------------------------------------------------
# The ac-DEC


class LambdaRange(NamedTuple):
    hi: jax.Array  # () a lam that is provably >= lam*
    tail: jax.Array  # () lower bound on v(lam) for every lam >= hi
    feasible: jax.Array  # () bool: a column with max_pi I < eps2 exists (the range is proven)


def lambda_range(gaps, info, eps2) -> LambdaRange:
    """The range [0, hi] that provably contains lam* (see the module docstring)."""
    k = gaps.shape[0]
    imax = jnp.max(info, axis=0)
    g0 = jnp.argmin(imax)
    slope = eps2 - imax[g0]
    c0 = jnp.min(gaps[:, g0])
    uniform = jnp.full((k,), 1.0 / k, gaps.dtype)
    upper, _, _ = constrained_objective(uniform, gaps, info, eps2)
    feasible = slope > 0
    safe = jnp.where(feasible, slope, 1.0)
    tiny = 1e-12 * (jnp.abs(upper) + jnp.max(jnp.abs(gaps)) + 1e-30) / eps2
    hi = jnp.maximum((upper - c0) / safe, tiny)
    return LambdaRange(hi=hi, tail=c0 + hi * slope, feasible=feasible)


def _psi(g_om, i_om, lam, eps2):
    """psi_omega(lam) = min_pi (Delta omega - lam I omega)_pi + lam eps2 <= v(lam), any omega,
    from ``g_om`` = Delta omega and ``i_om`` = I omega (computed once per omega).

    It is the value of the L3 form at a fixed max-player mixture omega, a lower bound on
    v(lam) for every lam, and concave (a minimum of affine functions) in lam.
    """
    return jnp.min(g_om - lam * i_om) + lam * eps2


def _interval_bounds(lams, lowers, g_om, i_om, eps2, subdivide: int = 1):
    """Sorted lams and a certified lower bound of v on each interval between them.

    Two bounds, the larger is kept: the zero-order one lb(l_{i+1}) + l_i eps2 (dec^o
    decreases, lam eps2 increases) and the first-order one min(psi_w(l_i), psi_w(l_{i+1}))
    for the mixtures w of both end points (psi_w is concave, so its minimum over the
    interval is at an end point). ``g_om``/``i_om`` (N, K): Delta w and I w of each point's
    mixture w.

    With ``subdivide`` = S > 1 the first-order bound is taken on S equal pieces of each
    interval, piece j with the mixtures w_t = (1 - t) w_left + t w_right at t = j / S and
    (j + 1) / S (psi_w is a lower bound on v for *any* mixture w, and Delta w_t, I w_t are
    the same mixtures of the end points' vectors, so this costs no game). The optimal
    mixture moves with lam; following it this way makes the bound's loss shrink with the
    piece's width rather than the interval's, so the branch and bound certifies with far
    fewer games.
    """
    order = jnp.argsort(lams)
    sl, slb, sg, si = lams[order], lowers[order], g_om[order], i_om[order]
    left, right = sl[:-1], sl[1:]
    zero_order = slb[1:] + left * eps2
    finite = jnp.isfinite(right)
    safe_right = jnp.where(finite, right, left)
    psi = jax.vmap(_psi, in_axes=(0, 0, 0, None))
    if subdivide <= 1:
        first_order = jnp.maximum(
            jnp.minimum(psi(sg[:-1], si[:-1], left, eps2), psi(sg[:-1], si[:-1], safe_right, eps2)),
            jnp.minimum(psi(sg[1:], si[1:], left, eps2), psi(sg[1:], si[1:], safe_right, eps2)),
        )
    else:
        t = jnp.linspace(0.0, 1.0, subdivide + 1, dtype=sl.dtype)  # (S + 1,)
        knots = left[:, None] + t[None, :] * (safe_right - left)[:, None]  # (N - 1, S + 1)
        # Delta w_t and I w_t at every knot: (N - 1, S + 1, K).
        g_t = sg[:-1, None, :] + t[None, :, None] * (sg[1:] - sg[:-1])[:, None, :]
        i_t = si[:-1, None, :] + t[None, :, None] * (si[1:] - si[:-1])[:, None, :]
        both = jax.vmap(jax.vmap(_psi, in_axes=(0, 0, 0, None)), in_axes=(0, 0, 0, None))
        # psi of the mixture of knot j at the piece's ends j and j + 1, and of knot j + 1.
        at_own = both(g_t, i_t, knots, eps2)  # psi_{w_j}(l_j)
        own_next = both(g_t[:, :-1], i_t[:, :-1], knots[:, 1:], eps2)  # psi_{w_j}(l_{j+1})
        next_own = both(g_t[:, 1:], i_t[:, 1:], knots[:, :-1], eps2)  # psi_{w_{j+1}}(l_j)
        piece = jnp.maximum(jnp.minimum(at_own[:, :-1], own_next), jnp.minimum(next_own, at_own[:, 1:]))
        first_order = jnp.min(piece, axis=1)
    bounds = jnp.where(finite, jnp.maximum(zero_order, first_order), jnp.inf)
    bounds = jnp.where(jnp.isnan(bounds), -jnp.inf, bounds)
    return order, sl, bounds


class LambdaMemory(NamedTuple):
    """The games one model's lambda searches have solved, kept between rounds.

    The games of the ac-DEC search, min_mu max_g mu (Delta - lam I) e_g, do not depend on
    eps^2, so an agent whose matrices depend only on the model it samples (EWA's sample
    f_hat with Delta or Delta_f) can keep every game it solved for that model and reuse it in
    a later round with another eps_t^2: only the totals v(lam) = dec^o_lam + lam eps_t^2 and
    the interval bounds change, and they are recomputed. Slots ``[:G]`` hold the first grid
    (G = the grid's chunks x ``lam_refine``), kept for good (they cover the whole range the
    first search proved); slots ``[G:]`` the ``memory`` refinement points with the smallest
    totals at the last eps^2. Unused slots have ``lams = +inf``. Arrays (N,) or (N, .).
    """

    lams: jax.Array  # (N,) evaluated lams
    uppers: jax.Array  # (N,) dec^o at each lam (exact objective of its mu)
    lowers: jax.Array  # (N,) certified lower bound on dec^o at each lam
    mus: jax.Array  # (N, K)
    omegas: jax.Array  # (N, M)
    g_om: jax.Array  # (N, K) Delta omega
    i_om: jax.Array  # (N, K) I omega


def _grid_slots(solver: S.LambdaSearch) -> int:
    p = solver.lam_refine
    return -(-(solver.lam_grid + 1) // p) * p


def empty_memory(num_actions: int, num_models: int, solver: S.LambdaSearch, dtype=jnp.float32) -> LambdaMemory:
    """A model's memory before its first search (``solver.memory`` refinement slots)."""
    n = _grid_slots(solver) + solver.memory
    return LambdaMemory(lams=jnp.full((n,), jnp.inf, dtype), uppers=jnp.full((n,), jnp.inf, dtype),
                        lowers=jnp.full((n,), jnp.inf, dtype), mus=jnp.zeros((n, num_actions), dtype),
                        omegas=jnp.zeros((n, num_models), dtype), g_om=jnp.zeros((n, num_actions), dtype),
                        i_om=jnp.zeros((n, num_actions), dtype))


def _first_grid(rng: LambdaRange, solver: S.LambdaSearch, n_init: int, lam_hint, dtype):
    """The first grid: lam = 0 and a geometric grid on [hi * lam_lo_ratio, hi], ``n_init``
    chunks of ``lam_refine``; with a positive ``lam_hint`` the first chunk is lam = 0, the hint
    x {0.8, 1, 1.25} and a coarse grid over the whole range (see :func:`solve_acdec`)."""
    p = solver.lam_refine
    g = n_init * p - 1
    lo = rng.hi * solver.lam_lo_ratio
    grid = lo * (rng.hi / lo) ** (jnp.arange(g, dtype=dtype) / max(g - 1, 1))
    first = jnp.concatenate([jnp.zeros((1,), dtype), grid])
    if lam_hint is not None and p >= 5:
        hint = jnp.asarray(lam_hint, dtype)
        near = jnp.clip(hint * jnp.asarray([0.8, 1.0, 1.25], dtype), lo, rng.hi)
        coarse = lo * (rng.hi / lo) ** (jnp.arange(p - 4, dtype=dtype) / max(p - 5, 1))
        hinted = jnp.concatenate([jnp.zeros((1,), dtype), near, coarse])
        first = first.at[:p].set(jnp.where(hint > 0, hinted, first[:p]))
    return first


def _points_from_memory(points: lambda_search.Points, memory: LambdaMemory, rng: LambdaRange, gaps, info, eps2,
                        solver: S.LambdaSearch):
    """The remembered games (non-finite ones dropped) in the first slots and the point at hi
    in the last: dec^o_hi >= min_pi Delta(pi, g0) - hi max_pi I(pi, g0) = tail - hi eps2, with
    psi of the uniform max-player mixture (any mixture gives a valid first-order bound).
    Returns the points and whether the model's lam = 0 game is remembered."""
    m = gaps.shape[1]
    dtype = gaps.dtype
    kept = memory.lams.shape[0]
    ok = jnp.isfinite(memory.lams) & jnp.isfinite(memory.uppers) & jnp.isfinite(memory.lowers)
    uniform = jnp.full((m,), 1.0 / m, dtype)
    hi_lower = rng.tail - rng.hi * eps2
    g_om, i_om = points.minorant
    points = lambda_search.Points(
        lams=points.lams.at[:kept].set(jnp.where(ok, memory.lams, jnp.inf)).at[-1].set(rng.hi),
        uppers=points.uppers.at[:kept].set(memory.uppers),
        lowers=points.lowers.at[:kept].set(memory.lowers).at[-1].set(hi_lower),
        mus=points.mus.at[:kept].set(memory.mus),
        omegas=points.omegas.at[:kept].set(memory.omegas).at[-1].set(uniform),
        minorant=(g_om.at[:kept].set(memory.g_om).at[-1].set(gaps @ uniform),
                  i_om.at[:kept].set(memory.i_om).at[-1].set(info @ uniform)),
    )
    return points, ok[0]


def _remember(search: lambda_search.Search, eps2, grid_n: int, r: int) -> LambdaMemory:
    """What a model's memory keeps: the first grid and the ``r`` refinement points (remembered
    or new) with the smallest totals at this eps2; the point at hi is recomputed next time."""
    pts = search.points
    n = pts.lams.shape[0]
    rest_tot = lambda_search.totals(pts, eps2)[grid_n:n - 1]
    rest_tot = jnp.where(jnp.isfinite(pts.lowers[grid_n:n - 1]), rest_tot, jnp.inf)
    _, keep = lax.top_k(-rest_tot, r)
    idx = jnp.concatenate([jnp.arange(grid_n), grid_n + keep])
    kept_ok = jnp.concatenate([jnp.ones((grid_n,), bool), jnp.isfinite(rest_tot[keep])])
    take = lambda x: x[idx]
    g_om, i_om = pts.minorant
    return LambdaMemory(lams=jnp.where(kept_ok, take(pts.lams), jnp.inf), uppers=take(pts.uppers),
                        lowers=take(pts.lowers), mus=take(pts.mus), omegas=take(pts.omegas),
                        g_om=take(g_om), i_om=take(i_om))


class SearchCarry(NamedTuple):
    """What a finite ac-DEC search continues from: the warm start of its first grid's games,
    where lam* probably is (``lam_hint``, or None) and the games an earlier search solved for the
    same matrices (``memory``, a :class:`LambdaMemory`, or None); see :func:`solve_acdec` and
    :func:`solve_acdec_memory`."""

    warm: WarmStart | None = None
    lam_hint: jax.Array | None = None
    memory: LambdaMemory | None = None


@functools.partial(jax.tree_util.register_dataclass, data_fields=["gaps", "info", "eps2"], meta_fields=["gap_type"])
@dataclasses.dataclass(frozen=True)
class FiniteAcdec(_Finite):
    """The average-constrained DEC of a finite class: min_mu max_nu {mu Delta nu : mu I nu <= eps2}.

    Attributes:
      gaps: (K, M) Delta or Delta_f (rows actions, columns models).
      info: (K, M) I_f >= 0.
      eps2: () the radius eps^2 > 0.
      gap_type: which gaps ``gaps`` holds (a label: the matrices are given).
    """

    gaps: jax.Array
    info: jax.Array
    eps2: jax.Array
    gap_type: str = "delta_f"
    program: ClassVar[str] = "acdec"

    def floor(self):
        """The rounding floor of the certificate, 50 eps max|Delta|."""
        return _noise_floor(self.gaps, self.info, 0.0)

    def at(self, lam) -> FiniteOffset:
        """The matrix game at lam (the lambda search's points)."""
        return FiniteOffset(self.gaps, self.info, lam, self.gap_type)

    def search(self, solver: S.LambdaSearch, carry) -> S.SearchWork:
        """The branch and bound of :class:`~e2d_jax.dec.solvers.LambdaSearch` on this program (see
        the module docstring): the proven range [0, hi], the first grid (lam = 0 and a geometric
        grid up to hi, or the remembered games), the games at each lam by the solver's inner
        solver, the minorants psi_omega, and as the answer the candidate mu with the smallest
        exact objective h(mu), with lam*(mu) (and, with a memory, what to remember)."""
        gaps, info = self.gaps, self.info
        carry = carry if isinstance(carry, SearchCarry) else SearchCarry(warm=carry)
        k, m = gaps.shape
        dtype = gaps.dtype
        eps2 = jnp.asarray(self.eps2, dtype)
        warm = self.cold_start() if carry.warm is None else carry.warm
        mu0, omega0 = jnp.asarray(warm.mu, dtype), jnp.asarray(warm.omega, dtype)
        rng = lambda_range(gaps, info, eps2)
        game = solver.inner_for("finite")
        scale = jnp.max(jnp.abs(gaps))

        def solve_at(lam, mu_init, om_init):
            # Tolerance relative to the scale of v(lam) = dec^o + lam eps2, not of dec^o alone
            # (which is ~0 for large lam); 1e-3 * max|Delta| keeps lam = 0 from chasing a zero.
            # The game's rounding floor comes on top (FiniteOffset.floor).
            return S.inner_point(game, self.at(lam), mu_init, om_init, rtol=solver.inner_rtol,
                                 atol=solver.inner_rtol * (lam * eps2 + 1e-3 * scale))

        def interval_bounds(lams, lowers, mino, eps2_):
            return _interval_bounds(lams, lowers, *mino, eps2_, subdivide=solver.subdivide)

        family = lambda_search.Family(solve_at=solve_at, minorant=lambda sols: (sols.omega @ gaps.T, sols.omega @ info.T),
                                      interval_bounds=interval_bounds)
        p, rounds = solver.lam_refine, solver.lam_rounds
        # The first grid (lam = 0 and a geometric grid up to hi) is solved in chunks of p by the
        # same loop as the refinements, so the game solver is compiled once.
        n_init = -(-(solver.lam_grid + 1) // p)
        first = _first_grid(rng, solver, n_init, carry.lam_hint, dtype)
        memory = carry.memory
        # Buffer layout: [first grid (n_init p) | remembered refinements (r) | new refinements
        # (rounds p) | with a memory, the point at hi].
        r = 0 if memory is None else memory.lams.shape[0] - n_init * p
        n = n_init * p + r + rounds * p + (0 if memory is None else 1)
        points = lambda_search.empty_points(n, k, m, (jnp.zeros((k,), dtype), jnp.zeros((k,), dtype)), dtype)
        if memory is None:
            start = lambda_search.start(points)
        else:
            points, seen = _points_from_memory(points, memory, rng, gaps, info, eps2, solver)
            # A model seen before skips the first grid (its games are remembered), unless its
            # lam = 0 game was dropped (then [0, lo) would have no bound): the grid is solved again.
            start = lambda_search.start(points, family, eps2, jnp.where(seen, n_init, 0))
        plan = lambda_search.Rounds(family=family, first=first, eps2=eps2, n_init=n_init, rounds=rounds, p=p,
                                    offset=r, tail=rng.tail, mu0=mu0, omega0=omega0)

        def answer(search, lower):
            cand, solved = lambda_search.candidates(search, eps2, min(solver.candidates, n))
            h, lam_star, _ = jax.vmap(lambda mu: constrained_objective(mu, gaps, info, eps2))(search.points.mus[cand])
            # Only solved slots (finite totals) are candidates: an unused slot's mu is 0, whose
            # "objective" h(0) = 0 is not that of a distribution.
            h = jnp.where(jnp.isfinite(h) & solved, h, jnp.inf)
            pick = jnp.argmin(h)
            mu, omega = search.points.mus[cand[pick]], search.points.omegas[cand[pick]]
            lam = lam_star[pick]
            value = offset_objective(mu, gaps, info, lam) + lam * eps2
            after = self.next_start(mu, omega) if memory is None else _remember(search, eps2, n_init * p, r)
            return loop.Answer(mu=mu, omega=omega, lam=lam, value=value, lower=lower, iterations=search.iterations,
                               carry=after, finite=rng.feasible & jnp.isfinite(h[pick]))

        return S.SearchWork(rounds=plan, start=start, answer=answer)


def solve_acdec(gaps, info, eps2, solver: S.LambdaSearch = S.SOLVERS["lambda-search"],
                warm: WarmStart | None = None, lam_hint=None) -> tuple[DecResult, WarmStart]:
    """dec^ac_eps by a certified branch-and-bound lambda search (traceable; no checks):
    ``solver.solve(FiniteAcdec(gaps, info, eps2), SearchCarry(warm, lam_hint))``.

    See the module docstring. ``warm`` starts every game of the first grid (default:
    uniform mixtures).

    ``lam_hint`` (optional, may be traced): where lam* probably is (an agent's previous
    lam*). When it is > 0 the first chunk of ``lam_refine`` (>= 5) points becomes lam = 0,
    hint * {0.8, 1, 1.25} (clipped to the proven range) and ``lam_refine - 4`` geometric points
    spanning the whole range [hi * lam_lo_ratio, hi], so a basin away from the hint is still
    sampled and the branch and bound (and the certificate) still cover every lam >= 0; when it
    is <= 0, or ``lam_refine < 5``, the search is the plain one.

    Returns:
      ``(DecResult, WarmStart)``: the answer, whose ``value`` = max_g mu (Delta - lam I) e_g
      + lam eps2 at the returned (lam, mu) (= h(mu)), ``lower_bound`` is certified over all
      lam >= 0 and ``omega`` is the game's max-player mixture at the chosen lam; and the warm
      start of the next search.
    """
    return solver.solve(FiniteAcdec(gaps, info, eps2), SearchCarry(warm=warm, lam_hint=lam_hint))


def solve_acdec_memory(gaps, info, eps2, memory: LambdaMemory, solver: S.LambdaSearch = S.SOLVERS["lambda-search"],
                       warm: WarmStart | None = None) -> tuple[DecResult, LambdaMemory]:
    """:func:`solve_acdec` continued from the games an earlier search solved for the same
    matrices (:class:`LambdaMemory`; traceable, no checks).

    With an empty memory this is the plain search (the first grid, then up to ``lam_rounds``
    refinements). Otherwise the first grid is not solved again: the remembered games give
    the totals and the interval bounds at this eps2, and the branch and bound refines from
    there (up to ``lam_rounds`` chunks of ``lam_refine`` games, none if the remembered games
    already certify the tolerance). The range [0, hi] is re-proven for this eps2; the part
    above the largest remembered lam is covered by a point at hi whose dec^o lower bound is
    ``tail - hi eps2`` (and, for lam >= hi, by ``tail``), so the certificate covers every
    lam >= 0 as in the plain search, and a basin away from the remembered points is refined
    as soon as its interval's bound is the smallest.

    Returns:
      ``(DecResult, memory)``: the result and the memory to pass next time (the grid, and the
      ``solver.memory`` refinement points with the smallest totals at this eps2).
    """
    return solver.solve(FiniteAcdec(gaps, info, eps2), SearchCarry(warm=warm, memory=memory))


def solve_acdec_tracking(gaps, info, eps2, lam_center, solver: S.LambdaSearch = S.SOLVERS["lambda-search"],
                         factor: float = 1.5, points: int = 5):
    """A cheap local lambda search for agents that re-solve the ac-DEC every round.

    Evaluates v(lam) at lam = 0 and at ``points`` geometric points lam_center * factor^j,
    j = -(points // 2), ..., points // 2 (one batched call), keeps the best, and returns its
    mu with lam*(mu) and the exact objective h(mu). The regret theorem of Section 3.2 holds for any
    adapted lam_t, so an agent may track lam_t this way; the regret bound then involves
    dec^ac_{eps_t, lam_t} instead of the optimum.

    ``lower_bound`` is certified over *all* lam >= 0, like :func:`solve_acdec`'s: the
    interval bounds between the evaluated lams, the first-order bound from the largest
    evaluated lam to the proven upper end ``hi`` of the range (with dec^o_hi >= tail - hi
    eps2), and ``tail`` beyond it. When the tracked lams miss the basin of the minimiser this
    bound is loose and the ``gap`` large, with status Status.MAX_ITER: the answer is then not
    certified to the tolerance, and says so.

    Returns:
      ``(DecResult, lam_grid)``: the result (``lam`` = lam*(mu)) and the grid point that won,
      which the caller uses as the next centre.
    """
    dtype = gaps.dtype
    eps2 = jnp.asarray(eps2, dtype)
    half = points // 2
    steps = jnp.asarray(factor, dtype) ** jnp.arange(-half, points - half, dtype=dtype)
    lams = jnp.concatenate([jnp.zeros((1,), dtype), lam_center * steps])
    scale = jnp.max(jnp.abs(gaps))
    game = solver.inner_for("finite")
    cold = WarmStart.cold(*gaps.shape, dtype)

    def solve_at(lam):
        return S.inner_point(game, FiniteOffset(gaps, info, lam), cold.mu, cold.omega, rtol=solver.inner_rtol,
                             atol=solver.inner_rtol * (lam * eps2 + 1e-3 * scale))

    sols = jax.vmap(solve_at)(lams)
    totals = sols.upper + lams * eps2
    totals = jnp.where(jnp.isfinite(totals), totals, jnp.inf)
    best = jnp.argmin(totals)
    mu = sols.mu[best]
    _, lam, _ = constrained_objective(mu, gaps, info, eps2)
    value = offset_objective(mu, gaps, info, lam) + lam * eps2
    # Certified lower bound over all lam >= 0 (see the docstring): the evaluated points plus
    # a pseudo-point at hi whose dec^o lower bound is tail - hi eps2.
    rng = lambda_range(gaps, info, eps2)
    i_last = jnp.argmax(lams)
    pts = jnp.concatenate([lams, jnp.maximum(rng.hi, lams[i_last])[None]])
    lows = jnp.concatenate([sols.lower, (rng.tail - rng.hi * eps2)[None]])
    oms = jnp.concatenate([sols.omega, sols.omega[i_last][None]])
    _, _, bounds = _interval_bounds(pts, lows, oms @ gaps.T, oms @ info.T, eps2, subdivide=solver.subdivide)
    lower = jnp.minimum(jnp.min(bounds), rng.tail)
    answer = loop.Answer(mu=mu, omega=sols.omega[best], lam=lam, value=value, lower=lower,
                         iterations=jnp.sum(sols.iterations).astype(jnp.int32), carry=None, finite=rng.feasible)
    status = loop.status(answer, solver.rtol, solver.atol + _noise_floor(gaps, info, 0.0))
    result = DecResult(mu=mu, lam=lam, value=value, lower_bound=lower, gap=value - lower, status=status,
                       iterations=answer.iterations, omega=answer.omega)
    return result, lams[best]


# --------------------------------------------------------------------------------------
# Problems and public functions


def _check_matrices(gaps, info):
    for name, x in (("gaps", gaps), ("info", info)):
        V.check_floating(name, x)
    if jnp.ndim(gaps) != 2:
        raise ValueError(f"gaps must have shape (K, M) (rows actions, columns models), got {jnp.shape(gaps)}")
    k, m = jnp.shape(gaps)
    if k < 2:
        raise ValueError(f"gaps must have K >= 2 rows (actions), got K={k}")
    if m < 2:
        raise ValueError(f"gaps must have M >= 2 columns (models), got M={m}")
    V.check_shape("info", info, (k, m), what="(K, M) like gaps")
    V.check_finite("gaps", gaps)
    V.check_finite("info", info)
    if V.is_concrete(info) and np.min(np.asarray(info)) < 0:
        raise ValueError(f"info must be nonnegative (a divergence), got min {np.min(np.asarray(info))}")


def _dtype(*xs):
    dt = jnp.result_type(*xs)
    return dt if jnp.issubdtype(dt, jnp.floating) else jax.dtypes.canonicalize_dtype(jnp.float64)


def _warm(mu0, omega0, k, m, dtype):
    """The warm start of the public functions' ``mu0`` / ``omega0`` (None: a cold start)."""
    if mu0 is None and omega0 is None:
        return None
    cold = WarmStart.cold(k, m, dtype)
    if mu0 is not None:
        V.check_shape("mu0", mu0, (k,))
    if omega0 is not None:
        V.check_shape("omega0", omega0, (m,))
    return WarmStart(cold.mu if mu0 is None else jnp.asarray(mu0, dtype),
                     cold.omega if omega0 is None else jnp.asarray(omega0, dtype), cold.step)


@functools.partial(jax.jit, static_argnames=("solver",))
def _offset_jit(gaps, info, lam, warm, *, solver):
    return solve_offset(gaps, info, lam, solver, warm)[0]


@functools.partial(jax.jit, static_argnames=("solver",))
def _acdec_jit(gaps, info, eps2, warm, *, solver):
    return solve_acdec(gaps, info, eps2, solver, warm)[0]


def matrices(model: finite_envs.FiniteModel, f, gap_type: str = "delta_f"):
    """The (K, M) gap and information matrices of a class at the reference model ``f``.

    Args:
      model: the finite class.
      f: the reference model: an index into the class, or ``(rewards (K,), obs)`` with ``obs``
        of the class's observation family and shape (K, m).
      gap_type: ``"delta_f"`` (Delta_f, default) or ``"delta"`` (Delta).

    Returns:
      ``(gaps, info)``: Delta or Delta_f, and I_f(pi, g) = KL(M_g(pi) || M_f(pi)).
    """
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    if isinstance(f, tuple):
        rewards_f, obs_f = f
    else:
        if V.is_concrete(f):
            arr = np.asarray(f)
            if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.integer) or not 0 <= int(arr) < model.num_models:
                raise ValueError(f"f must be an index into the class (0 <= f < M={model.num_models}) or a pair "
                                 f"(rewards, obs), got {f!r}")
        rewards_f, obs_f = finite_envs.model_at(model, f)
    gaps = (finite_envs.gap_matrix(model.rewards) if gap_type == "delta"
            else finite_envs.gap_matrix_f(model.rewards, rewards_f))
    return gaps, finite_envs.info_matrix(model, obs_f)


def _problem(fn: str, problem: tuple, last: str, gap_type: str):
    """``(model, f, x)`` or ``(gaps, info, x)`` -> (gaps, info, x), checked."""
    if len(problem) != 3:
        raise ValueError(f"{fn} takes (model, f, {last}) or (gaps, info, {last}), got {len(problem)} positional "
                         "arguments")
    first, second, x = problem
    if isinstance(first, finite_envs.FiniteModel):
        gaps, info = matrices(first, second, gap_type)
    else:
        if gap_type != "delta_f":
            raise ValueError(f"gap_type applies to {fn}(model, f, {last}); with matrices, pass the gap matrix "
                             "you want as gaps")
        gaps, info = first, second
    _check_matrices(gaps, info)
    return gaps, info, x


def finite_offset_dec(*problem, solver=None, gap_type: str = "delta_f", mu0=None, omega0=None,
                      **options) -> DecResult:
    """The offset DEC of a finite class, min_mu max_g mu (Delta - lam I) e_g, with a certificate.

    A matrix game solved by a primal-dual interior-point method (``solver="ipm"``, default) or
    optimistic mirror-prox on both simplices (``solver="saddle"``); the certificate is
    exact: ``value`` = max_g (mu A)_g at the returned mu and ``lower_bound`` =
    min_pi (A omega)_pi, A = Delta - lam I. Jittable and vmappable.

    Call it as ``finite_offset_dec(model, f, lam)`` with a
    :class:`~e2d_jax.envs.finite.FiniteModel` and a reference model ``f`` (an index or
    ``(rewards, obs)``; see :func:`matrices`), or ``finite_offset_dec(gaps, info, lam)`` with
    the matrices.

    Args:
      *problem: ``(model, f, lam)`` or ``(gaps, info, lam)``: gaps (K, M) Delta (or
        Delta_f), K >= 2 actions, M >= 2 models; info (K, M) I_f >= 0; lam () >= 0.
      solver: a solver value or name of :mod:`e2d_jax.dec.solvers` that solves the finite
        offset DEC: ``"ipm"`` (:class:`~e2d_jax.dec.solvers.MatrixGameIPM`, the default) or
        ``"saddle"`` (mirror-prox, warm-startable).
      gap_type: with a model, ``"delta_f"`` (default) or ``"delta"``.
      mu0: optional (K,) / (M,) warm starts.
      omega0: see ``mu0``.
      **options: fields of the solver (e.g. ``maxiter``, ``rtol``, ``atol``) to change. The
        absolute tolerance always includes a rounding floor 50 eps (max|Delta| + lam max|I|)
        (eps of the dtype: ~1e-4 relative is what float32 reaches).

    Returns:
      DecResult: ``mu`` (K,), ``lam`` (), ``value`` (), ``lower_bound``, ``gap`` = value -
      lower_bound, ``iterations``, ``status`` and ``omega`` (M,) the max player's mixture.

    References:
      Kirschner et al. (2023), Section 'The Decision-Estimation Coefficient' (dec^o_lam).
    """
    gaps, info, lam = _problem("finite_offset_dec", problem, "lam", gap_type)
    V.check_positive("lam", lam, allow_zero=True)
    solver = S.resolve(solver, "finite", "offset", gap_type, **options)
    dtype = _dtype(gaps, info)
    k, m = jnp.shape(gaps)
    return S.in_float64(lambda dt: _offset_jit(jnp.asarray(gaps, dt), jnp.asarray(info, dt), jnp.asarray(lam, dt),
                                                _warm(mu0, omega0, k, m, dt), solver=solver), dtype, gaps, info, lam)


def finite_acdec(*problem, solver=None, gap_type: str = "delta_f", mu0=None, omega0=None,
                 **options) -> DecResult:
    """The average-constrained DEC of a finite class, with a certificate.

    Solves min_mu max_nu {mu Delta nu : mu I nu <= eps2} = min_{lam >= 0} dec^o_lam + lam eps2
    (Section 3.1) by a batched, certified branch-and-bound search over lam
    whose every point is a matrix game (see the module docstring). Jittable and vmappable.

    Requires a column g0 with max_pi info[pi, g0] < eps2 (in E2D, the reference model's own
    column, which is 0); otherwise the program may be unbounded and a ValueError is raised
    (for traced inputs the status is Status.NONFINITE).

    Call it as ``finite_acdec(model, f, eps2)`` with a class and a reference model ``f`` (an
    index or ``(rewards, obs)``; see :func:`matrices`), or ``finite_acdec(gaps, info, eps2)``
    with the matrices.

    Args:
      *problem: ``(model, f, eps2)`` or ``(gaps, info, eps2)``: gaps (K, M) Delta (or
        Delta_f), K >= 2, M >= 2; info (K, M) I_f >= 0; eps2 () eps^2 > 0.
      solver: a solver value or name of :mod:`e2d_jax.dec.solvers` that solves the finite
        ac-DEC (default ``"lambda-search"``, :class:`~e2d_jax.dec.solvers.LambdaSearch` with
        interior-point games).
      gap_type: with a model, ``"delta_f"`` (default) or ``"delta"``.
      mu0: optional (K,) / (M,) warm starts for every game.
      omega0: see ``mu0``.
      **options: fields of the solver to change (e.g. ``rtol``, ``lam_rounds``).

    Returns:
      DecResult: ``mu`` (K,), ``lam`` () = lam*(mu), ``value`` () = max_g mu (Delta - lam I)
      e_g + lam eps2 = h(mu) the exact objective of mu, ``lower_bound`` certified,
      ``gap``, ``iterations`` (total game iterations), ``status``, ``omega`` (M,).

    References:
      Kirschner et al. (2023), Sections 3.1 and 3.4.
    """
    gaps, info, eps2 = _problem("finite_acdec", problem, "eps2", gap_type)
    V.check_positive("eps2", eps2)
    if V.is_concrete(info) and V.is_concrete(eps2):
        if np.min(np.max(np.asarray(info), axis=0)) >= float(eps2):
            raise ValueError(
                "info must have a column g with max_pi info[pi, g] < eps2 (e.g. the reference "
                "model's own zero column); otherwise the ac-DEC may be unbounded"
            )
    solver = S.resolve(solver, "finite", "acdec", gap_type, **options)
    dtype = _dtype(gaps, info)
    k, m = jnp.shape(gaps)
    return S.in_float64(lambda dt: _acdec_jit(jnp.asarray(gaps, dt), jnp.asarray(info, dt), jnp.asarray(eps2, dt),
                                               _warm(mu0, omega0, k, m, dt), solver=solver), dtype, gaps, info, eps2)
