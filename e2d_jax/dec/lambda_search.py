"""lambda by a vectorised grid search, refined, with a certified lower bound over the range.

The average-constrained DEC is min_{lambda >= 0} v(lambda), v(lambda) = dec^o_lambda + lambda
eps^2 (paper eq. (different-decs)). v need not be convex, so we search a geometric grid that
provably contains the minimiser (see ``e2d_jax.dec.linear.lambda_range``), solve every grid
point in one batched call, then zoom in twice around the best point with finer batched grids.

Certified lower bound. For lambda in [l_i, l_{i+1}], the fixed-lambda objective
max_b a_b + c_b / (4 lambda) decreases in lambda and lambda eps^2 increases, so
``v(lambda) >= lb(l_{i+1}) + l_i eps^2`` where lb(l) is the inner solver's certified lower
bound at l. The minimum of that over consecutive points of all evaluated lambdas (sorted)
bounds min v from below over the whole proven range. A minimiser between coarse grid points
is thus never missed silently: it shows up as a larger certified gap.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp


class GridResult(NamedTuple):
    lam: jax.Array  # () best lambda found
    index_solution: object  # the inner solution (pytree) at the best lambda
    value: jax.Array  # () inner upper + lam * eps2 at the best lambda
    lower_bound: jax.Array  # () certified lower bound on min_lambda v(lambda) over the range
    evaluations: jax.Array  # () int32 number of inner solves
    iterations: jax.Array  # () int32 total inner iterations


def grid_search(
    solve_at: Callable,
    lam_lo: jax.Array,
    lam_hi: jax.Array,
    eps2: jax.Array,
    *,
    num: int = 50,
    refine: int = 12,
    rounds: int = 2,
) -> GridResult:
    """Searches lambda in [lam_lo, lam_hi].

    Args:
      solve_at: ``lam () -> solution`` with fields ``upper`` (inner value at lam, without
        lam * eps2), ``lower`` (certified inner lower bound) and ``iterations``; it is
        ``vmap``-ed over the grid.
      lam_lo: a range known to contain the minimiser (0 < lam_lo < lam_hi).
      lam_hi: see ``lam_lo``.
      eps2: the radius eps^2.
      num: points in the first grid (geometric).
      refine: points in each refinement grid.
      rounds: refinement rounds (0 = grid only).
    """
    batched = jax.vmap(solve_at)
    lams = jnp.geomspace(lam_lo, lam_hi, num)
    sols = batched(lams)
    all_lams, all_sols = [lams], [sols]
    left_idx = lambda i, n: jnp.clip(i - 1, 0, n - 1)
    cur_lams, cur_sols = lams, sols
    for _ in range(rounds):
        total = cur_sols.upper + cur_lams * eps2
        total = jnp.where(jnp.isfinite(total), total, jnp.inf)
        i = jnp.argmin(total)
        n = cur_lams.shape[0]
        lo = cur_lams[left_idx(i, n)]
        hi = cur_lams[jnp.clip(i + 1, 0, n - 1)]
        # Interior points only: the end points were solved already.
        cur_lams = jnp.geomspace(lo, hi, refine + 2)[1:-1]
        cur_sols = batched(cur_lams)
        all_lams.append(cur_lams)
        all_sols.append(cur_sols)
    lams = jnp.concatenate(all_lams)
    sols = jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *all_sols)
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
