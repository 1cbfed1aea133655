"""Optimistic mirror-prox on two simplices, with a certified duality gap.

Solves ``min_{mu in simplex_K} max_{omega in simplex_N} L(mu, omega)`` for L convex in mu and
concave in omega, given

* ``grads(mu, omega) -> (g_mu, g_omega)``: the partial gradients of L;
* ``certificate(mu, omega) -> (upper, lower[, aux...])``: ``upper`` = max_omega' L(mu, omega'), the exact
  objective of ``mu``, and ``lower`` a valid lower bound on the optimal value (for example the
  linearisation bound ``L(mu, omega) + min_pi g_mu[pi] - <g_mu, mu>``, valid for any omega
  because L(., omega) is convex and below the objective). Anything the certificate returns
  after the two bounds (``aux``) is kept for the best ``mu`` and returned as the solution's
  ``aux`` (e.g. the exact value's minimising lambda, so that it is not computed again).

The iteration is the optimistic ("past extra-gradient") form of Nemirovski's mirror-prox with
the entropy on both simplices (Rakhlin and Sridharan, 2013; Popov, 1980): one gradient per
iteration,

    w_t     = z_t     * exp(-eta_t F(w_{t-1}))   (normalised per simplex)
    z_{t+1} = z_t     * exp(-eta_t F(w_t))

with F = (g_mu, -g_omega). It converges at rate O(1/T) on smooth problems. The step eta_t
adapts per problem: it grows by 1.2 while the prox inequality
``eta <F(w_t) - F(w_{t-1}), w_t - z_{t+1}> <= KL(z_{t+1}||w_t) + KL(w_t||z_t)`` holds and halves
when it fails. Nothing in the answer relies on the adaptation being right: correctness comes
from the certificate, which is re-evaluated every ``check_every`` iterations at both the last
iterate and the step-weighted average; the best upper bound and its mu, and the best lower
bound seen, are kept. The gap ``upper - lower`` is therefore monotone and certified.

Loop: blocks of ``check_every`` steps, each followed by the certificate (:func:`block`), run
by the certified loop of :mod:`e2d_jax.dec.loop` (the :class:`~e2d_jax.dec.solvers.Saddle`
solver's steps): one block without a loop when ``maxiter <= check_every``, as in the agents'
budget, otherwise a ``lax.while_loop`` that stops when ``gap <= rtol * |upper| + atol`` or after
``maxiter`` iterations. Under ``vmap`` the loop runs until the slowest problem stops; finished
problems keep their values (JAX selects on the batched predicate).

Working sets (:func:`working_set_init`, :func:`working_set_block`). Where both players play
over K actions (the linear DEC), the optimum's mixtures hold few of them (at most dim Sym(r) + 2)
while every step costs O(K). The steps then run on the program restricted to a working set of
m actions (both players), and after every block the best mu of the block and its averaged mu
are certified on the *whole* program by the form's ``screen``: their objectives over all K (the
upper bound; a mixture of the set's actions is feasible) and the linearisation bounds at the
block's averaged and paired max-player mixtures, with the gradient over all K (the lower bound;
valid for any omega). The answer's certificate is therefore that of the program over every
action, whatever the set holds. The screen also returns what the set lacks: the max player's best response to mu
and the actions whose gradient is below every member's. Once the restricted program is solved
better than the whole one (its gap below ``SWAP_GAP`` of the whole gap), those replace the
members with the least mass, at most a ``SWAP_SHARE``-th of the set at a time, and mirror-prox
restarts from the current mixtures (mixed with ``SWAP_MIX`` of the uniform mixture on the set).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from e2d_jax.dec import loop

# Mass mixed into every iterate (the iterates are kept with their logarithms). A coordinate
# at an exact 0 could never come back under multiplicative updates and could make a design
# matrix singular. Mixing, unlike clamping the logits, keeps each step an exact entropic prox
# up to O(FLOOR), so the step-acceptance test below stays meaningful (clamping instead can
# stall mirror-prox far from the optimum on d = 30 instances that mixing solves to 1e-4).
FLOOR = 1e-9


class SaddleForm(NamedTuple):
    """A program's saddle-point form, as its problem gives it to the
    :class:`~e2d_jax.dec.solvers.Saddle` solver.

    Attributes:
      grads: ``(mu, omega) -> (g_mu, g_omega)``, the partial gradients of L.
      certificate: ``(mu, omega) -> (upper, lower[, aux...])`` (see the module docstring).
      answer: ``(upper, aux) -> (lam, value)``: the multiplier and the objective the answer
        reports for the best mu (an offset program: its lambda and ``upper``).
      screen: for a program whose two players both play over the actions (the linear DEC),
        ``(active, mu, omega) -> (upper, lower, aux..., g_mu, omega_star)``: the certificate of
        mixtures ``mu`` and ``omega`` held on the actions ``active`` (all three (m,); None and
        (K,) mixtures: on all actions; ``omega`` may stack several, (j, m), the lower bound the
        best of theirs), followed by the min player's gradient at them (the first) and the
        max player's best response to ``mu`` (both (K,), over all actions), which say what a
        working set lacks (:func:`working_set_block`); None where the program has no
        working sets.
      restrict: ``active -> SaddleForm``: the same program on the actions ``active`` (both
        players restricted to them); None with ``screen``.
    """

    grads: Callable
    certificate: Callable
    answer: Callable
    screen: Callable | None = None
    restrict: Callable | None = None


class SaddleState(NamedTuple):
    log_mu: jax.Array  # (K,) log of the current iterate z_t, min player
    log_omega: jax.Array  # (N,) log of the current iterate z_t, max player
    g_mu_prev: jax.Array  # (K,) F(w_{t-1}), min-player part
    g_omega_prev: jax.Array  # (N,) F(w_{t-1}), max-player part
    mu_avg: jax.Array  # (K,) step-weighted average of w
    omega_avg: jax.Array  # (N,)
    weight: jax.Array  # () sum of steps in the average
    step: jax.Array  # () eta_t
    best_mu: jax.Array  # (K,) mu with the lowest certified upper bound so far
    best_omega: jax.Array  # (N,) omega paired with best_mu (for warm starts)
    upper: jax.Array  # () lowest exact objective seen
    lower: jax.Array  # () highest valid lower bound seen
    iter_num: jax.Array  # () int32
    best_aux: object = ()  # what the certificate returned beside the bounds, at best_mu


def _normalise_logits(logits):
    """(p, log p) for p = softmax(logits) mixed with FLOOR of the uniform distribution."""
    p = (1.0 - FLOOR) * jax.nn.softmax(logits) + FLOOR / logits.shape[0]
    return p, jnp.log(p)


def _prox(log_z, g, step):
    return _normalise_logits(log_z - step * g)


def _kl(p, log_p, log_q):
    return jnp.sum(p * (log_p - log_q))


def floor_simplex(z):
    """Normalises a nonnegative vector and applies the floor; returns (p, log p)."""
    z = jnp.clip(z, 0.0, None)
    return _normalise_logits(jnp.log(z / jnp.sum(z) + jnp.finfo(z.dtype).tiny))


def init(grads, certificate, mu0, omega0, step0=None) -> SaddleState:
    """Starts from (mu0, omega0) (e.g. the previous round's solution: a warm start).

    ``step0`` (e.g. the previous solve's final step; None or <= 0 for automatic) defaults to
    1 / the spread of the first gradients.
    """
    mu0, log_mu0 = floor_simplex(mu0)
    omega0, log_om0 = floor_simplex(omega0)
    g_mu, g_om = grads(mu0, omega0)
    spread = (jnp.max(g_mu) - jnp.min(g_mu)) + (jnp.max(g_om) - jnp.min(g_om))
    auto = 1.0 / jnp.maximum(spread, 1e-12)
    # step0 <= 0 (or None) means "choose automatically".
    step0 = auto if step0 is None else jnp.where(step0 > 0, step0, auto)
    # The first check certifies; until then the bounds are vacuous (and the aux NaN).
    aux = jax.tree_util.tree_map(lambda x: jnp.full(x.shape, jnp.nan, x.dtype),
                                 jax.eval_shape(certificate, mu0, omega0)[2:])
    dtype = mu0.dtype
    upper, lower = jnp.full((), jnp.inf, dtype), jnp.full((), -jnp.inf, dtype)
    return SaddleState(
        log_mu=log_mu0, log_omega=log_om0, g_mu_prev=g_mu, g_omega_prev=-g_om,
        mu_avg=mu0, omega_avg=omega0, weight=jnp.zeros((), dtype),
        step=jnp.asarray(step0, dtype), best_mu=mu0, best_omega=omega0,
        upper=upper, lower=lower, iter_num=jnp.zeros((), jnp.int32), best_aux=aux,
    )


def step(grads, state: SaddleState) -> SaddleState:
    """One optimistic mirror-prox iteration (one gradient evaluation)."""
    eta = state.step
    w_mu, log_w_mu = _prox(state.log_mu, state.g_mu_prev, eta)
    w_om, log_w_om = _prox(state.log_omega, state.g_omega_prev, eta)
    g_mu, g_om = grads(w_mu, w_om)
    g_om = -g_om  # the max player descends on -L
    mu_new, log_mu_new = _prox(state.log_mu, g_mu, eta)
    om_new, log_om_new = _prox(state.log_omega, g_om, eta)
    lhs = eta * (jnp.dot(g_mu - state.g_mu_prev, w_mu - mu_new) + jnp.dot(g_om - state.g_omega_prev, w_om - om_new))
    rhs = (_kl(mu_new, log_mu_new, log_w_mu) + _kl(w_mu, log_w_mu, state.log_mu)
           + _kl(om_new, log_om_new, log_w_om) + _kl(w_om, log_w_om, state.log_omega))
    # Rounding slack: in float32 both sides carry absolute errors of a few K * eps (log-
    # probabilities of the heavy coordinates, differences of probabilities); without it,
    # tiny steps (both sides ~ eta^2) fail at random and the step size drifts to 0.
    eps = jnp.finfo(lhs.dtype).eps
    k_total = w_mu.shape[0] + w_om.shape[0]
    g_range = jnp.maximum(jnp.max(jnp.abs(g_mu - state.g_mu_prev)), jnp.max(jnp.abs(g_om - state.g_omega_prev)))
    slack = 4.0 * k_total * eps * (1.0 + eta * g_range)
    ok = (lhs <= rhs + slack) & jnp.isfinite(lhs)
    # Beyond eta * spread ~ 50 the prox is already a hard arg-min; capping there keeps a long
    # run of accepted steps (e.g. at a fixed point, warm-started round after round) finite.
    spread = (jnp.max(g_mu) - jnp.min(g_mu)) + (jnp.max(g_om) - jnp.min(g_om))
    grow = jnp.minimum(eta * 1.2, 50.0 / jnp.maximum(spread, 1e-30))
    # A rejected step leaves the iterate and the average unchanged and retries with half the
    # step; only steps satisfying the prox inequality enter the average. The predictor is
    # replaced by the fresh gradient either way: a stale predictor far from F(z_t) can fail the
    # test for every step size (its mismatch does not shrink with eta), while F(w_t) with
    # w_t near z_t makes the test pass once eta is small enough (the extra-gradient case).
    weight = state.weight + jnp.where(ok, eta, 0.0)
    frac = jnp.where(ok, eta / jnp.maximum(weight, 1e-30), 0.0)
    keep = lambda new, old: jnp.where(ok, new, old)
    return state._replace(
        log_mu=keep(log_mu_new, state.log_mu), log_omega=keep(log_om_new, state.log_omega),
        g_mu_prev=g_mu, g_omega_prev=g_om,
        mu_avg=state.mu_avg + frac * (w_mu - state.mu_avg),
        omega_avg=state.omega_avg + frac * (w_om - state.omega_avg),
        weight=weight, step=jnp.where(ok, grow, eta * 0.5), iter_num=state.iter_num + 1,
    )


def certify(certificate, state: SaddleState) -> SaddleState:
    """Certificates at the last iterate and at the average, then of the best mu so far against
    the averaged max player (often the tightest lower bound); keeps the best of each bound.
    The three run in turn in a loop whose body holds the certificate, which a program so
    traces and compiles once (it is most of a block's operations)."""
    mus = jnp.stack([jnp.exp(state.log_mu), state.mu_avg])
    omegas = jnp.stack([jnp.exp(state.log_omega), state.omega_avg])

    def check(i, bests):
        best_mu, best_om, upper, lower, aux = bests
        last = i == 2  # the best mu against the averaged max player: its lower bound only
        mu = jnp.where(last, best_mu, mus[jnp.minimum(i, 1)])
        om = omegas[jnp.minimum(i, 1)]
        up, lo, *extra = certificate(mu, om)
        better = (up < upper) & ~last
        keep = lambda new, old: jnp.where(better, new, old)  # noqa: E731
        lower = jnp.maximum(lower, jnp.where(jnp.isfinite(lo), lo, lower))
        return keep(mu, best_mu), keep(om, best_om), keep(up, upper), lower, jax.tree_util.tree_map(
            keep, tuple(extra), aux)

    best_mu, best_om, upper, lower, aux = lax.fori_loop(
        0, 3, check, (state.best_mu, state.best_omega, state.upper, state.lower, tuple(state.best_aux)))
    return state._replace(best_mu=best_mu, best_omega=best_om, upper=upper, lower=lower, best_aux=aux)


class SaddleSolution(NamedTuple):
    mu: jax.Array
    omega: jax.Array
    upper: jax.Array
    lower: jax.Array
    gap: jax.Array
    iterations: jax.Array
    status: jax.Array
    step: jax.Array
    aux: object = ()  # the certificate's extra outputs at mu (see ``solve``)


def blocks(maxiter: int, check_every: int) -> tuple[int, int]:
    """``(check_every, blocks)``: steps per certificate (at most ``maxiter``) and the number of
    blocks that covers ``maxiter`` steps (rounded up)."""
    check_every = max(1, min(check_every, maxiter))
    return check_every, max(1, -(-maxiter // check_every))


#: Step lengths of :func:`certify_exchange`'s line search toward the best response.
EXCHANGE_STEPS = (0.5, 0.2, 0.05)


def certify_exchange(grads, certificate, state: SaddleState) -> SaddleState:
    """:func:`certify` followed by a line search from the best mu toward the min player's best
    response to the averaged max player (the action j with the smallest gradient), on the exact
    objective: the candidates (1 - gamma) mu + gamma e_j for gamma in ``EXCHANGE_STEPS``
    (multiplicative steps move mass onto an action the iterate holds at a fraction of a percent
    only slowly).

    Two passes of a loop whose body holds the certificate once, vmapped over three mixtures (a
    program so traces and compiles one copy): the first certifies the last iterate and the
    average against their max players, and the best mu so far against the averaged max player
    (its lower bound only); the second the three candidates from the best mu after the first,
    against the averaged max player. Each pass keeps the lowest upper bound with its mu and
    the highest lower bound (every pair's bound is valid); a candidate that lowers the upper
    bound also becomes the iterate, and the max player's mixture kept with the best mu (the
    next solve's warm start) stays the one it had (with the averaged one instead, more of the
    duelling game's rounds end uncertified)."""
    dtype, k = state.best_mu.dtype, state.best_mu.shape[0]
    gammas = jnp.asarray(EXCHANGE_STEPS, dtype)[:, None]
    checked = jnp.stack([jnp.exp(state.log_mu), state.mu_avg, state.best_mu])
    against = jnp.stack([jnp.exp(state.log_omega), state.omega_avg, state.omega_avg])
    averaged = jnp.broadcast_to(state.omega_avg, against.shape)
    lower_only = jnp.arange(3) == 2

    def check(i, bests):
        best_mu, best_om, upper, lower, aux, moved = bests
        line = i == 1
        g_mu, _ = grads(best_mu, state.omega_avg)
        vertex = jax.nn.one_hot(jnp.argmin(g_mu), k, dtype=dtype)
        mus = jnp.where(line, (1.0 - gammas) * best_mu[None, :] + gammas * vertex[None, :], checked)
        oms = jnp.where(line, averaged, against)
        ups, los, *extra = jax.vmap(certificate)(mus, oms)
        ups = jnp.where(jnp.isfinite(ups) & (line | ~lower_only), ups, jnp.inf)
        lower = jnp.maximum(lower, jnp.max(jnp.where(jnp.isfinite(los), los, -jnp.inf)))
        j = jnp.argmin(ups)
        better = ups[j] < upper
        keep = lambda new, old: jnp.where(better, new, old)  # noqa: E731
        aux = jax.tree_util.tree_map(lambda new, old: keep(new[j], old), tuple(extra), aux)
        best_om = jnp.where(better & ~line, oms[j], best_om)
        return keep(mus[j], best_mu), best_om, keep(ups[j], upper), lower, aux, moved | (better & line)

    best_mu, best_om, upper, lower, aux, moved = lax.fori_loop(
        0, 2, check, (state.best_mu, state.best_omega, state.upper, state.lower, tuple(state.best_aux),
                      jnp.zeros((), bool)))
    _, log_mu = floor_simplex(best_mu)
    return state._replace(best_mu=best_mu, best_omega=best_om, upper=upper, lower=lower, best_aux=aux,
                          log_mu=jnp.where(moved, log_mu, state.log_mu))


def block(grads, certificate, state: SaddleState, check_every: int, exchange_steps: bool = False) -> SaddleState:
    """``check_every`` iterations, then the certificate (:func:`certify`; with
    ``exchange_steps``, :func:`certify_exchange`)."""
    state = lax.fori_loop(0, check_every, lambda _, x: step(grads, x), state)
    return certify_exchange(grads, certificate, state) if exchange_steps else certify(certificate, state)


def certified(state) -> jax.Array:
    """Whether a state's certificate is finite (a block may be followed by another)."""
    return jnp.isfinite(state.upper) & jnp.isfinite(state.lower)


def solve(
    grads: Callable,
    certificate: Callable,
    mu0: jax.Array,
    omega0: jax.Array,
    *,
    maxiter: int = 2000,
    rtol: float = 1e-4,
    atol: float = 0.0,
    check_every: int = 25,
    step0=None,
) -> SaddleSolution:
    """Runs until the certified gap is within ``rtol * |upper| + atol`` or ``maxiter``, for a
    problem of one's own given by its callbacks (the DEC programs of the library run through
    :class:`~e2d_jax.dec.solvers.Saddle`, which takes the same steps).

    Args:
      grads: the problem (see module docstring).
      certificate: see ``grads``.
      mu0: starting points (any nonnegative vectors; they are normalised).
      omega0: see ``mu0``.
      maxiter: iteration budget (rounded up to a multiple of ``check_every``).
      rtol: stopping tolerance on the certified gap.
      atol: see ``rtol``.
      check_every: iterations between certificate evaluations.
      step0: initial step (default: 1 / spread of the first gradients).

    Returns:
      SaddleSolution with the best certified ``mu``, its exact value ``upper``, the best
      ``lower`` bound, ``gap``, ``iterations``, ``status`` and the final step.
    """
    every, n_blocks = blocks(maxiter, check_every)
    state = loop.run(lambda x: block(grads, certificate, x, every), init(grads, certificate, mu0, omega0, step0),
                     steps=n_blocks, min_steps=1, done=lambda x: loop.converged(x.upper, x.lower, rtol, atol),
                     halted=lambda x: ~certified(x))
    answer = loop.Answer(mu=state.best_mu, omega=state.best_omega, lam=jnp.zeros((), state.upper.dtype),
                         value=state.upper, lower=state.lower, iterations=state.iter_num, carry=None)
    return SaddleSolution(
        mu=state.best_mu, omega=state.best_omega, upper=state.upper, lower=state.lower,
        gap=state.upper - state.lower, iterations=state.iter_num,
        status=loop.status(answer, rtol, atol), step=state.step, aux=state.best_aux,
    )


# --------------------------------------------------------------------------------------
# Working sets


#: Share of the working set replaced at once.
SWAP_SHARE = 4
#: The set changes once the restricted program's certified gap is below this share of the
#: whole program's (a set changed before its own program is solved would never settle).
SWAP_GAP = 0.5
#: Share of the uniform mixture over the working set mixed into a restart's mixtures (as
#: :class:`~e2d_jax.dec.solvers.Saddle`'s ``warm_mix`` into a warm start: the actions that
#: enter start with mass the multiplicative steps can move).
SWAP_MIX = 0.1


class WorkingSetState(NamedTuple):
    """Mirror-prox on a working set of m of the K actions, certified on all of them."""

    active: jax.Array  # (m,) int32, the working set's actions
    inner: SaddleState  # mirror-prox on the program restricted to them
    best_mu: jax.Array  # (K,) mu with the lowest objective over all K certified so far
    best_omega: jax.Array  # (K,) the max player's mixture paired with best_mu
    upper: jax.Array  # () the objective of best_mu over all K
    lower: jax.Array  # () the highest lower bound certified over all K
    iter_num: jax.Array  # () int32, mirror-prox steps taken
    swaps: jax.Array  # () int32, changes of the working set
    best_aux: object = ()  # the screen's aux at best_mu

    @property
    def step(self):
        return self.inner.step


def _embed(x, active, k):
    return jnp.zeros((k,), x.dtype).at[active].set(x)


def _mix(p, share):
    p = p / jnp.sum(p)
    return (1.0 - share) * p + share / p.shape[0]


def _screened(screen, active, mu, omega):
    up, lo, *rest = screen(active, mu, omega)
    return up, lo, tuple(rest[:-2]), rest[-2], rest[-1]


def _finite_or(x, default):
    return jnp.where(jnp.isfinite(x), x, default)


def _scaled(v):
    """``v`` mapped onto [0, 1] (non-finite entries to 0)."""
    v = jnp.where(jnp.isfinite(v), v, jnp.min(jnp.where(jnp.isfinite(v), v, jnp.inf)))
    return (v - jnp.min(v)) / jnp.maximum(jnp.max(v) - jnp.min(v), jnp.finfo(v.dtype).tiny)


def first_set(mu0, omega0, g, omega_star, m: int):
    """The first working set: the warm start's heaviest m / 2 actions, then those the two players
    would move to (the max player's best response first, then the smallest gradients of the min
    player), (m,) int32."""
    k = mu0.shape[0]
    _, heavy = lax.top_k(mu0 + omega0, m // 2)
    chosen = jnp.zeros((k,), bool).at[heavy].set(True)
    key = jnp.where(chosen, 3.0, jnp.where(omega_star > 0, 2.0, _scaled(-g)))
    return lax.top_k(key, m)[1].astype(jnp.int32)


def _swap(active, inner: SaddleState, g, omega_star, m: int):
    """The working set with the actions it lacks in place of its lightest (the least mass in mu
    and omega): first the max player's best response to mu, then the actions whose gradient is
    below every member's (the min player's improving directions); at most m / SWAP_SHARE at a
    time. Returns the new set and whether any action entered."""
    k = g.shape[0]
    inside = jnp.zeros((k,), bool).at[active].set(True)
    under = jnp.min(g[active]) - g
    key = jnp.where(omega_star > 0, jnp.inf, jnp.where(jnp.isfinite(under), under, -jnp.inf))
    key = jnp.where(inside, -jnp.inf, key)
    n = max(1, m // SWAP_SHARE)
    gains, entering = lax.top_k(key, n)
    _, leaving = lax.top_k(-(inner.best_mu + inner.omega_avg), n)
    ok = gains > 0
    new = active.at[leaving].set(jnp.where(ok, entering.astype(active.dtype), active[leaving]))
    return new, jnp.any(ok)


def working_set_init(form: SaddleForm, mu0, omega0, step0, m: int) -> WorkingSetState:
    """The first working set around the warm start ``(mu0, omega0)`` (both (K,)), and
    mirror-prox's start on it; the warm start's own certificate over all K is the first best."""
    k = mu0.shape[0]
    mu0, _ = floor_simplex(mu0)
    omega0, _ = floor_simplex(omega0)
    up, lo, aux, g, om_star = _screened(form.screen, None, mu0, omega0)
    active = first_set(mu0, omega0, g, om_star, m)
    sub = form.restrict(active)
    inner = init(sub.grads, sub.certificate, _mix(mu0[active], SWAP_MIX), _mix(omega0[active], SWAP_MIX), step0)
    ok = jnp.isfinite(up)
    return WorkingSetState(active=active, inner=inner, best_mu=mu0, best_omega=omega0,
                           upper=jnp.where(ok, up, jnp.inf), lower=jnp.where(jnp.isfinite(lo), lo, -jnp.inf),
                           iter_num=inner.iter_num, swaps=jnp.zeros((), jnp.int32),
                           best_aux=jax.tree_util.tree_map(lambda x: jnp.where(ok, x, jnp.nan), aux))


def working_set_block(form: SaddleForm, state: WorkingSetState, check_every: int, exchange_steps: bool,
                      m: int) -> WorkingSetState:
    """A block of mirror-prox on the working set (:func:`block` on the restricted program), the
    certificates over all K of its best and its averaged mu against its averaged max player
    (:attr:`SaddleForm.screen`), and, where the restricted program is solved better than the
    whole one (its gap below ``SWAP_GAP`` of the whole gap), a new set (:func:`_swap`) from which
    mirror-prox restarts around the better of the two mixtures."""
    k = state.best_mu.shape[0]
    active = state.active
    sub = form.restrict(active)
    inner = block(sub.grads, sub.certificate, state.inner, check_every, exchange_steps)
    # The block's best mu and its averaged mu, each certified on all K (one vmapped screen): on
    # the restricted program the best is judged against the set's max player only, and the
    # average's objective over all K is often the lower; it also gives the ergodic lower bound.
    omegas = jnp.stack([inner.omega_avg, inner.best_omega])
    ups, los, auxs, gs, stars = jax.vmap(lambda x: _screened(form.screen, active, x, omegas))(
        jnp.stack([inner.best_mu, inner.mu_avg]))
    avg = ups[1] < ups[0]
    pick = lambda x: jnp.where(avg, x[1], x[0])  # noqa: E731
    up, aux, g, om_star = pick(ups), jax.tree_util.tree_map(pick, auxs), pick(gs), pick(stars)
    lo = jnp.max(_finite_or(los, -jnp.inf))
    mu_w, om_w = jnp.where(avg, inner.mu_avg, inner.best_mu), jnp.where(avg, inner.omega_avg, inner.best_omega)
    mu, om = _embed(mu_w, active, k), _embed(inner.omega_avg, active, k)
    better = up < state.upper
    upper = jnp.where(better, up, state.upper)
    lower = jnp.maximum(state.lower, jnp.where(jnp.isfinite(lo), lo, state.lower))
    best_aux = jax.tree_util.tree_map(lambda new, old: jnp.where(better, new, old), aux, state.best_aux)
    best_mu = jnp.where(better, mu, state.best_mu)
    best_omega = jnp.where(better, _embed(om_w, active, k), state.best_omega)
    new_active, entered = _swap(active, inner, g, om_star, m)
    swap = entered & (inner.upper - inner.lower <= SWAP_GAP * (upper - lower))
    restarted = form.restrict(new_active)
    restart = init(restarted.grads, restarted.certificate, _mix(mu[new_active], SWAP_MIX),
                   _mix(om[new_active], SWAP_MIX), inner.step)._replace(iter_num=inner.iter_num)
    inner = jax.tree_util.tree_map(lambda a, b: jnp.where(swap, a, b), restart, inner)
    return WorkingSetState(active=jnp.where(swap, new_active, active), inner=inner, best_mu=best_mu,
                           best_omega=best_omega, upper=upper, lower=lower, iter_num=inner.iter_num,
                           swaps=state.swaps + swap.astype(jnp.int32), best_aux=best_aux)
