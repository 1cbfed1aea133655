"""The DEC solvers as values: what each solves, its budget and tolerances, and their names.

A solver is a small frozen dataclass (in the manner of optimistix): its fields are its budget
and tolerances, ``solve(problem, carry) -> (DecResult, carry)`` runs it on a problem of
:mod:`e2d_jax.dec.linear` or :mod:`e2d_jax.dec.finite`, and :attr:`Solver.SUPPORTS` declares,
once, which programs of which model family it solves and for which gap types. Every DEC
function, E2D agent, sweep file and the command line take a solver value or a name of
:data:`SOLVERS`; :func:`resolve` turns either into a value and :meth:`Solver.check` is the one
place where a solver is refused for a problem it does not solve.

The solvers:

* :class:`Saddle`: optimistic mirror-prox on the program's saddle-point form
  (:mod:`e2d_jax.dec.saddle`). On the linear ac-DEC this is the exact convex-concave form of
  the linear-DEC lemma, which is convex only for the gaps Delta_f; on the offset programs
  (linear, and finite matrix games) both gap types.
* :class:`FrankWolfeGrid`: smoothed Frank-Wolfe on the fixed-lambda program (Appendix
  'Convex Program for Fixed lambda') on a vectorised lambda grid: the paper's mode. On an
  offset program (lambda given) it is plain smoothed Frank-Wolfe.
* :class:`SaddleGrid`: the same grid with mirror-prox for each fixed-lambda program.
* :class:`InteriorPoint`: a primal-dual interior-point method for the linear offset DEC
  (:mod:`e2d_jax.dec.interior_point`): a fixed number of Newton iterations, certified to 1e-4
  on random problems where mirror-prox needs thousands of iterations.
* :class:`MatrixGameIPM`: a primal-dual interior-point method for the finite offset DEC (a
  matrix game; :mod:`e2d_jax.dec.matrix_game`).
* :class:`LambdaSearch`: the ac-DEC as min over lambda of the offset DEC plus lambda eps^2,
  by a certified branch-and-bound search over lambda (:mod:`e2d_jax.dec.lambda_search`) whose
  points are solved by an inner solver (an interior-point method in both families). It solves both gap types of both families, and is the
  default wherever the exact form does not apply (the linear ac-DEC with gaps Delta, every
  finite ac-DEC).

Every solver returns its certificate (``value``, ``lower_bound``, ``gap``) and a status:
``OK`` when the certified gap is within ``rtol * |value| + atol``, ``MAX_ITER`` when the
budget ran out first (the answer is still valid and its gap says how far from optimal it may
be), ``NONFINITE`` when a value is not finite.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.types import GAP_TYPES

#: The programs a solver may solve: the average-constrained DEC (``"acdec"``, a radius eps^2)
#: and the offset DEC (``"offset"``, a multiplier lambda).
PROGRAMS = ("acdec", "offset")

_BOTH = GAP_TYPES

#: Implementations of :class:`Saddle` (see its ``kernel``).
KERNELS = ("auto", "xla", "pallas")


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

    def solve(self, problem, carry=None):
        """Solves ``problem`` (a problem of :mod:`e2d_jax.dec.linear` or
        :mod:`e2d_jax.dec.finite`) from ``carry`` (a warm start, or None).

        Returns:
          ``(DecResult, carry)``: the answer with its certificate, and what the next solve
          takes to continue from it.
        """
        self.check(problem.family, problem.program, problem.gap_type)
        return problem.solve_with(self, carry)

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
    """

    SUPPORTS: ClassVar[dict] = {("linear", "acdec"): ("delta_f",), ("linear", "offset"): _BOTH,
                                ("finite", "offset"): _BOTH}
    maxiter: int = 4000
    rtol: float = 1e-3
    atol: float = 0.0
    check_every: int = 25
    kernel: str = "auto"

    def __post_init__(self):
        super().__post_init__()
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")


@dataclasses.dataclass(frozen=True)
class FrankWolfeGrid(Solver):
    """Smoothed Frank-Wolfe per lambda on a vectorised, refined lambda grid (the paper's mode;
    :mod:`e2d_jax.dec.frank_wolfe`, :func:`e2d_jax.dec.lambda_search.grid_search`).

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


@dataclasses.dataclass(frozen=True)
class MatrixGameIPM(Solver):
    """A primal-dual interior-point method for the matrix game of the finite offset DEC
    (:func:`e2d_jax.dec.matrix_game.solve_game_ipm`).

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


@dataclasses.dataclass(frozen=True)
class InteriorPoint(Solver):
    """A primal-dual interior-point method for the linear offset DEC
    (:mod:`e2d_jax.dec.interior_point`): Newton steps on the epigraph form, at most
    ``maxiter`` of them, each answer certified.

    Attributes:
      maxiter: Newton iterations at most (a problem that meets the tolerance is frozen).
      rtol: the tolerance of the certified gap, rtol |value| + atol.
      atol: absolute part of the tolerance.
      early_stop: stop the loop once every problem of the batch meets the tolerance (a
        ``lax.while_loop``; under ``vmap`` it runs until the batch's slowest problem is
        done). False runs exactly ``maxiter`` iterations (a ``lax.fori_loop``). The answers
        are the same either way.
    """

    SUPPORTS: ClassVar[dict] = {("linear", "offset"): _BOTH}
    maxiter: int = 25
    rtol: float = 1e-4
    atol: float = 0.0
    early_stop: bool = True


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


#: Anytime-E2D's per-round budget on linear models: mirror-prox on the exact form,
#: warm-started from the last round, a certificate every 10 steps, continued until the
#: certified gap is within 5% of the value or 100 steps are used (docs: Concepts, 'Round
#: statuses').
TRACKING = Saddle(maxiter=100, rtol=0.05, check_every=10)
#: The cheapest budget: 10 warm-started mirror-prox steps and one certificate a round.
FAST = Saddle(maxiter=10, rtol=0.05, check_every=10)
#: Fixed-horizon E2D's per-round solver on linear models: interior-point iterations, warm-started
#: from the last round, until certified to 1e-3 (at most 10; docs: Concepts, 'Round statuses').
E2D_ROUND = InteriorPoint(maxiter=10, rtol=1e-3)

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
                                             LambdaSearch)}
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
