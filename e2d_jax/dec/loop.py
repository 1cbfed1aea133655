"""The certified loop every DEC solver runs, and the one place a round's status is set.

A solver of :mod:`e2d_jax.dec.solvers` is its steps (in the manner of optimistix): ``prepare``
builds what the program needs once (its gradients and certificate, from the problem of
:mod:`e2d_jax.dec.linear` or :mod:`e2d_jax.dec.finite`), ``init`` makes the first state,
``step`` advances it (a block of mirror-prox or Frank-Wolfe steps and a certificate, a Newton
iteration, a round of the lambda search), ``bounds`` reads the state's certificate (the exact
objective of its best point and a certified lower bound on the optimum) and ``answer`` the
result. :func:`solve` runs any of them, from scratch or continuing another solve's answer (``known``):

* the steps run until the certified gap meets the tolerance, ``upper - lower <= rtol |upper| +
  atol`` (``atol`` including the program's rounding floor), until the solver halts (a
  non-finite certificate, repeated failed steps), or until its budget of steps;
* :func:`status` turns the answer's certificate into its :class:`~e2d_jax.types.Status`.

Loops (:func:`run`). A budget that always runs in full is unrolled (no loop: under ``vmap`` no
per-lane select of the whole state after each step); otherwise a ``lax.while_loop``, which
under ``vmap`` runs until the batch's slowest problem stops while the finished problems keep
their values (JAX selects on the batched predicate), or with ``early_stop=False`` a
``lax.fori_loop`` of the whole budget in which a finished problem is frozen (the same answers,
no predicate to reduce over the batch). A loop's start has its arrays marked as batched
(:func:`batched_with`), so that ``vmap`` batches the loop's body once.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from e2d_jax.types import DecResult, Status


class Answer(NamedTuple):
    """What a solver returns from its final state (the loop adds the gap and the status).

    Attributes:
      mu: (K,) the min player's mixture.
      omega: (N,) the max player's mixture.
      lam: () the multiplier returned with mu.
      value: () the objective honestly evaluated at (lam, mu).
      lower: () a certified lower bound on the optimum.
      iterations: () int32 iterations the solve used.
      carry: what the next solve continues from (a :class:`~e2d_jax.types.WarmStart`).
      finite: () bool, whether the rest of the answer is finite too (True: nothing more).
    """

    mu: jax.Array
    omega: jax.Array
    lam: jax.Array
    value: jax.Array
    lower: jax.Array
    iterations: jax.Array
    carry: object
    finite: object = True


def tolerance(upper, rtol, atol):
    """The certified gap a solve must reach: rtol |upper| + atol."""
    return rtol * jnp.abs(upper) + atol


def converged(upper, lower, rtol, atol):
    """Whether the certified gap ``upper - lower`` meets the tolerance."""
    return upper - lower <= tolerance(upper, rtol, atol)


def status(answer: Answer, rtol, atol) -> jax.Array:
    """The answer's :class:`~e2d_jax.types.Status`, int32: ``NONFINITE`` when its value, its
    lower bound, its mu or ``answer.finite`` is not finite, else ``OK`` when the certified gap
    meets the tolerance and ``MAX_ITER`` when the budget ran out first."""
    finite = (jnp.isfinite(answer.value) & jnp.isfinite(answer.lower) & jnp.all(jnp.isfinite(answer.mu))
              & answer.finite)
    ok = converged(answer.value, answer.lower, rtol, atol)
    return jnp.where(~finite, Status.NONFINITE, jnp.where(ok, Status.OK, Status.MAX_ITER)).astype(jnp.int32)


def run(step: Callable, state, *, steps: int, done: Callable, halted: Callable | None = None,
        min_steps: int = 0, early_stop: bool = True, count: Callable | None = None):
    """``state`` after at most ``steps`` calls of ``step``.

    Args:
      step: ``state -> state``.
      state: the first state.
      steps: the budget (static).
      done: ``state -> bool``: the tolerance is met.
      halted: ``state -> bool``: stop without meeting it (None: never).
      min_steps: steps that run whatever the data (e.g. the first block, after which the first
        certificate exists).
      early_stop: a ``lax.while_loop`` that stops at ``done`` or ``halted`` (default); False: a
        ``lax.fori_loop`` of ``steps`` steps, each problem frozen once done or halted.
      count: ``state -> int``: the steps taken, read from the state (a state that starts
        part-way, e.g. a search continued from remembered points); None: counted from 0 here.
    """
    halted = halted or (lambda s: jnp.zeros((), bool))
    if count is None and steps <= min_steps:
        for _ in range(steps):  # the whole budget runs: no loop
            state = step(state)
        return state
    if not early_stop:
        def frozen_step(_, s):
            stop = done(s) | halted(s)
            return jax.tree_util.tree_map(lambda old, new: jnp.where(stop, old, new), s, step(s))

        return lax.fori_loop(0, steps, frozen_step, batched_with(done(state), state))

    def go_on(k, s):
        return (k < min_steps) | ((k < steps) & ~done(s) & ~halted(s))

    if count is not None:
        state = batched_with(go_on(count(state), state), state)
        return lax.while_loop(lambda s: go_on(count(s), s), step, state)
    start = jnp.zeros((), jnp.int32)
    state, _ = lax.while_loop(lambda c: go_on(c[1], c[0]), lambda c: (step(c[0]), c[1] + 1),
                              batched_with(go_on(start, state), (state, start)))
    return state


def batched_with(ref, tree):
    """``tree`` with each array marked as computed from ``ref`` (any array of the problem's data),
    its values unchanged (``select(p, x, x)`` on a predicate ``p`` of ``ref``, which XLA removes).

    For the start of a loop under ``vmap``: a ``lax.while_loop`` or ``lax.fori_loop`` batches
    every carry its body gives per-problem values, and finds which by batching the body again
    each time a carry turns out to be batched. A start whose arrays are constants (step
    counters, bounds at +-inf, a uniform mixture, empty index sets) would cost the body a second
    pass (with its nested loops); marked, they are batched from the start and the body is
    batched once. Outside ``vmap`` it changes nothing."""
    pred = jnp.ravel(ref)[0] == 0
    return jax.tree_util.tree_map(
        lambda x: lax.select(jnp.broadcast_to(pred, x.shape), x, x) if isinstance(x, jax.Array) else x, tree)


def solve(solver, problem, carry=None, *, rtol=None, atol=None, known=None) -> tuple[DecResult, object]:
    """``solver`` run on ``problem`` from ``carry``: ``(DecResult, carry)``.

    ``rtol`` and ``atol`` replace the solver's own tolerances (they may be traced, e.g. an inner
    solve's tolerance that scales with its lambda); the problem's rounding floor
    (``problem.floor()``) is added to ``atol``.

    ``known``, the ``(DecResult, carry)`` of an earlier solve of the same problem (e.g. another
    method's), continues from that answer's certificate: the steps run only while
    the best of both certificates misses the tolerance (so a problem it already certifies takes
    none), and the result is the better upper bound's answer with the higher lower bound of
    the two (both are valid for the one program), its iterations the sum.
    """
    rtol = solver.rtol if rtol is None else rtol
    atol = solver.atol if atol is None else atol
    floor = problem.floor()
    if floor is not None:
        atol = atol + floor
    work = solver.prepare(problem, carry)
    if known is None:
        state = solver.init(work)
        done = lambda s: converged(*solver.bounds(work, s), rtol, atol)  # noqa: E731
    else:
        # Only a problem the known answer leaves short starts: the first state is built in a
        # loop of at most one pass (under vmap it runs only where some problem of the batch
        # needs it), the others keep a placeholder that is never read.
        need = ~converged(known[0].value, known[0].lower_bound, rtol, atol)
        placeholder = jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype),
                                             jax.eval_shape(lambda: solver.init(work)))
        state, _ = lax.while_loop(lambda c: need & ~c[1], lambda c: (solver.init(work), jnp.ones((), bool)),
                                  batched_with(need, (placeholder, jnp.zeros((), bool))))
        done = lambda s: ~need | converged(*_best_bounds(known[0], *solver.bounds(work, s)), rtol, atol)  # noqa: E731
    state = run(lambda s: solver.step(work, s), state, steps=solver.steps(work), done=done,
                halted=lambda s: solver.halted(work, s), min_steps=solver.min_steps(work),
                early_stop=solver.early_stops(), count=solver.counter(work))
    answer = solver.answer(work, state)
    if known is not None:
        answer = _better(known, answer, need)
    result = DecResult(mu=answer.mu, lam=answer.lam, value=answer.value, lower_bound=answer.lower,
                       gap=answer.value - answer.lower, iterations=answer.iterations,
                       status=status(answer, rtol, atol), omega=answer.omega)
    return result, answer.carry


def _best_bounds(known: DecResult, upper, lower):
    """The lowest finite upper bound and the highest finite lower bound of ``known`` and these."""
    upper = jnp.where(jnp.isfinite(known.value) & ~(upper <= known.value), known.value, upper)
    lower = jnp.where(jnp.isfinite(known.lower_bound) & ~(lower >= known.lower_bound), known.lower_bound, lower)
    return upper, lower


def _better(known, answer: Answer, used) -> Answer:
    """``answer`` combined with the earlier ``known = (DecResult, carry)`` of the same program
    where ``used``, else the earlier answer."""
    result, carry = known
    value, lower = _best_bounds(result, answer.value, answer.lower)
    value = jnp.where(used, value, result.value)
    lower = jnp.where(used, lower, result.lower_bound)
    keep = ~used | (value != answer.value)  # the earlier answer's upper bound is the better one
    pick = lambda old, new: jax.tree_util.tree_map(lambda o, n: jnp.where(keep, o, n), old, new)  # noqa: E731
    return Answer(mu=pick(result.mu, answer.mu), omega=pick(result.omega, answer.omega),
                  lam=pick(result.lam, answer.lam), value=value, lower=lower,
                  iterations=result.iterations + jnp.where(used, answer.iterations, 0), carry=pick(carry, answer.carry),
                  finite=jnp.where(keep, result.status != Status.NONFINITE, answer.finite))
