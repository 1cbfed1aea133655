"""The DEC solvers as values: what each solves, its budget and tolerances, and their names.

A solver is a small frozen dataclass (in the manner of optimistix): its fields are its budget
and tolerances, ``solve(problem, carry) -> (DecResult, carry)`` runs it on a problem of
:mod:`e2d_jax.dec.linear` or :mod:`e2d_jax.dec.finite`, and :attr:`Solver.SUPPORTS` declares,
once, which programs of which model family it solves and for which gap types. Every DEC
function, E2D agent, sweep file and the command line take a solver value or a name of
:data:`SOLVERS`; :func:`resolve` turns either into a value and :meth:`Solver.check` is the one
place where a solver is refused for a problem it does not solve::

    from e2d_jax.dec.solvers import InteriorPoint, LambdaSearch, Saddle
    e2d.linear_acdec(model, f_hat, eps2, solver=Saddle(maxiter=20_000, rtol=1e-6))
    e2d.linear_acdec(model, f_hat, eps2, gap_type="delta", solver=LambdaSearch(inner=InteriorPoint(maxiter=40)))

A solver owns its algorithm: it implements the steps of each program it supports, and the
certified loop of :mod:`e2d_jax.dec.loop` runs them (``prepare`` the program's functions once,
``init``, ``step`` until the certified gap meets the tolerance or the budget is used,
``answer``) and sets the answer's status in one place. The problems hold the mathematics:
their objective, gradients and certificate (``saddle_form``, ``smoothed_form``), their rewards
and Gram matrices (the interior-point methods), their lambda range, minorants and exact
objective (the lambda searches) and their rounding floor (``floor``).

The solvers:

* :class:`Saddle`: optimistic mirror-prox on the program's saddle-point form
  (:mod:`e2d_jax.dec.saddle`). On the linear ac-DEC this is the exact convex-concave form of
  the linear-DEC lemma, which is convex only for the gaps Delta_f; on the offset programs
  (linear, and finite matrix games) both gap types.
* :class:`FrankWolfeGrid`: smoothed Frank-Wolfe on the fixed-lambda program (Appendix
  'Convex Program for Fixed lambda') on a vectorised lambda grid: the paper's mode. On an
  offset program (lambda given) it is plain smoothed Frank-Wolfe.
* :class:`SaddleGrid`: the same grid with mirror-prox for each fixed-lambda program.
* :class:`SubgradientGrid`: the authors' code's solve of the linear ac-DEC (arg-max
  Frank-Wolfe with open-loop steps on a lambda grid capped at the paper's range), not
  certified: kept to reproduce their runs.
* :class:`InteriorPoint`: a primal-dual interior-point method for the linear offset DEC
  (:mod:`e2d_jax.dec.interior_point`): a fixed number of Newton iterations, certified to 1e-4
  on random problems where mirror-prox needs thousands of iterations.
* :class:`MatrixGameIPM`: a primal-dual interior-point method for the finite offset DEC (a
  matrix game; :mod:`e2d_jax.dec.matrix_game`).
* :class:`LambdaSearch`: the ac-DEC as min over lambda of the offset DEC plus lambda eps^2,
  by a certified branch-and-bound search over lambda (:mod:`e2d_jax.dec.lambda_search`) whose
  points are solved by an inner solver (an interior-point method in both families). It solves
  both gap types of both families, and is the default wherever the exact form does not apply
  (the linear ac-DEC with gaps Delta, every finite ac-DEC).

Every solver returns its certificate (``value``, ``lower_bound``, ``gap``) and a status:
``OK`` when the certified gap is within ``rtol * |value| + atol``, ``MAX_ITER`` when the
budget ran out first (the answer is still valid and its gap says how far from optimal it may
be), ``NONFINITE`` when a value is not finite.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, NamedTuple

import functools

import jax
import jax.numpy as jnp
from jax import lax

from e2d_jax import _checks as V
from e2d_jax.dec import frank_wolfe, fused, interior_point, lambda_search, loop, matrix_game, saddle, working_set
from e2d_jax.types import GAP_TYPES, WarmStart

#: The programs a solver may solve: the average-constrained DEC (``"acdec"``, a radius eps^2)
#: and the offset DEC (``"offset"``, a multiplier lambda).
PROGRAMS = ("acdec", "offset")

_BOTH = GAP_TYPES

#: Implementations of :class:`Saddle` (see its ``kernel``).
KERNELS = ("auto", "xla", "pallas")
#: :class:`Saddle`'s line search toward the best response runs by default on problems of more
#: actions than this (the fused kernel's problems, and the paper's, have at most 30).
EXCHANGE_MIN_ACTIONS = 32
#: :class:`Saddle` runs on a working set by default on linear programs of more actions than
#: this (see :func:`working_set_size`).
WORKING_SET_MIN_ACTIONS = 256
#: The default working set: ``WORKING_SET_PER_ROOT`` sqrt(K) actions, at least
#: ``WORKING_SET_PER_DIMENSION`` r and the optimum's largest support, rounded up to a multiple
#: of 32; used where it is at most a ``WORKING_SET_SHARE``-th of the actions.
WORKING_SET_PER_ROOT = 4
WORKING_SET_PER_DIMENSION = 8
WORKING_SET_SHARE = 4


def working_set_size(num_actions: int, rank: int) -> int:
    """:class:`Saddle`'s default working set on a linear program of ``num_actions`` actions and
    span dimension ``rank``: max(``WORKING_SET_PER_ROOT`` sqrt(K), ``WORKING_SET_PER_DIMENSION``
    r, r(r + 1)/2 + 2) rounded up to a multiple of 32 (r(r + 1)/2 + 2 = dim Sym(r) + 2 bounds the
    optimum's support: a smaller set cannot hold it), and every action where K is at most
    ``WORKING_SET_MIN_ACTIONS`` or the set would be more than a ``WORKING_SET_SHARE``-th of
    them. A block's steps cost O(m) and its certificate over all actions O(K), and a larger set
    changes less often: m ~ sqrt(K) balances the two."""
    m = max(WORKING_SET_PER_ROOT * math.sqrt(num_actions), WORKING_SET_PER_DIMENSION * rank,
            rank * (rank + 1) // 2 + 2)
    m = 32 * math.ceil(m / 32)
    if num_actions <= WORKING_SET_MIN_ACTIONS or WORKING_SET_SHARE * m > num_actions:
        return num_actions
    return m


@dataclasses.dataclass(frozen=True)
class Solver:
    """Base of the DEC solvers (see the module docstring).

    Subclasses set :attr:`SUPPORTS`, ``{(family, program): gap types}``: the problems they
    solve. Values are hashable, so a solver is part of a compiled function's static
    configuration and of an agent's ``config``.
    """

    SUPPORTS: ClassVar[dict] = {}

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("maxiter", "check_every", "lam_refine", "candidates", "subdivide"):
                V.check_int(f.name, value, minimum=1)
            elif f.name == "lam_grid":
                V.check_int(f.name, value, minimum=2)
            elif f.name in ("lam_rounds", "memory"):
                V.check_int(f.name, value, minimum=0)
            elif f.name in ("rtol", "atol", "inner_rtol"):
                V.check_positive(f.name, value, allow_zero=True)
            elif f.name == "warm_mix":
                V.check_positive(f.name, value, allow_zero=True)
                if value > 1:
                    raise V.ArgumentError(f.name, f"{V.name(f.name)} must be in [0, 1], got {value}")

    def supports(self, family: str, program: str, gap_type: str = "delta_f") -> bool:
        """Whether this solver solves ``program`` (``"acdec"`` or ``"offset"``) of a ``family``
        (``"linear"`` or ``"finite"``) model with gaps ``gap_type``."""
        return gap_type in self.SUPPORTS.get((family, program), ())

    def check(self, family: str, program: str, gap_type: str = "delta_f") -> "Solver":
        """Returns ``self``, or raises a ValueError naming ``solver`` (and the solvers that do
        fit) when it does not solve this problem. The only place such a rule is checked."""
        if self.supports(family, program, gap_type):
            return self
        fits = [name for name, s in SOLVERS.items() if s.supports(family, program, gap_type)]
        what = "the average-constrained DEC" if program == "acdec" else "the offset DEC"
        reason = ""
        if (family, program) in self.SUPPORTS:
            reason = (f" with gap_type={gap_type!r} (it solves gap types {', '.join(self.SUPPORTS[(family, program)])}"
                      + ("; the exact form is convex only for Delta_f" if isinstance(self, Saddle) else "") + ")")
        raise V.ArgumentError("solver", f"{V.name('solver')}: {type(self).__name__} does not solve {what} of {family} models{reason}; "
                         f"solvers that do: {', '.join(fits) or 'none'}")

    def solve(self, problem, carry=None, *, rtol=None, atol=None):
        """Solves ``problem`` (a problem of :mod:`e2d_jax.dec.linear` or
        :mod:`e2d_jax.dec.finite`) from ``carry`` (a warm start, or None): this solver's steps
        in the certified loop (:func:`e2d_jax.dec.loop.solve`). Traceable.

        Args:
          problem: the program to solve.
          carry: what the last solve returned (None: a cold start).
          rtol: replaces the solver's ``rtol`` (may be traced: an inner solve's tolerance).
          atol: replaces its ``atol`` (the problem's rounding floor is added to either).

        Returns:
          ``(DecResult, carry)``: the answer with its certificate, and what the next solve
          takes to continue from it.
        """
        self.check(problem.family, problem.program, problem.gap_type)
        return loop.solve(self, problem, carry, rtol=rtol, atol=atol)

    # ---- the steps (see e2d_jax.dec.loop); each solver implements those of its programs ----
    def prepare(self, problem, carry):
        """What the steps need, built once: the program's functions and the warm start."""
        raise NotImplementedError(f"{type(self).__name__} has no steps of its own")

    def init(self, work):
        """The first state."""
        raise NotImplementedError

    def step(self, work, state):
        """The next state."""
        raise NotImplementedError

    def bounds(self, work, state):
        """``(upper, lower)``: the exact objective of the state's best point and a certified
        lower bound on the optimum."""
        return state.upper, state.lower

    def halted(self, work, state):
        """Whether to stop before the tolerance is met (default: a certificate that is not
        finite)."""
        return ~saddle.certified(state)

    def steps(self, work) -> int:
        """The budget of steps (static)."""
        raise NotImplementedError

    def min_steps(self, work) -> int:
        """Steps that run whatever the data."""
        return 0

    def counter(self, work):
        """``state -> steps taken`` when the state counts them, else None."""
        return None

    def early_stops(self) -> bool:
        """Whether the loop stops once the tolerance is met (else it runs its budget with
        finished problems frozen; the same answers)."""
        return True

    def answer(self, work, state) -> loop.Answer:
        """The answer of the final state."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """The solver as plain values: ``{"type": class name, field: value, ...}`` (an inner
        solver as its own dict); :func:`resolve` reads it back."""
        out = {"type": type(self).__name__}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if isinstance(value, Solver) else value
        return out

    def replace(self, **changes) -> "Solver":
        """A copy with some fields changed; a ValueError names an unknown field and lists the
        valid ones."""
        fields = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise V.ArgumentError("solver", f"{V.name('solver')}: {type(self).__name__} has no option {', '.join(unknown)} "
                             f"(its options: {', '.join(sorted(fields))})")
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class Saddle(Solver):
    """Optimistic mirror-prox on the saddle-point form, certified (:mod:`e2d_jax.dec.saddle`).

    Attributes:
      maxiter: iteration budget (rounded up to a multiple of ``check_every``).
      rtol: stop when the certified gap <= rtol |value| + atol.
      atol: absolute part of the tolerance.
      check_every: iterations between certificates; with ``maxiter <= check_every`` a solve
        is one block of steps and one certificate, without a loop.
      kernel: the linear programs' implementation: ``"auto"`` (the fused Pallas kernel of
        :mod:`e2d_jax.dec.fused` on a GPU for the shapes it takes, XLA elsewhere), ``"xla"``
        or ``"pallas"`` (the kernel everywhere; as JAX operations off a GPU, for tests).
      warm_mix: share of the uniform mixture mixed into a warm start's mu and omega (in
        [0, 1]; 1 starts cold). Multiplicative steps revive an action the last solve left at
        the floor only after ~log(1 / FLOOR) / (step x its advantage) steps, so where the
        optimal support moves between solves a pure warm start needs more steps than a cold
        one; the mixture keeps every action within a few steps of coming back.
      exchange: after every certificate, a line search from the best mixture toward the min
        player's best response on the exact objective (:func:`e2d_jax.dec.saddle.certify_exchange`):
        True, False, or None (the default) for problems of more than
        ``EXCHANGE_MIN_ACTIONS`` actions. Where the optimum moves onto an action the iterate
        holds at a fraction of a percent, multiplicative steps take many blocks to move the
        mass; the line search moves it at once, and only a better certified value is kept.
      working_set: the number of actions mirror-prox runs on (both players), certified on all
        of them after every block (:func:`e2d_jax.dec.saddle.working_set_block`): None (the
        default) for ``working_set_size`` (on linear programs of more than
        ``WORKING_SET_MIN_ACTIONS`` actions, a set of at most a quarter of them); K or more: all
        of them. The optimum's mixtures hold few actions (at most dim Sym(r) + 2), so most of a
        block's steps need not touch the rest; the certificate, and the set's changes, do.
    """

    SUPPORTS: ClassVar[dict] = {("linear", "acdec"): ("delta_f",), ("linear", "offset"): _BOTH,
                                ("finite", "offset"): _BOTH}
    maxiter: int = 4000
    rtol: float = 1e-3
    atol: float = 0.0
    check_every: int = 25
    kernel: str = "auto"
    warm_mix: float = 0.0
    exchange: bool | None = None
    working_set: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.working_set is not None:
            V.check_int("working_set", self.working_set, minimum=2)
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")
        if self.exchange is not None and not isinstance(self.exchange, bool):
            raise V.ArgumentError("exchange", f"{V.name('exchange')} must be True, False or None (above "
                                              f"{EXCHANGE_MIN_ACTIONS} actions), got {self.exchange!r}")

    def exchanges(self, num_actions: int) -> bool:
        """Whether the solves of a problem with ``num_actions`` actions (the min player's) run
        the line search of ``exchange`` (static)."""
        return num_actions > EXCHANGE_MIN_ACTIONS if self.exchange is None else self.exchange

    def set_size(self, num_actions: int, rank: int) -> int:
        """The working set's size m for a linear program of ``num_actions`` actions and span
        dimension ``rank`` (static; m = K is plain mirror-prox)."""
        if self.working_set is not None:
            return min(self.working_set, num_actions)
        return working_set_size(num_actions, rank)

    def _set(self, work) -> int | None:
        """The working set's size where ``work``'s program runs on one, else None."""
        if work.form.screen is None:
            return None
        k, rank = work.problem.span.features.shape[-2:]
        m = self.set_size(k, rank)
        return m if m < k else None

    def solve(self, problem, carry=None, *, rtol=None, atol=None):
        """Mirror-prox on ``problem``'s saddle-point form (see :meth:`Solver.solve`); a linear
        program at the solver's own tolerances runs as the fused kernel of
        :mod:`e2d_jax.dec.fused` where ``kernel`` asks for it (on a GPU with ``"auto"``, chosen
        in the compiled program by platform; everywhere with ``"pallas"``, as JAX operations off
        a GPU)."""
        self.check(problem.family, problem.program, problem.gap_type)
        if carry is not None and self.warm_mix > 0:
            mix = lambda p: (1.0 - self.warm_mix) * p + self.warm_mix / p.shape[-1]  # noqa: E731
            carry = carry._replace(mu=mix(carry.mu), omega=mix(carry.omega))

        def xla():
            return loop.solve(self, problem, carry, rtol=rtol, atol=atol)

        if problem.family != "linear" or rtol is not None or atol is not None or self.kernel == "xla" \
                or self.exchanges(problem.span.features.shape[-2]):
            return xla()
        span = problem.span
        k, r = span.features.shape[-2:]
        if self.set_size(k, r) < k:
            return xla()
        forced = self.kernel == "pallas"
        if not fused.supports(k, r, span.features.dtype, interpret=forced):
            return xla()
        kernel = fused.solve_acdec if problem.program == "acdec" else fused.solve_offset
        param = problem.eps2 if problem.program == "acdec" else problem.lam

        def pallas(interpret):
            return kernel(span, problem.f_hat, param, self, carry, problem.gap_type, interpret=interpret)

        if forced:
            return pallas(jax.default_backend() not in ("gpu", "cuda"))
        if not _has_cuda():
            # No GPU in this process, so no program can target one: XLA's path alone (choosing by
            # platform inside the program would trace the kernel too, for nothing).
            return xla()
        return lax.platform_dependent(default=xla, cuda=lambda: pallas(False))

    def prepare(self, problem, carry):
        return _Work(problem, problem.cold_start() if carry is None else carry, problem.saddle_form())

    def init(self, work):
        form, warm, m = work.form, work.warm, self._set(work)
        if m is not None:
            return saddle.working_set_init(form, warm.mu, warm.omega, warm.step, m)
        return saddle.init(form.grads, form.certificate, warm.mu, warm.omega, warm.step)

    def step(self, work, state):
        every, m = saddle.blocks(self.maxiter, self.check_every)[0], self._set(work)
        if m is not None:
            return saddle.working_set_block(work.form, state, every, self.exchanges(m), m)
        return saddle.block(work.form.grads, work.form.certificate, state, every, self.exchanges(state.best_mu.shape[-1]))

    def steps(self, work) -> int:
        return saddle.blocks(self.maxiter, self.check_every)[1]

    def min_steps(self, work) -> int:
        return 1  # the first certificate comes after the first block

    def answer(self, work, state) -> loop.Answer:
        lam, value = work.form.answer(state.upper, state.best_aux)
        return loop.Answer(mu=state.best_mu, omega=state.best_omega, lam=lam, value=value, lower=state.lower,
                           iterations=state.iter_num, carry=work.problem.next_start(state.best_mu, state.best_omega,
                                                                                    state.step),
                           finite=jnp.isfinite(lam))


@dataclasses.dataclass(frozen=True)
class FrankWolfeGrid(Solver):
    """Smoothed Frank-Wolfe per lambda on a vectorised, refined lambda grid (the paper's mode;
    :mod:`e2d_jax.dec.frank_wolfe`, :func:`e2d_jax.dec.lambda_search.grid_start`).

    The grid spans a range proven to contain the minimising lambda; the certified lower bound
    covers that whole range. On an offset program (lambda given) the grid fields are unused.

    Attributes:
      maxiter: Frank-Wolfe steps per lambda.
      rtol: tolerance of each inner solve and of the answer.
      atol: absolute part of the tolerance.
      check_every: steps between certificates.
      lam_grid: points of the first (geometric) lambda grid.
      lam_refine: points of each refinement grid around the best point.
      lam_rounds: refinement rounds.
    """

    SUPPORTS: ClassVar[dict] = {("linear", "acdec"): _BOTH, ("linear", "offset"): _BOTH}
    maxiter: int = 1000
    rtol: float = 1e-3
    atol: float = 0.0
    check_every: int = 50
    lam_grid: int = 50
    lam_refine: int = 12
    lam_rounds: int = 2

    def solve(self, problem, carry=None, *, rtol=None, atol=None):
        """Frank-Wolfe on an offset program; on an ac-DEC, the lambda grid of such solves."""
        if problem.program == "acdec":
            self.check(problem.family, problem.program, problem.gap_type)
            return _LambdaGrid.of(self, self).solve(problem, carry, rtol=rtol, atol=atol)
        return super().solve(problem, carry, rtol=rtol, atol=atol)

    def prepare(self, problem, carry):
        return _Work(problem, problem.cold_start() if carry is None else carry, problem.smoothed_form())

    def init(self, work):
        smooth, certificate = work.form
        return frank_wolfe.init(smooth, certificate, work.warm.mu)

    def step(self, work, state):
        smooth, certificate = work.form
        return frank_wolfe.block(smooth, certificate, state, saddle.blocks(self.maxiter, self.check_every)[0])

    def steps(self, work) -> int:
        return saddle.blocks(self.maxiter, self.check_every)[1]

    def min_steps(self, work) -> int:
        return 1

    def answer(self, work, state) -> loop.Answer:
        lam = jnp.asarray(work.problem.lam, state.upper.dtype)
        return loop.Answer(mu=state.best_mu, omega=state.best_omega, lam=lam, value=state.upper, lower=state.lower,
                           iterations=state.iter_num,
                           carry=WarmStart(state.best_mu, state.best_omega, jnp.zeros((), state.upper.dtype)))


@dataclasses.dataclass(frozen=True)
class SaddleGrid(Solver):
    """Mirror-prox per lambda on the grid of :class:`FrankWolfeGrid` (same fields)."""

    SUPPORTS: ClassVar[dict] = {("linear", "acdec"): _BOTH, ("linear", "offset"): _BOTH}
    maxiter: int = 1000
    rtol: float = 1e-3
    atol: float = 0.0
    check_every: int = 25
    lam_grid: int = 50
    lam_refine: int = 12
    lam_rounds: int = 2

    def mirror_prox(self) -> "Saddle":
        """The mirror-prox of each fixed-lambda program (XLA's: the grid batches its solves)."""
        return Saddle(maxiter=self.maxiter, rtol=self.rtol, atol=self.atol, check_every=self.check_every,
                      kernel="xla")

    def solve(self, problem, carry=None, *, rtol=None, atol=None):
        """Mirror-prox on an offset program; on an ac-DEC, the lambda grid of such solves."""
        self.check(problem.family, problem.program, problem.gap_type)
        if problem.program == "acdec":
            return _LambdaGrid.of(self, self.mirror_prox()).solve(problem, carry, rtol=rtol, atol=atol)
        return self.mirror_prox().solve(problem, carry, rtol=rtol, atol=atol)


@dataclasses.dataclass(frozen=True)
class MatrixGameIPM(Solver):
    """A primal-dual interior-point method for the matrix game of the finite offset DEC
    (:mod:`e2d_jax.dec.matrix_game`).

    Attributes:
      maxiter: interior-point iterations.
      rtol: stop when the certified gap <= rtol |value| + atol (plus the rounding floor of
        the dtype, see :mod:`e2d_jax.dec.finite`).
      atol: absolute part of the tolerance.
    """

    SUPPORTS: ClassVar[dict] = {("finite", "offset"): _BOTH}
    maxiter: int = 50
    rtol: float = 1e-8
    atol: float = 0.0

    def prepare(self, problem, carry):
        # An interior-point method does not benefit from a warm start: the game's own start.
        a = problem.payoff()
        b = matrix_game.ipm_scaled(a)
        return _Work(problem, None, (a, b, matrix_game.ipm_outer(b)))

    def init(self, work):
        a, b, _ = work.form
        return matrix_game.ipm_start(a, b)

    def step(self, work, state):
        a, b, outer = work.form
        return matrix_game.ipm_step(a, b, state, outer)

    def halted(self, work, state):
        return state.failures >= 4  # non-finite Newton steps in a row (the best pair is kept)

    def steps(self, work) -> int:
        return self.maxiter

    def counter(self, work):
        return lambda state: state.iter_num

    def answer(self, work, state) -> loop.Answer:
        lam = jnp.asarray(work.problem.lam, state.upper.dtype)
        return loop.Answer(mu=state.best_mu, omega=state.best_omega, lam=lam, value=state.upper, lower=state.lower,
                           iterations=state.iter_num,
                           carry=work.problem.next_start(state.best_mu, state.best_omega, None))


@dataclasses.dataclass(frozen=True)
class InteriorPoint(Solver):
    """A primal-dual interior-point method for the linear offset DEC
    (:mod:`e2d_jax.dec.interior_point`): Newton steps on the epigraph form, at most
    ``maxiter`` of them, each answer certified.

    On more actions than its working set (``working_set``; by default max(32, 4 r) for a span
    of dimension r) the method runs on a working set of them, certified on all of them every
    iteration (:mod:`e2d_jax.dec.working_set`): O(m K r^2) an iteration instead of K^3 r. A
    working set of K or more is the plain method: its dense K x K Newton system, and from
    K >= 2 p (p = 1 + r (r + 1) / 2) its factored form, O(K p^2) an iteration
    (:mod:`e2d_jax.dec.interior_point`, 'Many actions'; above 32 actions each iteration also
    bounds the optimum from the max player's side, and the method starts from the uniform
    mixture whatever the warm start). :meth:`sized_for` picks the plain method for a model
    whose actions observe one number each where the default set may not serve (E2D's agent
    does).

    Attributes:
      maxiter: Newton iterations at most (a problem that meets the tolerance is frozen).
      rtol: the tolerance of the certified gap, rtol |value| + atol.
      atol: absolute part of the tolerance.
      early_stop: stop the loop once every problem of the batch meets the tolerance (a
        ``lax.while_loop``; under ``vmap`` it runs until the batch's slowest problem is
        done). False runs exactly ``maxiter`` iterations (a ``lax.fori_loop``). The answers
        are the same either way.
      working_set: the number of actions the Newton steps run on (None: as above; K or more:
        all of them, the plain method).
      second_set: where the plain method in its factored form on more than
        ``PLAIN_MAX_ACTIONS`` actions ends short of the tolerance, up to ``second_maxiter``
        more iterations of the method on a working set of ``second_set`` actions, started from
        its answer and certified on all of them (:meth:`continues`); the answer is the better upper bound of the two with the
        higher lower bound, both valid for the one program, so a problem the plain method
        certifies is unchanged. None (the default): no second run. On some programs the plain
        method's float32 iterate stalls 1e-3 to 4e-3 above the optimum (an optimum spread over
        few of many near-ties, e.g. the duelling game's pairs) where a small set, whose dense
        Newton system float32 solves accurately, reaches it; on others the set changes many
        times before it holds an optimum and the plain method is the one that certifies. A set
        smaller than the optimum's support bound
        (:func:`~e2d_jax.dec.interior_point.support_bound`) is not tried.
      second_maxiter: the second run's iterations at most. A vmapped batch runs them wherever
        one of its problems needs them, and where the set cannot certify a problem it runs
        them all: a small budget keeps that cost down.
    """

    SUPPORTS: ClassVar[dict] = {("linear", "offset"): _BOTH}
    maxiter: int = 25
    rtol: float = 1e-4
    atol: float = 0.0
    early_stop: bool = True
    working_set: int | None = None
    second_set: int | None = None
    second_maxiter: int = 10

    def __post_init__(self):
        super().__post_init__()
        V.check_int("second_maxiter", self.second_maxiter, minimum=1)
        for name in ("working_set", "second_set"):
            if getattr(self, name) is not None:
                V.check_int(name, getattr(self, name), minimum=2)

    def solve(self, problem, carry=None, *, rtol=None, atol=None):
        """:meth:`Solver.solve`, continued on ``second_set`` actions where :meth:`continues`
        (from the first run's answer, :func:`e2d_jax.dec.loop.solve` with ``known``)."""
        self.check(problem.family, problem.program, problem.gap_type)
        first = loop.solve(self, problem, carry, rtol=rtol, atol=atol)
        k, rank = problem.span.features.shape
        if not self.continues(k, rank, problem.gap_type):
            return first
        second = self.replace(working_set=self.second_set, second_set=None, maxiter=self.second_maxiter)
        result, out = first
        warm = WarmStart(result.mu, result.omega, out.step)
        return loop.solve(second, problem, warm, rtol=rtol, atol=atol, known=first)

    def continues(self, num_actions: int, rank: int, gap_type: str = "delta_f") -> bool:
        """Whether a solve of ``num_actions`` actions and span dimension ``rank`` continues on
        ``second_set`` actions where the plain method leaves it uncertified (static): the plain
        method runs (no smaller working set) in its factored form
        (:func:`~e2d_jax.dec.interior_point.use_factored`) on more actions than ``second_set``
        and than :data:`~e2d_jax.dec.working_set.PLAIN_MAX_ACTIONS`, and ``second_set`` can hold
        an optimum (:func:`~e2d_jax.dec.interior_point.support_bound`). Up to
        ``PLAIN_MAX_ACTIONS`` the plain method runs where a set may not serve, and compiling the
        set's program besides it would double its first call."""
        if self.second_set is None:
            return False
        plain = working_set.size(num_actions, rank, self.working_set, gap_type) >= num_actions
        return (plain and num_actions > max(self.second_set, working_set.PLAIN_MAX_ACTIONS)
                and interior_point.use_factored(num_actions, rank, gap_type)
                and self.second_set >= interior_point.support_bound(rank, gap_type))

    def sized_for(self, model, gap_type: str = "delta_f") -> "InteriorPoint":
        """This solver with its working set chosen for ``model`` (a
        :class:`~e2d_jax.envs.linear.LinearModel`; static shapes only) where none is set: with
        one observation row per action (a linear bandit, a duelling game) the plain method
        where the default set may not serve and it is affordable
        (:func:`~e2d_jax.dec.working_set.size` with ``rank_one``)."""
        if self.working_set is not None:
            return self
        k, rank = model.span.features.shape
        return self.replace(working_set=working_set.size(k, rank, None, gap_type,
                                                         rank_one=model.obs_matrices.shape[1] == 1))

    def prepare(self, problem, carry):
        span = interior_point.symmetrised(problem.span)
        dtype = span.features.dtype
        k, rank = span.features.shape
        m = working_set.size(k, rank, self.working_set, problem.gap_type)
        form = (span, jnp.asarray(problem.rewards(), dtype), jnp.asarray(problem.lam, dtype), problem.gap_type,
                m if m < k else None)
        return _Work(problem, problem.cold_start() if carry is None else carry, form)

    def init(self, work):
        span, r, lam, gap_type, m = work.form
        if m is None:
            if span.features.shape[0] > interior_point.MANY_ACTIONS:
                # From the uniform mixture: a warm start sits near the boundary of the few
                # actions it holds, where the Newton steps toward a spread optimum stall.
                return interior_point.init(span, r, lam, gap_type)
            return interior_point.init(span, r, lam, gap_type, work.warm.mu, work.warm.omega)
        return working_set.init(span, r, lam, gap_type, work.warm.mu, work.warm.omega, m)

    def step(self, work, state):
        span, r, lam, gap_type, m = work.form
        if m is None:
            return interior_point.step(span, r, lam, state, gap_type)
        return working_set.step(span, r, lam, state, gap_type, m)

    def halted(self, work, state):
        return interior_point.halted(state) if work.form[4] is None else working_set.halted(state)

    def steps(self, work) -> int:
        return self.maxiter

    def counter(self, work):
        return lambda state: state.iter_num

    def early_stops(self) -> bool:
        return self.early_stop

    def answer(self, work, state) -> loop.Answer:
        return loop.Answer(mu=state.best_mu, omega=state.best_omega, lam=work.form[2], value=state.upper,
                           lower=state.lower, iterations=state.iter_num,
                           carry=WarmStart(state.best_mu, state.best_omega, work.warm.step))


class _GridFrankWolfe(NamedTuple):
    """The state :class:`SubgradientGrid` answers from: the chosen grid point."""

    mu: jax.Array  # (K,) the chosen point's last iterate
    omega: jax.Array  # (K,) the arg-max action there, one-hot
    lam: jax.Array  # () its lambda
    value: jax.Array  # () psi(lambda, mu)


@dataclasses.dataclass(frozen=True)
class SubgradientGrid(Solver):
    """The authors' code's solve of the linear ac-DEC with gaps Delta_f (kirschnj/pm-ids,
    branch e2d, ``E2D.update_mu`` with ``anytime_lambda``): kept to reproduce their runs; it
    does not solve the program to a tolerance.

    On each of the ``lam_grid`` points lambda_j = (j / lam_grid) sqrt(r) / eps, j = 1, ...,
    ``lam_grid`` (r the dimension of the observable span: the paper's range [0, eps^-2 max dec]
    with its bound dec <= eps sqrt(r); (0, sqrt(t)] under eps_t^2 = r / t), plain Frank-Wolfe
    on max_b h_b(mu) from the warm start's mu: ``maxiter`` steps
    mu <- (1 - gamma_i) mu + gamma_i e_a toward the least coordinate a of the arg-max
    subgradient (:meth:`~e2d_jax.dec.linear.LinearOffset.subgradient`), with the open-loop
    step gamma_i = 1 / (t + i + 2), i = 1, 2, ..., and t = r / eps^2 (the round of the schedule
    eps_t^2 = r / t). The answer is the grid point with the smallest psi(lambda_j, mu_j) =
    max_b h_b(mu_j) + lambda_j eps^2 at its last iterate, with that lambda_j and value (the
    objective their code logs).

    Two things keep this from the optimum (docs: Linear partial monitoring, 'Agreement with the
    authors' code'): the arg-max subgradient and open-loop steps stall a few percent above the
    optimum at a fixed lambda, and on games that do not observe every action's reward the
    minimising lambda can lie beyond the grid. The lower bound is the exact form's
    linearisation at the answer (:meth:`~e2d_jax.dec.linear.LinearAcdec.saddle_form`), so the
    gap and the status (``OK`` within ``rtol``) say how far the answer may be from optimal.

    Attributes:
      maxiter: Frank-Wolfe steps per lambda (their ``fw_iter`` = 100 evaluates after 98).
      lam_grid: points of the lambda grid (their 99).
      rtol: the tolerance the status is judged by.
      atol: its absolute part.
    """

    SUPPORTS: ClassVar[dict] = {("linear", "acdec"): ("delta_f",)}
    maxiter: int = 98
    lam_grid: int = 99
    rtol: float = 0.05
    atol: float = 0.0

    def prepare(self, problem, carry):
        return _Work(problem, problem.cold_start() if carry is None else carry, problem.saddle_form())

    def init(self, work):
        problem = work.problem
        dtype = problem.span.features.dtype
        eps2 = jnp.asarray(problem.eps2, dtype)
        t = jnp.asarray(problem.span.features.shape[1], dtype) / eps2
        lams = problem.paper_range() * jnp.arange(1, self.lam_grid + 1, dtype=dtype) / self.lam_grid
        mu0 = work.warm.mu / jnp.sum(work.warm.mu)
        k = mu0.shape[0]

        def at(lam):
            subgradient = problem.at(lam).subgradient()

            def fw_step(i, mu):
                g, _ = subgradient(mu)
                gamma = 1.0 / (t + i + 2.0)
                return mu + gamma * (jax.nn.one_hot(jnp.argmin(g), k, dtype=dtype) - mu)

            mu = lax.fori_loop(1, self.maxiter + 1, fw_step, mu0)
            _, h = subgradient(mu)
            return mu, jnp.argmax(h), jnp.max(h) + lam * eps2

        mus, tops, values = jax.vmap(at)(lams)
        j = jnp.argmin(values)
        return _GridFrankWolfe(mu=mus[j], omega=jax.nn.one_hot(tops[j], k, dtype=dtype), lam=lams[j],
                               value=values[j])

    def steps(self, work) -> int:
        return 0

    def answer(self, work, state) -> loop.Answer:
        _, lower, *_ = work.form.certificate(state.mu, state.omega)
        iterations = jnp.asarray(self.maxiter * self.lam_grid, jnp.int32)
        return loop.Answer(mu=state.mu, omega=state.omega, lam=state.lam, value=state.value, lower=lower,
                           iterations=iterations,
                           carry=WarmStart(state.mu, state.omega, jnp.zeros((), state.value.dtype)))


@dataclasses.dataclass(frozen=True)
class LambdaSearch(Solver):
    """The ac-DEC as min_lambda dec^o_lambda + lambda eps^2 by a certified branch-and-bound
    search over lambda (:mod:`e2d_jax.dec.lambda_search`).

    The first grid spans a range proven to contain the minimiser; each round refines the
    interval whose certified lower bound is smallest, so the lower bound covers every lambda
    and a second basin is never missed silently. Each point is an offset DEC solved by
    ``inner``.

    Attributes:
      inner: the offset solver at each lambda (None: :class:`MatrixGameIPM` for finite classes,
        :class:`InteriorPoint` for linear models); its own tolerance is replaced by
        ``inner_rtol``.
      rtol: stop when the certified gap of the whole search <= rtol |value| + atol.
      atol: absolute part of the tolerance.
      inner_rtol: relative tolerance of each inner solve (relative to the scale of
        dec^o_lambda + lambda eps^2).
      lam_grid: points of the first grid (finite classes: lambda = 0 comes on top).
      lam_refine: points solved per branch-and-bound round (one batched call).
      lam_rounds: branch-and-bound rounds at most.
      lam_lo_ratio: finite classes: the smallest positive grid point is hi * lam_lo_ratio.
      candidates: how many of the best lambdas have their mu's exact objective evaluated.
      memory: finite agents: refinement points kept per model between rounds (0: none).
      subdivide: pieces of each interval on which the first-order bound follows the optimal
        max-player mixture (see :func:`e2d_jax.dec.finite._interval_bounds`); 1 takes the
        bound of the end points' mixtures over the whole interval.
    """

    SUPPORTS: ClassVar[dict] = {("linear", "acdec"): _BOTH, ("finite", "acdec"): _BOTH}
    inner: Any = None
    rtol: float = 1e-3
    atol: float = 0.0
    inner_rtol: float = 1e-6
    lam_grid: int = 24
    lam_refine: int = 8
    lam_rounds: int = 12
    lam_lo_ratio: float = 1e-4
    candidates: int = 8
    memory: int = 0
    subdivide: int = 8

    def __post_init__(self):
        super().__post_init__()
        if self.inner is not None and not isinstance(self.inner, (Saddle, MatrixGameIPM, InteriorPoint)):
            raise V.ArgumentError("inner", f"{V.name('inner')} must be None, a Saddle, a MatrixGameIPM or an "
                                           f"InteriorPoint, got {self.inner!r}")
        V.check_positive("lam_lo_ratio", self.lam_lo_ratio)
        if not self.lam_lo_ratio < 1:
            raise ValueError(f"lam_lo_ratio must be in (0, 1), got {self.lam_lo_ratio}")

    def inner_for(self, family: str) -> Solver:
        """The offset solver of each lambda for a ``family``'s problems."""
        if self.inner is not None:
            return self.inner.check(family, "offset")
        # Each round's lambdas are one batched call: stop it when all of them are certified.
        return MatrixGameIPM() if family == "finite" else InteriorPoint()

    def prepare(self, problem, carry):
        # The family's search: its first grid, its inner solves and minorants, its answer.
        return problem.search(self, carry)

    def init(self, work):
        return work.start

    def step(self, work, state):
        return lambda_search.round_step(state, work.rounds)

    def bounds(self, work, state):
        return lambda_search.certified(state, work.rounds.eps2, work.rounds.tail)

    def halted(self, work, state):
        return ~lambda_search.evaluated(state, work.rounds.eps2)

    def steps(self, work) -> int:
        return work.rounds.n_init + work.rounds.rounds

    def min_steps(self, work) -> int:
        return work.rounds.n_init  # the first grid is solved whole

    def counter(self, work):
        return lambda state: state.round

    def answer(self, work, state) -> loop.Answer:
        return work.answer(state, self.bounds(work, state)[1])


@dataclasses.dataclass(frozen=True)
class _LambdaGrid(Solver):
    """The lambda grid of :class:`FrankWolfeGrid` and :class:`SaddleGrid` on an ac-DEC: a
    geometric grid over the proven range solved in one batched call, refined ``lam_rounds``
    times around the best point (:mod:`e2d_jax.dec.lambda_search`), each point a fixed-lambda
    program solved by ``inner``; the answer is the best point's mu with lambda*(mu), its
    objective honestly evaluated."""

    SUPPORTS: ClassVar[dict] = {("linear", "acdec"): _BOTH}
    inner: Any = None
    rtol: float = 1e-3
    atol: float = 0.0
    lam_grid: int = 50
    lam_refine: int = 12
    lam_rounds: int = 2

    @classmethod
    def of(cls, grid, inner) -> "_LambdaGrid":
        return cls(inner=inner, rtol=grid.rtol, atol=grid.atol, lam_grid=grid.lam_grid, lam_refine=grid.lam_refine,
                   lam_rounds=grid.lam_rounds)

    def prepare(self, problem, carry):
        warm = problem.cold_start() if carry is None else carry
        lo, hi = problem.lambda_range(warm.mu)
        start = WarmStart(warm.mu, warm.omega, jnp.zeros_like(warm.step))

        def solve_at(lam):
            return _point(self.inner.solve(problem.at(lam), start)[0])

        return _Work(problem, warm, (solve_at, lo, hi))

    def init(self, work):
        solve_at, lo, hi = work.form
        return lambda_search.grid_start(solve_at, lo, hi, self.lam_grid)

    def step(self, work, state):
        return lambda_search.grid_refine(work.form[0], state, work.problem.eps2, self.lam_refine)

    def bounds(self, work, state):  # the rounds all run (min_steps = steps)
        raise NotImplementedError

    def steps(self, work) -> int:
        return self.lam_rounds

    def min_steps(self, work) -> int:
        return self.lam_rounds

    def answer(self, work, state) -> loop.Answer:
        grid = lambda_search.grid_result(state, work.problem.eps2)
        sol = grid.index_solution
        lam, value = work.problem.exact_answer(sol.mu)
        return loop.Answer(mu=sol.mu, omega=sol.omega, lam=lam, value=value, lower=grid.lower_bound,
                           iterations=grid.iterations,
                           carry=WarmStart(sol.mu, sol.omega, jnp.zeros((), sol.mu.dtype)), finite=jnp.isfinite(lam))


class SearchWork(NamedTuple):
    """What :class:`LambdaSearch` takes from an ac-DEC problem (``problem.search(solver,
    carry)``): how the branch and bound runs (its family's inner solves, minorants and interval
    bounds, its first grid), its first state, and ``answer(search, lower) -> Answer``, the
    family's choice among the evaluated points."""

    rounds: Any  # lambda_search.Rounds
    start: Any  # lambda_search.Search
    answer: Any


class _Work(NamedTuple):
    """What a solver's steps need (:meth:`Solver.prepare`): the problem, the warm start and the
    program's functions or arrays."""

    problem: Any
    warm: Any
    form: Any


class Point(NamedTuple):
    """An inner solve of a lambda search at one lambda, as the searches read it."""

    upper: jax.Array  # () the objective of mu at lambda (no lambda eps^2)
    lower: jax.Array  # () certified lower bound on the offset DEC at lambda
    mu: jax.Array
    omega: jax.Array
    iterations: jax.Array


def _point(result) -> Point:
    return Point(upper=result.value, lower=result.lower_bound, mu=result.mu, omega=result.omega,
                 iterations=result.iterations)


def inner_point(solver: Solver, problem, mu0, omega0, *, rtol, atol) -> Point:
    """An inner solve of a lambda search: ``problem`` (an offset DEC at one lambda) by
    ``solver`` from (mu0, omega0) at the search's tolerances (which may be traced)."""
    start = WarmStart(mu0, omega0, jnp.zeros((), jnp.result_type(mu0)))
    return _point(solver.solve(problem, start, rtol=rtol, atol=atol)[0])


@functools.lru_cache(maxsize=None)
def _has_cuda() -> bool:
    """Whether JAX has a CUDA backend in this process."""
    try:
        return bool(jax.devices("cuda"))
    except RuntimeError:
        return False


#: Anytime-E2D's per-round budget on linear models: mirror-prox on the exact form,
#: warm-started from the last round mixed with 10% of the uniform mixture (so that actions
#: the optimum moves to come back within a few steps), a certificate every 10 steps,
#: continued until the certified gap is within 5% of the value or 200 steps are used (docs:
#: Concepts, 'Round statuses').
TRACKING = Saddle(maxiter=200, rtol=0.05, check_every=10, warm_mix=0.1)
#: The cheapest budget: 10 warm-started mirror-prox steps and one certificate a round.
FAST = Saddle(maxiter=10, rtol=0.05, check_every=10)
#: Fixed-horizon E2D's per-round solver on linear models: interior-point iterations, warm-started
#: from the last round, until certified to 1e-3 (at most 20; docs: Concepts, 'Round statuses'),
#: and where the plain method on many actions ends short of it, up to 10 more on a working
#: set of 32 actions started from its answer (``second_set``).
E2D_ROUND = InteriorPoint(maxiter=20, rtol=1e-3, second_set=32, second_maxiter=10)

#: Names of solver values: the command line, sweep files, the DEC functions and the agents take
#: these names (or values). One preset per name.
SOLVERS: dict[str, Solver] = {
    "saddle": Saddle(),
    "tracking": TRACKING,
    "fast": FAST,
    "fw-grid": FrankWolfeGrid(),
    "saddle-grid": SaddleGrid(),
    # The authors' budget (Appendix 'Experimental Setup'): 100 Frank-Wolfe steps on a 50-point
    # lambda grid, no refinement, no early stop.
    "paper": FrankWolfeGrid(maxiter=100, rtol=0.0, check_every=100, lam_grid=50, lam_refine=1, lam_rounds=0),
    # The authors' code's solve (kirschnj/pm-ids, branch e2d): arg-max Frank-Wolfe on 99 lambdas
    # up to sqrt(r) / eps, to reproduce their runs.
    "authors": SubgradientGrid(),
    "ipm": MatrixGameIPM(),
    "interior-point": InteriorPoint(),
    # An absolute tolerance of 1e-9 (in regret units) certifies the classes whose DEC is 0 to
    # float64's rounding; it is far below any regret a run could measure.
    "lambda-search": LambdaSearch(atol=1e-9),
}


def _from_dict(fields: dict) -> Solver:
    """A solver from :meth:`Solver.to_dict`'s form, or ``{"type": name of SOLVERS or a
    class, field: value, ...}`` (the preset or class with those fields)."""
    fields = dict(fields)
    kind = fields.pop("type", None)
    classes = {cls.__name__: cls for cls in (Saddle, FrankWolfeGrid, SaddleGrid, MatrixGameIPM, InteriorPoint,
                                             LambdaSearch, SubgradientGrid)}
    if kind in SOLVERS:
        base = SOLVERS[kind]
    elif kind in classes:
        base = classes[kind]()
    else:
        raise V.ArgumentError("solver", f"{V.name('solver')}: a solver table needs a type, one of "
                                        f"{', '.join([*SOLVERS, *classes])}, got {kind!r}")
    if isinstance(fields.get("inner"), dict):
        fields["inner"] = _from_dict(fields["inner"])
    return base.replace(**fields) if fields else base


def default_solver(family: str, program: str, gap_type: str = "delta_f") -> Solver:
    """The DEC functions' default for a problem: certified to 1e-3 relative (or the float
    rounding floor) on random problems of the sizes the library is made for (docs:
    Performance, 'DEC solvers')."""
    if family == "linear":
        if program == "acdec":
            return SOLVERS["saddle"] if gap_type == "delta_f" else SOLVERS["lambda-search"]
        return SOLVERS["interior-point"]
    return SOLVERS["lambda-search"] if program == "acdec" else SOLVERS["ipm"]


def resolve(solver, family: str | None = None, program: str | None = None, gap_type: str = "delta_f",
            **options) -> Solver:
    """A solver value from a value, a name of :data:`SOLVERS` or None (the default for the
    problem), with ``options`` (fields) replaced, checked against the problem when ``family``
    and ``program`` are given. Errors are ValueErrors naming ``solver``."""
    if solver is None:
        if family is None or program is None:
            raise V.ArgumentError("solver", f"{V.name('solver')}: a solver value or name is needed (no problem to choose a default for)")
        solver = default_solver(family, program, gap_type)
    elif isinstance(solver, str):
        if solver not in SOLVERS:
            raise V.ArgumentError("solver", f"{V.name('solver')} must be one of {', '.join(SOLVERS)} or a solver value "
                             f"(e2d_jax.dec.solvers), got {solver!r}")
        solver = SOLVERS[solver]
    elif isinstance(solver, dict):
        solver = _from_dict(solver)
    elif not isinstance(solver, Solver):
        raise V.ArgumentError("solver", f"{V.name('solver')} must be a name ({', '.join(SOLVERS)}) or a solver value of e2d_jax.dec.solvers "
                         f"(e.g. Saddle(maxiter=100)), got {type(solver).__name__}")
    if options:
        solver = solver.replace(**options)
    if family is not None and program is not None:
        solver.check(family, program, gap_type)
    return solver


def with_budget(solver: Solver, iters: int, family: str = "linear") -> Solver:
    """``solver`` with an iteration budget of ``iters`` per solve: its ``maxiter`` (and
    ``check_every`` no larger), or, for a :class:`LambdaSearch`, that of the inner solver it
    uses on ``family``'s problems. A ValueError names ``solver_iters`` for a budget that is
    not an integer >= 1."""
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise V.ArgumentError("solver_iters", f"{V.name('solver_iters')} must be an integer >= 1, got {iters!r}")
    if isinstance(solver, LambdaSearch):
        return solver.replace(inner=solver.inner_for(family).replace(maxiter=iters))
    changes = {"maxiter": iters}
    if hasattr(solver, "check_every"):
        changes["check_every"] = min(solver.check_every, iters)
    return solver.replace(**changes)


def in_float64(call, dtype, *inputs):
    """``call(working dtype)`` in float64 when every input is concrete, its answer cast back to
    ``dtype`` (the inputs'); under ``jit``/``vmap`` (traced inputs) in ``dtype`` itself.

    The public DEC functions certify their answers this way: a certificate is only as tight as
    the rounding of the sums it is made of, and in float32 that floor, 50 ulps of the largest
    entry of the program, exceeds the 1e-3 tolerance on some problems (a finite game at a large
    lambda; a nearly singular design matrix). float32 problems are exactly float64 problems, so
    the float64 answer is that of the given problem, rounded once at the end.
    """
    if not all(V.is_concrete(x) for x in jax.tree_util.tree_leaves(inputs)) or dtype == jnp.float64:
        return call(dtype)
    with jax.enable_x64(True):
        out = call(jnp.float64)
    floating = lambda x: jnp.issubdtype(jnp.result_type(x), jnp.floating)  # noqa: E731
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype) if floating(x) else x, out)
