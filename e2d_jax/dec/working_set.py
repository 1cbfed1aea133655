"""The linear offset DEC on many actions: the interior-point method on a working set of them.

The offset DEC min_mu max_b h_b(mu) of :mod:`e2d_jax.dec.interior_point` has optimal mixtures
of few actions: both players' strategies depend on mu only through V(mu) and <mu, r>, so an
optimal mu (and an optimal max-player mixture omega) needs at most dim Sym(r) + 2 actions
(Caratheodory), and in practice about r. The interior-point method's Newton system is K x K
(its Hessian alone costs K^3 r), so on K in the hundreds or thousands it is the whole round.

Here the method runs on a working set W of m actions (m fixed, so every shape is static): the
restricted program min over mu on W of max over b in W of h_b(mu) is solved by the
interior-point steps of :mod:`e2d_jax.dec.interior_point` unchanged, and after every Newton
iteration its iterate is certified on the *whole* program:

* upper = F(mu) = max over all K actions b of h_b(mu), mu being a mixture of W's actions (so
  feasible), evaluated with the same refinement and accuracy test as the method's own
  certificate (:func:`full_objective`): O(m K r^2);
* lower = min over all K actions j of (omega^T A)_j for the max player's mixture omega on W
  (a mixture over all K actions), A the certificate's payoff matrix at mu: the matrix game's
  value bound of the module docstring of :mod:`e2d_jax.dec.interior_point`, valid for any
  omega (:func:`full_lower`): O(K r^2).

So the answer's gap is certified on the program over all K actions whatever W is. The set
changes where the restricted program is solved better than the whole one (its gap less than
``SWAP_GAP`` of the whole one's, so that a restarted set is solved well before it changes
again, and less than ``SWAP_REL`` of its own value, so that a whole gap left wide by a weak
lower bound does not change the set before the restricted program is solved at all): the
actions whose constraint the iterate violates most (h_b above the restricted maximum) and
those the min player would move to (the smallest (omega^T A)_j, below the restricted minimum)
replace the members with the least mass in mu + omega, a quarter of the set at a time, and the
restricted method restarts around the current mixtures (its warm start). The first set holds
the warm start's support, then the actions with the largest h_b at the warm start and those
with the smallest reduced cost, taken in turn.

With m >= K the working set is every action and the method is the plain interior-point method
(:func:`e2d_jax.dec.interior_point.step`).

References:
  Kirschner, Bakhtiari, Chandak, Tkachuk and Szepesvari (2023), Section 3.4 (the linear-DEC
  lemma). Nocedal and Wright (2006), Numerical Optimization, Chapter 16 (active sets).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from e2d_jax import _linalg
from e2d_jax.dec import interior_point as ip
from e2d_jax.dec import loop
from e2d_jax.envs.linear import ObservableSpan

#: Smallest working set, and the working set per span dimension (see :func:`size`).
MIN_SIZE = 32
PER_DIMENSION = 4
#: Share of the working set replaced at once.
SWAP_SHARE = 4
#: The set changes once the restricted program's gap is below this share of the whole one's
#: and below this share of its own value (a whole gap inflated by a weak lower bound would
#: otherwise change the set before the restricted program is solved at all).
SWAP_GAP = 0.25
SWAP_REL = 0.5
#: Up to this many actions the plain method is affordable for :func:`size` with ``rank_one``
#: (its dense Newton system costs K^3 r an iteration, K^3 through the observation rows).
PLAIN_MAX_ACTIONS = 128


def size(num_actions: int, rank: int, requested: int | None = None, gap_type: str = "delta_f",
         rank_one: bool = False) -> int:
    """The working set's size m (m = K is the plain method): ``requested`` (at most K), or by
    default max(MIN_SIZE, PER_DIMENSION r) (at most K). With ``rank_one`` (one observation row
    per action: a round's optimum can spread like a G-optimal design, see
    :func:`e2d_jax.dec.interior_point.support_bound`) the plain method instead where it is
    affordable and the set may not serve: up to ``PLAIN_MAX_ACTIONS`` actions (its dense K x K
    Newton system) where the set may be too small to hold an optimum or the dense form goes
    through the observation rows (r >= ``ROWS_MIN_RANK``: there the set left 5-9% of E2D's
    rounds uncertified at r = 6 and 7 where the plain method certifies them all), and above
    them wherever its factored form applies (:func:`e2d_jax.dec.interior_point.use_factored`,
    K >= 2 p: among hundreds of near-optimal actions the set changes many times before it
    holds an optimum) or the set may be too small and the dense form goes through the rows
    (at r = 30 and K = 300 a set of 120 left every round of E2D uncertified)."""
    if requested is not None:
        return min(int(requested), num_actions)
    m = min(num_actions, max(MIN_SIZE, PER_DIMENSION * rank))
    if not rank_one:
        return m
    small = m < ip.support_bound(rank, gap_type)
    if num_actions <= PLAIN_MAX_ACTIONS:
        return num_actions if small or rank >= ip.ROWS_MIN_RANK else m
    rows = small and rank >= ip.ROWS_MIN_RANK
    return num_actions if ip.use_factored(num_actions, rank, gap_type) or rows else m


class WorkingSetState(NamedTuple):
    """The working set, the restricted method's state and the best certificate over all K."""

    active: jax.Array  # (m,) int32, the working set's actions
    inner: ip.InteriorPointState  # the restricted program's interior-point state
    best_mu: jax.Array  # (K,) float, mu with the lowest certified F over all K so far
    best_omega: jax.Array  # (K,) float, the max player's mixture paired with best_mu
    upper: jax.Array  # () float, F(best_mu) over all K
    lower: jax.Array  # () float, highest certified lower bound over all K
    iter_num: jax.Array  # () int32, Newton iterations taken
    swaps: jax.Array  # () int32, changes of the working set


def restricted(s: ObservableSpan, r, active) -> tuple[ObservableSpan, jax.Array]:
    """The program on the working set: its span (features and Gram matrices of the actions
    ``active``; the same null directions and basis) and its rewards."""
    return s.take(active), r[active]


def _embed(x, active, k):
    return jnp.zeros((k,), x.dtype).at[active].set(x)


def full_objective(mu_w, active, s: ObservableSpan, r, lam, gap_type: str):
    """``(F(mu), h (K,))``: the objective over all K of mu, a mixture (m,) of the actions
    ``active``, as :func:`e2d_jax.dec.interior_point.evaluate` evaluates it (the minorant with one
    refinement step whose residual is formed term by term over mu's actions, plus its estimated
    shortfall; +inf where V(mu) is singular to working precision along some x_b)."""
    grams_w = s.grams[active]
    v = jnp.einsum("p,pij->ij", mu_w, grams_w) + s.null_proj
    low = _linalg.psd_cholesky(v)
    mu_phi = mu_w @ s.features[active]
    x = s.features if gap_type == "delta_f" else s.features - mu_phi  # (K, r)

    def residual(w, gw):  # sum_p mu_p (G_p w_b): each G_p w_b formed first, not through the rounded V
        return x.T - jnp.einsum("p,pib->ib", mu_w, gw) - s.null_proj @ w

    w = _linalg.cholesky_solve(low, x.T)
    w = w + _linalg.cholesky_solve(low, residual(w, jnp.einsum("pij,jb->pib", grams_w, w)))
    gw = jnp.einsum("pij,jb->pib", grams_w, w)  # (m, r, K)
    rho = residual(w, gw)
    shortfall = jnp.einsum("ib,ib->b", rho, _linalg.cholesky_solve(low, rho))
    # (A mu)_b = r_b - <mu, r> + (2 x_b^T w_b - sum_j mu_j w_b^T (G_j + null) w_b) / (4 lambda)
    # (for gaps Delta, sum_j mu_j (phi_b - phi_j) = x_b).
    wgw = jnp.einsum("p,pb->b", mu_w, jnp.einsum("pib,ib->pb", gw, w))
    wnw = jnp.einsum("ib,ij,jb->b", w, s.null_proj, w)
    c = 2.0 * jnp.einsum("bi,ib->b", x, w) - wgw - wnw
    h = r - mu_w @ r[active] + (c + shortfall) / (4.0 * lam)
    accurate = jnp.all(shortfall <= ip.SHORTFALL * (c + shortfall)) & jnp.all(jnp.isfinite(h))
    return jnp.where(accurate, jnp.max(h), jnp.inf), h, w


def full_lower(om_w, active, w, s: ObservableSpan, r, lam, gap_type: str):
    """``(lower, (omega^T A)_j (K,))``: the matrix-game bound min_j (omega^T A)_j over all K
    actions j for the max player's mixture omega (m,) on ``active``, with A's minorants at the
    weights ``w`` (r, K) of :func:`full_objective` (any weights give a valid bound)."""
    om = om_w / jnp.sum(om_w)
    w_b = w[:, active]  # (r, m)
    x_b = s.features[active] if gap_type == "delta_f" else None
    p = jnp.einsum("b,ib,jb->ij", om, w_b, w_b)  # sum_b omega_b w_b w_b^T
    if gap_type == "delta_f":
        cross = 2.0 * jnp.einsum("b,bi,ib->", om, x_b, w_b) * jnp.ones_like(r)
    else:  # (phi_b - phi_j)^T w_b summed with omega: phi_b^T w_b terms less phi_j^T (sum omega_b w_b)
        fb = jnp.einsum("bi,ib->b", s.features[active], w_b)
        cross = 2.0 * (om @ fb - s.features @ (w_b @ om))
    quad = jnp.einsum("jkl,kl->j", s.grams, p) + jnp.sum(s.null_proj * p)
    values = om @ r[active] - r + (cross - quad) / (4.0 * lam)
    return jnp.maximum(jnp.min(values), 0.0), values


def _first_set(mu0, om0, s: ObservableSpan, r, lam, gap_type: str, m: int):
    """The first working set (see the module docstring): the warm start's support, then the
    largest h_b(mu0) and the smallest reduced costs (omega0-weighted gradients) in turn."""
    k = s.features.shape[0]
    v = jnp.einsum("p,pij->ij", mu0, s.grams) + s.null_proj
    x = s.features if gap_type == "delta_f" else s.features - mu0 @ s.features
    w = _linalg.psd_solve_wide(v, x.T)
    h = r + jnp.einsum("ib,bi->b", w, x) / (4.0 * lam)
    p = jnp.einsum("b,ib,jb->ij", om0 / jnp.sum(om0), w, w)
    g = -r - jnp.einsum("jkl,kl->j", s.grams, p) / (4.0 * lam)  # the gradient of omega0.h, up to 1^T terms

    def norm(v):
        v = jnp.where(jnp.isfinite(v), v, jnp.max(jnp.where(jnp.isfinite(v), v, -jnp.inf)))
        return (v - jnp.min(v)) / jnp.maximum(jnp.max(v) - jnp.min(v), jnp.finfo(v.dtype).tiny)

    support = ((mu0 + om0) >= 1e-3 * jnp.max(mu0 + om0)).astype(r.dtype)
    keys = (norm(h), norm(-g))

    def pick(i, carry):
        chosen, active = carry
        key = 2.0 * support + jnp.where(i % 2 == 0, keys[0], keys[1]) - jnp.where(chosen, jnp.inf, 0.0)
        j = jnp.argmax(key).astype(jnp.int32)
        return chosen.at[j].set(True), active.at[i].set(j)

    _, active = lax.fori_loop(0, m, pick, loop.batched_with(support, (jnp.zeros((k,), bool),
                                                                   jnp.zeros((m,), jnp.int32))))
    return active


def _swap(state: WorkingSetState, h, values, m: int):
    """The working set with the most violating actions in place of those with the least mass
    (see the module docstring), and whether any action entered."""
    inner = state.inner
    active = state.active
    k = h.shape[0]
    inside = jnp.zeros((k,), bool).at[active].set(True)
    over = h - jnp.max(h[active])  # constraints the iterate violates
    under = jnp.min(values[active]) - values  # columns that lower the game's bound
    over = jnp.where(inside, -jnp.inf, jnp.where(jnp.isfinite(over), over, jnp.inf))
    under = jnp.where(inside, -jnp.inf, jnp.where(jnp.isfinite(under), under, -jnp.inf))
    mass = inner.mu + inner.omega / jnp.sum(inner.omega)
    n = max(1, m // SWAP_SHARE)
    _, leaving = lax.top_k(-mass, n)

    def pick(i, carry):
        chosen, active, entered = carry
        key = jnp.where(i % 2 == 0, over, under)
        key = jnp.where(chosen, -jnp.inf, key)
        j = jnp.argmax(key).astype(jnp.int32)
        ok = key[j] > 0
        return chosen.at[j].set(chosen[j] | ok), active.at[leaving[i]].set(jnp.where(ok, j, active[leaving[i]])), \
            entered | ok

    _, new, entered = lax.fori_loop(0, n, pick, (inside, active, jnp.zeros((), bool)))
    return new, entered


def init(s: ObservableSpan, r, lam, gap_type: str, mu0, omega0, m: int) -> WorkingSetState:
    """The first working set and the restricted method's start around the warm start."""
    k = s.features.shape[0]
    dtype = s.features.dtype
    mu0 = ip.interior(mu0, k, dtype) if mu0 is not None else jnp.full((k,), 1.0 / k, dtype)
    omega0 = ip.interior(omega0, k, dtype) if omega0 is not None else jnp.full((k,), 1.0 / k, dtype)
    active = _first_set(mu0, omega0, s, r, lam, gap_type, m)
    s_w, r_w = restricted(s, r, active)
    inner = ip.init(s_w, r_w, lam, gap_type, mu0[active], omega0[active])
    upper, h, w = full_objective(inner.mu, active, s, r, lam, gap_type)
    lower, _ = full_lower(inner.omega, active, w, s, r, lam, gap_type)
    return WorkingSetState(active=active, inner=inner, best_mu=_embed(inner.mu, active, k),
                           best_omega=_embed(inner.omega / jnp.sum(inner.omega), active, k), upper=upper,
                           lower=jnp.where(jnp.isfinite(lower), lower, 0.0), iter_num=jnp.zeros((), jnp.int32),
                           swaps=jnp.zeros((), jnp.int32))


def step(s: ObservableSpan, r, lam, state: WorkingSetState, gap_type: str, m: int) -> WorkingSetState:
    """One Newton iteration of the restricted method, the certificate over all K of its iterate
    (and of its purified neighbour), and, where the restricted program is solved better than
    the whole one, a change of the working set."""
    k = s.features.shape[0]
    s_w, r_w = restricted(s, r, state.active)
    inner = ip.step(s_w, r_w, lam, state.inner, gap_type, many=False)
    active = state.active
    upper, h, w = full_objective(inner.mu, active, s, r, lam, gap_type)
    lower, values = full_lower(inner.omega, active, w, s, r, lam, gap_type)
    mu_p = jnp.where(inner.mu >= ip.PURIFY * jnp.max(inner.mu), inner.mu, 0.0)
    mu_p = mu_p / jnp.sum(mu_p)
    upper_p, _, _ = full_objective(mu_p, active, s, r, lam, gap_type)
    om = inner.omega / jnp.sum(inner.omega)
    better = upper < state.upper
    best_mu = jnp.where(better, _embed(inner.mu, active, k), state.best_mu)
    best_omega = jnp.where(better, _embed(om, active, k), state.best_omega)
    best_upper = jnp.where(better, upper, state.upper)
    better_p = upper_p < best_upper
    best_mu = jnp.where(better_p, _embed(mu_p, active, k), best_mu)
    best_omega = jnp.where(better_p, _embed(om, active, k), best_omega)
    best_upper = jnp.where(better_p, upper_p, best_upper)
    best_lower = jnp.where(jnp.isfinite(lower), jnp.maximum(state.lower, lower), state.lower)
    # A new working set where the restricted program's gap is below SWAP_GAP of the whole one's
    # and SWAP_REL of its own value.
    inner_gap = inner.upper - inner.lower
    want = (inner_gap <= SWAP_GAP * (best_upper - best_lower)) & (inner_gap <= SWAP_REL * jnp.abs(inner.upper))
    new_active, entered = _swap(state._replace(inner=inner), h, values, m)
    swap = want & entered
    mu_next = _embed(inner.mu, active, k)[new_active]
    om_next = _embed(om, active, k)[new_active]
    s_new, r_new = restricted(s, r, new_active)
    restart = ip.init(s_new, r_new, lam, gap_type, mu_next, om_next)
    restart = restart._replace(iter_num=inner.iter_num)
    inner = jax.tree_util.tree_map(lambda a, b: jnp.where(swap, a, b), restart, inner)
    return WorkingSetState(active=jnp.where(swap, new_active, active), inner=inner, best_mu=best_mu,
                           best_omega=best_omega, upper=best_upper, lower=best_lower, iter_num=state.iter_num + 1,
                           swaps=state.swaps + swap.astype(jnp.int32))


def halted(state: WorkingSetState) -> jax.Array:
    """Stop without the tolerance: a NaN objective, an infinite lower bound, or four rejected
    Newton steps in a row of the restricted method."""
    return jnp.isnan(state.upper) | ~jnp.isfinite(state.lower) | (state.inner.failures >= 4)
