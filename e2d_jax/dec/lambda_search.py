"""lambda, the multiplier of the average-constrained DEC, searched with a certificate.

The average-constrained DEC is min_{lambda >= 0} v(lambda), v(lambda) = dec^o_lambda + lambda
eps^2 (paper eq. (different-decs)). v need not be convex, so lambda is searched over a range
that provably contains the minimiser, with a certified lower bound over the whole range.
Two searches live here:

* the grid (:func:`grid_start`, :func:`grid_refine`, :func:`grid_result`): a geometric grid
  solved in one batched call, zoomed in twice around the best point (the grid solvers, the
  paper's mode);
* best-first branch and bound (:func:`start`, :func:`round_step`, :func:`certified`; the
  :class:`~e2d_jax.dec.solvers.LambdaSearch` solver): each round solves ``p`` new lambdas in
  one batched call inside the interval whose certified lower bound is the smallest, so a
  second basin between grid points is never missed silently, and it stops when the certified
  gap meets the tolerance.

The solvers of :mod:`e2d_jax.dec.solvers` take these steps in the certified loop of
:mod:`e2d_jax.dec.loop` (a grid's rounds unrolled; the branch and bound's rounds a
``lax.while_loop`` with fixed-size buffers, so the inner solver is compiled once).

Certified lower bounds on an interval [l_i, l_{i+1}] between evaluated lambdas:

* zero order: dec^o decreases in lambda (the information term is >= 0) and lambda eps^2
  increases, so v(lambda) >= lb(l_{i+1}) + l_i eps^2, with lb(l) the inner solver's certified
  lower bound at l;
* first order (the branch and bound only): every evaluated point also gives a *minorant*,
  a function m(lambda) <= dec^o_lambda for every lambda that equals (about) dec^o at its own
  point: for a finite class the game's value at a fixed max-player mixture omega, min_pi
  (Delta omega - lambda I omega)_pi; for a linear model the linearisation at the solution mu
  of the Lagrangian at omega. The model family supplies the minorants and their exact
  minimum over an interval; the larger of the two bounds is kept.

A minimiser between coarse grid points is thus never missed silently: it shows up as a
larger certified gap, and the branch and bound refines there.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax


class GridResult(NamedTuple):
    lam: jax.Array  # () best lambda found
    index_solution: object  # the inner solution (pytree) at the best lambda
    value: jax.Array  # () inner upper + lam * eps2 at the best lambda
    lower_bound: jax.Array  # () certified lower bound on min_lambda v(lambda) over the range
    evaluations: jax.Array  # () int32 number of inner solves
    iterations: jax.Array  # () int32 total inner iterations


class GridState(NamedTuple):
    """The rounds of a grid search so far (its rounds are unrolled: the arrays of each round
    have that round's size)."""

    lams: tuple  # each round's lambdas
    sols: tuple  # each round's inner solutions (pytrees with a leading axis)


def grid_start(solve_at: Callable, lam_lo, lam_hi, num: int) -> GridState:
    """The first grid: ``num`` geometric points on [lam_lo, lam_hi], a range known to contain
    the minimiser, solved in one batched call.

    ``solve_at``: ``lam () -> solution`` with fields ``upper`` (inner value at lam, without
    lam * eps2), ``lower`` (certified inner lower bound), ``iterations``, ``mu`` and
    ``omega``; it is ``vmap``-ed over the grid.
    """
    lams = jnp.geomspace(lam_lo, lam_hi, num)
    return GridState(lams=(lams,), sols=(jax.vmap(solve_at)(lams),))


def grid_refine(solve_at: Callable, state: GridState, eps2, refine: int) -> GridState:
    """One refinement round: ``refine`` points strictly between the neighbours of the last
    round's best point (its end points were solved already)."""
    cur_lams, cur_sols = state.lams[-1], state.sols[-1]
    total = cur_sols.upper + cur_lams * eps2
    total = jnp.where(jnp.isfinite(total), total, jnp.inf)
    i = jnp.argmin(total)
    n = cur_lams.shape[0]
    lo = cur_lams[jnp.clip(i - 1, 0, n - 1)]
    hi = cur_lams[jnp.clip(i + 1, 0, n - 1)]
    lams = jnp.geomspace(lo, hi, refine + 2)[1:-1]
    return GridState(lams=state.lams + (lams,), sols=state.sols + (jax.vmap(solve_at)(lams),))


def grid_result(state: GridState, eps2) -> GridResult:
    """The best point of every round's, and the certified lower bound over the range."""
    lams = jnp.concatenate(state.lams)
    sols = jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *state.sols)
    total = sols.upper + lams * eps2
    total = jnp.where(jnp.isfinite(total), total, jnp.inf)
    best = jnp.argmin(total)
    order = jnp.argsort(lams)
    sl, slb = lams[order], sols.lower[order]
    lower = jnp.min(slb[1:] + sl[:-1] * eps2)
    return GridResult(
        lam=lams[best],
        index_solution=jax.tree_util.tree_map(lambda x: x[best], sols),
        value=total[best],
        lower_bound=lower,
        evaluations=jnp.asarray(lams.shape[0], jnp.int32),
        iterations=jnp.sum(sols.iterations).astype(jnp.int32),
    )


# --------------------------------------------------------------------------------------
# Best-first branch and bound


class Points(NamedTuple):
    """The lambdas a search has evaluated, in fixed-size buffers (unused slots: lam = +inf).

    Attributes:
      lams: (N,) the evaluated lambdas.
      uppers: (N,) dec^o at each lambda: the exact objective of its mu.
      lowers: (N,) a certified lower bound on dec^o at each lambda.
      mus: (N, K) the min player's solution at each lambda.
      omegas: (N, M) the max player's mixture at each lambda.
      minorant: a pytree of (N, ...) arrays, each point's minorant of dec^o (see the module
        docstring; its meaning belongs to the model family).
    """

    lams: jax.Array
    uppers: jax.Array
    lowers: jax.Array
    mus: jax.Array
    omegas: jax.Array
    minorant: Any


class Search(NamedTuple):
    """The state of the branch and bound (:func:`round_step`): the points, the sorted order of their lambdas,
    the certified lower bound of v on each interval between consecutive sorted lambdas, the
    inner iterations spent and the round."""

    points: Points
    order: jax.Array  # (N,) argsort of points.lams
    bounds: jax.Array  # (N - 1,) certified lower bound of v on each interval
    iterations: jax.Array  # () int32
    round: jax.Array  # () int32


class Family(NamedTuple):
    """What the branch and bound (:func:`round_step`) needs of a model family's problem.

    Attributes:
      solve_at: ``(lam, mu_init, omega_init) -> solution`` with fields ``upper``, ``lower``,
        ``mu``, ``omega``, ``iterations``: the offset DEC at one lambda (vmapped over lambdas).
      minorant: ``solutions -> pytree``: the points' minorants from a batch of solutions.
      interval_bounds: ``(lams, lowers, minorant, eps2) -> (order, sorted lams, bounds)``: the
        certified lower bound of v on each interval between consecutive sorted lambdas
        (``+inf`` where the right end is an unused slot).
    """

    solve_at: Callable
    minorant: Callable
    interval_bounds: Callable


def totals(points: Points, eps2):
    """v at each evaluated lambda, dec^o + lambda eps^2 (+inf in unused slots)."""
    t = points.uppers + points.lams * eps2
    return jnp.where(jnp.isfinite(t), t, jnp.inf)


def empty_points(n: int, num_actions: int, num_omega: int, minorant, dtype) -> Points:
    """``n`` unused slots; ``minorant`` is one point's minorant (its shapes)."""
    inf = jnp.full((n,), jnp.inf, dtype)
    mino = jax.tree_util.tree_map(lambda x: jnp.zeros((n,) + jnp.shape(x), dtype), minorant)
    return Points(lams=inf, uppers=inf, lowers=inf, mus=jnp.zeros((n, num_actions), dtype),
                  omegas=jnp.zeros((n, num_omega), dtype), minorant=mino)


def start(points: Points, family: Family | None = None, eps2=None, round_=0) -> Search:
    """A search state at ``round_`` from points: unevaluated (``family`` None: no interval has
    a bound yet) or holding evaluated points (remembered ones), whose interval bounds are
    computed."""
    n = points.lams.shape[0]
    dtype = points.lams.dtype
    if family is None:
        order, bounds = jnp.arange(n), jnp.full((n - 1,), jnp.inf, dtype)
    else:
        order, _, bounds = family.interval_bounds(points.lams, points.lowers, points.minorant, eps2)
    return Search(points=points, order=order, bounds=bounds, iterations=jnp.zeros((), jnp.int32),
                  round=jnp.asarray(round_, jnp.int32))


def certified(search: Search, eps2, tail):
    """``(best v evaluated, certified lower bound on min v)``; ``tail`` bounds v beyond the
    range's upper end (+inf when the range is proven to contain the minimiser)."""
    return jnp.min(totals(search.points, eps2)), jnp.minimum(jnp.min(search.bounds), tail)


def _put(buf, new, at):
    return lax.dynamic_update_slice_in_dim(buf, new.astype(buf.dtype), at, axis=0)


def next_lams(search: Search, first, n_init: int, p: int, eps2):
    """The ``p`` lambdas of the next round and the slot they start from: the next chunk of the
    first grid during the first ``n_init`` rounds, then ``p`` points inside the interval with
    the smallest certified lower bound (geometric, or linear from 0), warm-started from its
    better end. Returns ``(lams (p,), initial, start_from)``."""
    s = search
    dtype = s.points.lams.dtype
    sl = s.points.lams[s.order]
    i = jnp.argmin(s.bounds)
    left, right = sl[i], sl[i + 1]
    frac = jnp.arange(1, p + 1, dtype=dtype) / (p + 1)
    safe_left = jnp.where(left > 0, left, 1.0)
    refined = jnp.where(left > 0, safe_left * (right / safe_left) ** frac, right * frac)
    tot = totals(s.points, eps2)
    jl, jr = s.order[i], s.order[i + 1]
    start_from = jnp.where(tot[jl] <= tot[jr], jl, jr)
    initial = s.round < n_init
    chunk = lax.dynamic_slice_in_dim(first, jnp.minimum(s.round, n_init - 1) * p, p)
    return jnp.where(initial, chunk, refined), initial, start_from


class Rounds(NamedTuple):
    """How a branch and bound runs: the first grid ``first`` (``n_init`` chunks of ``p``
    lambdas), then up to ``rounds`` best-first refinements of ``p`` lambdas each.

    Slots: the first grid's chunk j goes to ``[j p, (j + 1) p)``, refinement round j (counted
    with the grid's rounds) to ``offset + j p`` (``offset`` leaves room for remembered points).
    ``tail`` is a lower bound on v beyond the range, ``mu0`` / ``omega0`` the warm start of the
    first grid's solves.
    """

    family: Family
    first: jax.Array
    eps2: jax.Array
    n_init: int
    rounds: int
    p: int
    offset: int
    tail: jax.Array
    mu0: jax.Array
    omega0: jax.Array


def round_step(s: Search, plan: Rounds) -> Search:
    """One round: ``p`` lambdas (:func:`next_lams`) solved in one batched call of
    ``plan.family.solve_at`` (vmapped over them), written to their slots, and every interval's
    bound recomputed."""
    family, p = plan.family, plan.p
    new, initial, start_from = next_lams(s, plan.first, plan.n_init, p, plan.eps2)
    pts = s.points
    mu_init = jnp.where(initial, plan.mu0, pts.mus[start_from])
    om_init = jnp.where(initial, plan.omega0, pts.omegas[start_from])
    sols = jax.vmap(family.solve_at, in_axes=(0, None, None))(new, mu_init, om_init)
    at = jnp.where(initial, s.round * p, s.round * p + plan.offset)
    lams, lowers = _put(pts.lams, new, at), _put(pts.lowers, sols.lower, at)
    minorant = jax.tree_util.tree_map(lambda buf, x: _put(buf, x, at), pts.minorant, family.minorant(sols))
    order, _, bounds = family.interval_bounds(lams, lowers, minorant, plan.eps2)
    points = Points(lams=lams, uppers=_put(pts.uppers, sols.upper, at), lowers=lowers,
                    mus=_put(pts.mus, sols.mu, at), omegas=_put(pts.omegas, sols.omega, at), minorant=minorant)
    return Search(points=points, order=order, bounds=bounds,
                  iterations=s.iterations + jnp.sum(sols.iterations).astype(jnp.int32), round=s.round + 1)


def evaluated(s: Search, eps2) -> jax.Array:
    """Whether some evaluated lambda has a finite v (a search with none stops)."""
    return jnp.isfinite(jnp.min(totals(s.points, eps2)))


def candidates(search: Search, eps2, count: int):
    """The slots of the ``count`` evaluated lambdas with the smallest v, and whether each is a
    solved slot (an unused slot's mu is 0, which is not a distribution)."""
    tot = totals(search.points, eps2)
    _, cand = lax.top_k(-tot, count)
    return cand, jnp.isfinite(tot[cand])
