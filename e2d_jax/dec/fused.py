"""The agents' linear DEC solves as one fused GPU kernel (Pallas, Triton lowering).

:func:`solve_acdec` and :func:`solve_offset` compute what :func:`e2d_jax.dec.linear.solve_acdec`
(the exact form, gaps Delta_f) and :func:`e2d_jax.dec.linear.solve_offset` (fixed lambda, gaps
Delta_f or Delta) compute with the saddle-point solver, with the same arguments and the same
``(DecResult, WarmStart)`` answer: optimistic mirror-prox with the adaptive step, the certificate
at the last iterate, at the average and of the best mu against the averaged max player, and the
loop of :class:`e2d_jax.dec.solvers.Saddle` (blocks of ``check_every`` steps, each followed
by a certificate, until ``upper - lower <= rtol |upper| + atol`` or ``maxiter`` steps; see
``e2d_jax.dec.saddle`` and ``e2d_jax.dec.linear`` for the mathematics). Under XLA one solve is
hundreds of small kernels per step; here a block of problems keeps its whole state on chip from
the warm start to the answer, in one kernel launch per call.

Layout. Problems lie on the lanes (the minor axis): a program of the kernel takes a block of
B problems (seeds), and every per-problem vector over the actions is an array (Kp, B), every
per-problem number an array (B,). The number of actions is padded to Kp, a power of 2 (Triton's
arrays have such sizes), and the padded actions are masked: they get no mass (mu, omega and
their logarithms are 0 there), never win a maximum or a minimum, and their features and Gram
matrices are 0, so they add exact zeros to every sum. The loops over the span's coordinates
(r) are unrolled in Python: V(mu) is a set of r (r + 1) / 2 numbers per problem, factorised by
the unrolled Cholesky of ``e2d_jax._linalg.psd_solve`` (same pivot floor), and the solves run
on (Kp, B) arrays. Every operation is elementwise across the problems or a reduction over the
actions of one problem; nothing is gathered or reduced across problems. The closed-form
maximum over two-action mixtures (``max_sqrt_mixture``) is a loop over the first action of the
pair, each row a (Kp, B) array over the second, with XLA's ``argmax`` rules (pairs in row
order, then the vertices; the first maximum wins; NaN above everything). The mirror-prox steps
are a ``fori_loop`` in the kernel, the three certificates of a check a loop of three (one copy
of their code), and the checks a ``while_loop`` that runs while any problem of the block is
active; a problem that has stopped keeps its values (a select after each block), as under a
vmapped ``lax.while_loop``, so a problem's answer does not depend on the problems beside it.

Block size. Each program is one warp (``NUM_WARPS`` = 1, 32 threads), and a (Kp, B) array puts
Kp B / 32 numbers in each thread. A problem's live state in a step is about 16 + r such
vectors (iterates, predictors and averages of both players, the best pair, the prox points and
gradients, V(mu)^{-1} Phi) and r (r + 1) numbers (V(mu) and its factor). With
B = ``default_block(K)`` = min(32, 256 / Kp), a thread holds at most 8 numbers of each vector:
~170 registers for the paper's K = 10, r = 3 (Kp = 16, B = 16: each problem on 2 threads, a
sum over actions one shuffle), under the 255 a thread may have; at the largest shapes (K = 16,
r = 8) some state spills to cached local memory. B = 32 with Kp = 16 would double the
per-thread vectors and spill at every shape; smaller blocks would spread a problem over more
threads (more shuffles per sum, and each of them computing the problem's numbers, such as
V(mu)'s factor). The problem's data (features, Gram matrices) are read from memory where used,
not held in registers across the steps.

Batching. The public functions are written for one problem (vmap them at the call site as
everywhere in the library). Inside, the problem goes to a ``jax.custom_batching.custom_vmap``
function of problems stacked on a leading axis, whose batching rule flattens each new batch
axis into that axis and calls itself again: however many ``vmap`` levels (seeds, instances,
hyperparameter cells) surround the call, the whole batch becomes ONE ``pallas_call`` over the
flattened lanes. Unbatched arguments (e.g. a model shared by the seeds) are broadcast. The
model and the round's data (estimate, eps^2 or lambda, warm start) go in as two slabs, so that
in a rollout the model's may be packed once, outside the rounds' loop. The rewards r_b = <phi_b, f_hat> are computed in the kernel (an XLA matrix-vector product may round
differently with the batch around it). The lanes are padded to a multiple of B by repeating the
last problem, which can neither change another lane (lanes are independent) nor keep a block's
loop running longer than its real problems do.

On CPU (the tests) the same kernel runs with ``interpret=True``, as plain JAX operations, in
float32 or float64. Answers agree with the XLA solver's to rounding: the arithmetic is the same
in a different order (sums over actions and coordinates), and on a GPU the transcendental
functions differ by an ulp. Rounding differences are amplified as they are between two runs
of the XLA solver whose inputs differ by an ulp: by the conditioning of V(mu), and by the
step-size rule, whose accept / reject test can fall either way when its two sides are equal
to rounding.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pl_triton

from e2d_jax import _checks as V
from e2d_jax.dec.saddle import FLOOR
from e2d_jax.envs.linear import ObservableSpan
from e2d_jax.types import GAP_TYPES, DecResult, Status, WarmStart

#: Largest number of actions K and span dimension r the fused kernel is built for (a thread
#: holds Kp B / 32 numbers of each vector and the kernel is unrolled over r^2 / 2 entries).
MAX_ACTIONS = 16
MAX_RANK = 8

#: Warps per program (a program is one block of problems).
NUM_WARPS = 1

#: Floating dtypes of the compiled (GPU) kernel; interpret mode also runs float64.
GPU_DTYPES = (np.dtype(np.float32),)
INTERPRET_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def supports(num_actions: int, rank: int, dtype, *, interpret: bool = False) -> bool:
    """Whether the fused path takes a problem of K = ``num_actions`` actions in an observable
    span of dimension r = ``rank`` with arrays of ``dtype`` (else call the XLA solver).

    Args:
      num_actions: K (2 <= K <= ``MAX_ACTIONS``).
      rank: r, the dimension of the observable span (1 <= r <= ``MAX_RANK``).
      dtype: the problem's floating dtype (float32 on a GPU; float64 too in interpret mode).
      interpret: whether the kernel would run in interpret mode.
    """
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return False
    dtypes = INTERPRET_DTYPES if interpret else GPU_DTYPES
    return 2 <= int(num_actions) <= MAX_ACTIONS and 1 <= int(rank) <= MAX_RANK and dt in dtypes


def padded_actions(num_actions: int) -> int:
    """Kp: the number of actions padded to a power of 2 (at least 2)."""
    return 1 << max(1, int(num_actions) - 1).bit_length()


def default_block(num_actions: int) -> int:
    """Problems per program, min(32, 256 / Kp): at most 8 numbers of a vector per thread."""
    return min(32, 256 // padded_actions(num_actions))


class _Spec(NamedTuple):
    """What the compiled kernel is specialised to (static, hashable)."""

    form: str  # "acdec" (exact form, eps^2 per problem) or "offset" (lambda per problem)
    gap_type: str
    num_actions: int
    rank: int
    maxiter: int
    check_every: int
    rtol: float
    atol: float
    block: int
    interpret: bool
    dtype: str


class _Layout:
    """Rows of the kernel's slabs (one column per problem; Kp = K padded).

    Model (the same every round, so a rollout may pack it once): the features by coordinate
    (r tiles of Kp rows), the Gram matrices' packed lower triangles by entry (T = r (r + 1) / 2
    tiles of Kp rows) and the null projector's lower triangle (T rows). Round: f_hat in span
    coordinates (r rows), eps^2 or lambda (1), the warm start's mu (Kp), omega (Kp) and step
    (1). Padded actions are rows of zeros. Output: mu (Kp), omega (Kp), lambda, value, lower
    bound, gap, step; and, as int32, iterations and status.
    """

    def __init__(self, k: int, r: int):
        self.k, self.r, self.tri = k, r, r * (r + 1) // 2
        self.kp = padded_actions(k)
        self.phi = 0
        self.gram = r * self.kp
        self.null = self.gram + self.tri * self.kp
        self.model_size = self.null + self.tri
        self.f_hat = 0
        self.param = r
        self.mu0 = self.param + 1
        self.om0 = self.mu0 + self.kp
        self.step0 = self.om0 + self.kp
        self.round_size = self.step0 + 1
        self.out_size = 2 * self.kp + 5

    @staticmethod
    def t(i: int, j: int) -> int:
        """Position of entry (i, j) of a symmetric matrix in its packed lower triangle."""
        i, j = max(i, j), min(i, j)
        return i * (i + 1) // 2 + j


# --------------------------------------------------------------------------------------
# The kernel: one block of problems, arrays (Kp, B) over actions x problems or (B,)


def _max2(x, y):
    """max(x, y) that propagates NaN like XLA's (Triton's maximum returns the number)."""
    return jnp.where((x > y) | jnp.isnan(x), x, y)


def _min2(x, y):
    return jnp.where((x < y) | jnp.isnan(x), x, y)


def _select(pred, new, old):
    return jax.tree_util.tree_map(lambda n, o: jnp.where(pred, n, o), new, old)


class _SolverState(NamedTuple):
    """:class:`e2d_jax.dec.saddle.SaddleState` of a block: vectors (Kp, B), scalars (B,)."""

    log_mu: jax.Array
    log_om: jax.Array
    g_mu_prev: jax.Array
    g_om_prev: jax.Array
    mu_avg: jax.Array
    om_avg: jax.Array
    weight: jax.Array
    step: jax.Array
    best_mu: jax.Array
    best_om: jax.Array
    upper: jax.Array
    lower: jax.Array
    iters: jax.Array  # (B,) int32
    aux: tuple  # the exact form's (lambda, value) at best_mu; () for the offset form


class _Block:
    """One program of the kernel: its block of B problems, the reductions over their actions,
    their data, and V(mu)'s factorisation and solves.

    Vectors over the actions are (Kp, B) arrays, numbers (B,); the padded actions (rows K..Kp)
    are masked out of every maximum, minimum and argmax (``real``) and hold zeros otherwise.
    """

    def __init__(self, spec: _Spec, model_ref, round_ref):
        self.spec, self.model_ref, self.round_ref = spec, model_ref, round_ref
        self.lay = lay = _Layout(spec.num_actions, spec.rank)
        self.k, self.kp, self.r = lay.k, lay.kp, lay.r
        self.dtype = np.dtype(spec.dtype)
        self.eps_m = jnp.finfo(self.dtype).eps
        self.tiny = jnp.finfo(self.dtype).tiny
        self.coords = range(self.r)
        self.lower_pairs = [(i, j) for i in self.coords for j in range(i + 1)]
        self.block = model_ref.shape[-1]
        self.iota = lax.broadcasted_iota(jnp.int32, (self.kp, self.block), 0)
        self.real = self.iota < self.k  # the padded actions: no mass, never a max or a min
        self.zeros = jnp.zeros((self.kp, self.block), self.dtype)

    def full(self, value):
        return jnp.full((self.block,), value, self.dtype)

    def tile(self, ref, start):
        return ref[pl.ds(start, self.kp), :]

    @staticmethod
    def row(ref, f):
        return ref[f, :]

    # ---- reductions over the actions (axis 0), NaN-propagating and blind to the padding
    @staticmethod
    def rsum(x):
        return jnp.sum(x, axis=0)

    def has_nan(self, x):
        return jnp.max((self.real & jnp.isnan(x)).astype(jnp.int32), axis=0) > 0

    def rmax(self, x):
        top = jnp.max(jnp.where(self.real, x, -jnp.inf), axis=0)
        return jnp.where(self.has_nan(x), jnp.nan, top)

    def rmin(self, x):
        low = jnp.min(jnp.where(self.real, x, jnp.inf), axis=0)
        return jnp.where(self.has_nan(x), jnp.nan, low)

    def argmax_first(self, x, valid):
        """(max, index) over the valid actions with jnp.argmax's rules: the first maximum,
        and a NaN (the first one) above everything."""
        iota, kp = self.iota, self.kp
        nan = valid & jnp.isnan(x)
        xs = jnp.where(valid & ~nan, x, -jnp.inf)
        top = jnp.max(xs, axis=0)
        first_top = jnp.min(jnp.where(valid & ~nan & (xs == top), iota, kp), axis=0)
        first_nan = jnp.min(jnp.where(nan, iota, kp), axis=0)
        any_nan = first_nan < kp
        return jnp.where(any_nan, jnp.nan, top), jnp.where(any_nan, first_nan, first_top)

    def pick(self, x, index):
        """x[index] per problem (one nonzero term in the sum: exact)."""
        return self.rsum(jnp.where(self.iota == index, x, 0.0))

    def onehot(self, index):
        return jnp.where(self.iota == index, 1.0, self.zeros)

    # ---- the problems' data
    def problem_tiles(self):
        """(phi (r tiles), gram (T tiles), null (T rows), rewards r_b), read where used (inside
        the loops), so the data need not stay in registers."""
        lay, kp, model_ref, round_ref = self.lay, self.kp, self.model_ref, self.round_ref
        phi = [self.tile(model_ref, lay.phi + i * kp) for i in self.coords]
        gram = [self.tile(model_ref, lay.gram + t * kp) for t in range(lay.tri)]
        null = [self.row(model_ref, lay.null + t) for t in range(lay.tri)]
        # r_b = <phi_b, f_hat> here rather than by XLA's matrix-vector product, whose
        # rounding may depend on the batch around it.
        rew = self.combine(phi, [self.row(round_ref, lay.f_hat + i) for i in self.coords])
        return phi, gram, null, rew

    def combine(self, tiles, coefficients):
        """sum_i coefficients_i tiles_i, in the coordinates' order."""
        return functools.reduce(lambda acc, i: acc + tiles[i] * coefficients[i], self.coords[1:],
                                tiles[0] * coefficients[0])

    # ---- V(mu), its unrolled Cholesky factor and solves (as e2d_jax._linalg.psd_solve)
    def cholesky(self, gram, null, mu):
        """The lower factor of V(mu) = sum_pi mu_pi G_pi + null_proj, ``{(i, j): (B,)}``, its
        pivots floored at eps r max diag (``_linalg.psd_solve``'s floor)."""
        v = {(i, j): self.rsum(mu * gram[self.lay.t(i, j)]) + null[self.lay.t(i, j)] for i, j in self.lower_pairs}
        diag = functools.reduce(_max2, [v[i, i] for i in self.coords])
        floor = self.eps_m * self.r * diag
        low = {}
        for j in self.coords:
            s = v[j, j]
            for k in range(j):
                s = s - low[j, k] * low[j, k]
            low[j, j] = jnp.sqrt(_max2(s, floor))
            for i in range(j + 1, self.r):
                s = v[i, j]
                for k in range(j):
                    s = s - low[i, k] * low[j, k]
                low[i, j] = s / low[j, j]
        return low

    def solve(self, low, cols):
        """V^{-1} X^T by the factor ``low``: forward, then back substitution (r tiles)."""
        y = []
        for i in self.coords:
            s = cols[i]
            for k in range(i):
                s = s - low[i, k] * y[k]
            y.append(s / low[i, i])
        w = [None] * self.r
        for i in reversed(self.coords):
            s = y[i]
            for k in range(i + 1, self.r):
                s = s - low[k, i] * w[k]
            w[i] = s / low[i, i]
        return w

    def norms(self, gram, null, mu, cols):
        """w_i = (V(mu)^{-1} X^T)_i (r tiles) and c_b = <w_b, x_b> for columns x_b (tiles by
        coordinate; zero on padded actions, so is w there)."""
        w = self.solve(self.cholesky(gram, null, mu), cols)
        return w, self.combine(w, cols)

    def info_gradient(self, gram, w, weights):
        """-<G_pi, W diag(weights) W^T> for every pi (``dec.linear.info_gradient``), (Kp, B)."""
        total = None
        for i, j in self.lower_pairs:
            q = self.rsum((w[i] * w[j]) * weights)
            term = gram[self.lay.t(i, j)] * q
            term = term if i == j else 2.0 * term  # symmetric: (i, j) and (j, i)
            total = term if total is None else total + term
        return -total


class _ExactForm:
    """The ac-DEC's exact form L(mu, omega) = omega.a(mu) + eps sqrt(omega.c(mu)): gradients and
    certificate (``dec.linear._exact_problem``); ``aux`` is (lambda*(mu), psi) at the best mu."""

    def __init__(self, blk: _Block):
        self.blk = blk
        self.param = blk.row(blk.round_ref, blk.lay.param)
        self.eps2 = self.param
        self.eps = jnp.sqrt(_max2(self.eps2, blk.full(0.0)))
        self.aux0 = (blk.full(jnp.nan), blk.full(jnp.nan))

    def max_sqrt_mixture(self, a, c):
        """max over omega of omega.a + eps sqrt(omega.c): the best point of each segment
        between two actions (pairs i < j in row order, then the vertices; the first maximum
        wins, as in ``dec.linear.max_sqrt_mixture``). Returns (value, omega, y)."""
        blk, eps = self.blk, self.eps
        zeros, iota = blk.zeros, blk.iota
        root_c = eps * jnp.sqrt(_max2(c, zeros))

        def row_of_pairs(i, best):
            a_i, c_i, rc_i = blk.pick(a, i), blk.pick(c, i), blk.pick(root_c, i)
            dx, dy = a - a_i, c - c_i
            interior = dx * dy < 0
            sdx = jnp.where(interior, dx, 1.0)
            sdy = jnp.where(interior, dy, 1.0)
            q = eps * sdy / (2.0 * sdx)
            y_star = q * q
            t_stat = jnp.where(interior, _min2(_max2((y_star - c_i) / sdy, zeros), zeros + 1.0), 0.0)
            t_end = jnp.where(a + root_c > a_i + rc_i, 1.0, zeros)
            t = jnp.where(interior, t_stat, t_end)
            y = _max2(c_i + t * dy, zeros)
            val = a_i + t * dx + eps * jnp.sqrt(y)
            v_row, j_row = blk.argmax_first(val, blk.real & (iota > i))
            cand = (v_row, jnp.full((blk.block,), i, jnp.int32), j_row, blk.pick(t, j_row), blk.pick(y, j_row))
            better = (i == 0) | (v_row > best[0]) | (jnp.isnan(v_row) & ~jnp.isnan(best[0]))
            return _select(better, cand, best)

        none = jnp.zeros((blk.block,), jnp.int32)
        best = (blk.full(-jnp.inf), none, none, blk.full(0.0), blk.full(0.0))
        best = lax.fori_loop(0, blk.k - 1, row_of_pairs, best)
        # the vertices: t = 0 and y = max(c_b, 0)
        v_vert, b_vert = blk.argmax_first(a + root_c, blk.real)
        cand = (v_vert, b_vert, b_vert, blk.full(0.0), blk.pick(_max2(c, zeros), b_vert))
        better = (v_vert > best[0]) | (jnp.isnan(v_vert) & ~jnp.isnan(best[0]))
        value, bi, bj, t, y = _select(better, cand, best)
        return value, (1.0 - t) * blk.onehot(bi) + t * blk.onehot(bj), y

    def grads(self, mu, om):
        blk, eps = self.blk, self.eps
        phi, gram, null, rew = blk.problem_tiles()
        w, c = blk.norms(gram, null, mu, phi)
        root = jnp.sqrt(blk.rsum(om * c))
        coef = eps / (2.0 * root)
        g_mu = jnp.where(blk.real, -rew + coef * blk.info_gradient(gram, w, om), 0.0)
        g_om = jnp.where(blk.real, rew + eps * c / (2.0 * root), 0.0)
        return g_mu, g_om

    def certificate(self, mu, om):
        blk, eps = self.blk, self.eps
        phi, gram, null, rew = blk.problem_tiles()
        w, c = blk.norms(gram, null, mu, phi)
        a = rew - blk.rsum(mu * rew)
        upper, om_star, y = self.max_sqrt_mixture(a, c)
        lower = blk.full(-jnp.inf)
        for o in (om, om_star):
            root = jnp.sqrt(blk.rsum(o * c))
            coef = eps / (2.0 * root)
            g = -rew + coef * blk.info_gradient(gram, w, o)
            lagr = blk.rsum(o * a) + eps * root
            lower = _max2(lower, lagr + blk.rmin(g) - blk.rsum(jnp.where(blk.real, g, 0.0) * mu))
        lam = jnp.sqrt(y) / (2.0 * eps)
        value = blk.rmax(a + c / (4.0 * lam)) + lam * self.eps2
        return upper, lower, (lam, value)

    def answer(self, state):
        """(lambda, value) of the answer: lambda*(mu) and psi at the best mu."""
        return state.aux


class _OffsetForm:
    """The offset DEC's L(mu, omega) = sum_b omega_b h_b(mu) at a fixed lambda: gradients and
    certificate (``dec.linear._offset_problem``), gaps Delta_f or Delta."""

    def __init__(self, blk: _Block):
        self.blk = blk
        self.param = blk.row(blk.round_ref, blk.lay.param)
        self.four_lam = 4.0 * self.param
        self.aux0 = ()

    def pieces(self, mu):
        """h(mu) (Kp, B) and ``grad(weights)``: the gradient of sum_b weights_b h_b at mu."""
        blk = self.blk
        real = blk.real
        phi, gram, null, rew = blk.problem_tiles()
        if blk.spec.gap_type == "delta_f":
            cols = phi
        else:
            cols = [jnp.where(real, phi[i] - blk.rsum(mu * phi[i]), 0.0) for i in blk.coords]
        w, c = blk.norms(gram, null, mu, cols)
        h = rew - blk.rsum(mu * rew) + c / self.four_lam

        def grad(weights):
            ig = blk.info_gradient(gram, w, weights)
            if blk.spec.gap_type != "delta_f":
                # c_b = x_b^T V^{-1} x_b with x_b = phi_b - phi_mu: d/dmu_pi adds
                # -2 phi_pi^T V^{-1} x_b to the Delta_f term.
                ig = ig + -2.0 * blk.combine(phi, [blk.rsum(w[i] * weights) for i in blk.coords])
            return jnp.where(real, -rew + ig / self.four_lam, 0.0)

        return h, grad

    def grads(self, mu, om):
        h, grad = self.pieces(mu)
        return grad(om), jnp.where(self.blk.real, h, 0.0)

    def certificate(self, mu, om):
        blk = self.blk
        h, grad = self.pieces(mu)
        g = grad(om)
        upper = blk.rmax(h)
        lower = blk.rsum(om * jnp.where(blk.real, h, 0.0)) + blk.rmin(g) - blk.rsum(g * mu)
        _, b_star = blk.argmax_first(h, blk.real)
        g2 = grad(blk.onehot(b_star))
        lower2 = upper + blk.rmin(g2) - blk.rsum(g2 * mu)
        return upper, _max2(lower, lower2), ()

    def answer(self, state):
        """(lambda, value) of the answer: the given lambda and the objective at the best mu."""
        return self.param, state.upper


class _MirrorProx:
    """Optimistic mirror-prox with the adaptive step and the certificates of
    ``e2d_jax.dec.saddle``, on a block of problems of ``form`` (an :class:`_ExactForm` or
    :class:`_OffsetForm`)."""

    def __init__(self, blk: _Block, form):
        self.blk, self.form = blk, form

    def normalise(self, logits):
        """(p, log p), p = softmax(logits) mixed with FLOOR of the uniform on the real actions."""
        blk, real = self.blk, self.blk.real
        top = _max2(blk.full(-jnp.inf), blk.rmax(logits))
        e = jnp.exp(jnp.where(real, logits, -jnp.inf) - top)
        p = jnp.where(real, (1.0 - FLOOR) * (e / blk.rsum(e)) + FLOOR / blk.k, 0.0)
        return p, jnp.where(real, jnp.log(jnp.where(real, p, 1.0)), 0.0)

    def prox(self, log_z, g, eta):
        return self.normalise(log_z - eta * g)

    def kl(self, p, log_p, log_q):
        return self.blk.rsum(p * (log_p - log_q))

    def floor_simplex(self, z):
        blk = self.blk
        z = jnp.where(blk.real, _max2(z, blk.zeros), 0.0)
        return self.normalise(jnp.log(z / blk.rsum(z) + blk.tiny))

    def spread(self, g_mu, g_om):
        blk = self.blk
        return (blk.rmax(g_mu) - blk.rmin(g_mu)) + (blk.rmax(g_om) - blk.rmin(g_om))

    def init(self) -> _SolverState:
        blk, lay = self.blk, self.blk.lay
        mu0, log_mu0 = self.floor_simplex(blk.tile(blk.round_ref, lay.mu0))
        om0, log_om0 = self.floor_simplex(blk.tile(blk.round_ref, lay.om0))
        g_mu, g_om = self.form.grads(mu0, om0)
        auto = 1.0 / _max2(self.spread(g_mu, g_om), blk.full(1e-12))
        step0 = blk.row(blk.round_ref, lay.step0)
        return _SolverState(
            log_mu=log_mu0, log_om=log_om0, g_mu_prev=g_mu, g_om_prev=-g_om, mu_avg=mu0, om_avg=om0,
            weight=blk.full(0.0), step=jnp.where(step0 > 0, step0, auto), best_mu=mu0, best_om=om0,
            upper=blk.full(jnp.inf), lower=blk.full(-jnp.inf), iters=jnp.zeros((blk.block,), jnp.int32),
            aux=self.form.aux0)

    def step(self, s: _SolverState) -> _SolverState:
        blk, kl, prox = self.blk, self.kl, self.prox
        eta = s.step
        w_mu, log_w_mu = prox(s.log_mu, s.g_mu_prev, eta)
        w_om, log_w_om = prox(s.log_om, s.g_om_prev, eta)
        g_mu, g_om = self.form.grads(w_mu, w_om)
        g_om = -g_om
        mu_new, log_mu_new = prox(s.log_mu, g_mu, eta)
        om_new, log_om_new = prox(s.log_om, g_om, eta)
        d_mu, d_om = g_mu - s.g_mu_prev, g_om - s.g_om_prev
        lhs = eta * (blk.rsum(d_mu * (w_mu - mu_new)) + blk.rsum(d_om * (w_om - om_new)))
        rhs = (kl(mu_new, log_mu_new, log_w_mu) + kl(w_mu, log_w_mu, s.log_mu)
               + kl(om_new, log_om_new, log_w_om) + kl(w_om, log_w_om, s.log_om))
        # the rounding slack and the step rule of saddle.step (there with their reasons)
        g_range = _max2(blk.rmax(jnp.abs(d_mu)), blk.rmax(jnp.abs(d_om)))
        slack = 4.0 * (2 * blk.k) * blk.eps_m * (1.0 + eta * g_range)
        ok = (lhs <= rhs + slack) & jnp.isfinite(lhs)
        grow = _min2(eta * 1.2, 50.0 / _max2(self.spread(g_mu, g_om), blk.full(1e-30)))
        weight = s.weight + jnp.where(ok, eta, 0.0)
        frac = jnp.where(ok, eta / _max2(weight, blk.full(1e-30)), 0.0)
        return s._replace(
            log_mu=jnp.where(ok, log_mu_new, s.log_mu), log_om=jnp.where(ok, log_om_new, s.log_om),
            g_mu_prev=g_mu, g_om_prev=g_om,
            mu_avg=s.mu_avg + frac * (w_mu - s.mu_avg), om_avg=s.om_avg + frac * (w_om - s.om_avg),
            weight=weight, step=jnp.where(ok, grow, eta * 0.5), iters=s.iters + 1)

    def certify(self, s: _SolverState) -> _SolverState:
        """saddle._certify: the last iterate, the average, then the best mu against the
        averaged max player (lower bound only); one loop of three, so the certificate's code is
        emitted once."""
        real = self.blk.real
        last_mu = jnp.where(real, jnp.exp(s.log_mu), 0.0)
        last_om = jnp.where(real, jnp.exp(s.log_om), 0.0)

        def one(which, carry):
            best_mu, best_om, upper, lower, aux = carry
            mu = jnp.where(which == 0, last_mu, jnp.where(which == 1, s.mu_avg, best_mu))
            om = jnp.where(which == 0, last_om, s.om_avg)
            up, lo, extra = self.form.certificate(mu, om)
            better = (up < upper) & (which < 2)
            lower = _max2(lower, jnp.where(jnp.isfinite(lo), lo, lower))
            return (jnp.where(better, mu, best_mu), jnp.where(better, om, best_om),
                    jnp.where(better, up, upper), lower, _select(better, extra, aux))

        carry = (s.best_mu, s.best_om, s.upper, s.lower, s.aux)
        best_mu, best_om, upper, lower, aux = lax.fori_loop(0, 3, one, carry)
        return s._replace(best_mu=best_mu, best_om=best_om, upper=upper, lower=lower, aux=aux)

    def converged(self, upper, lower):
        spec = self.blk.spec
        return upper - lower <= spec.rtol * jnp.abs(upper) + spec.atol

    def run(self) -> _SolverState:
        """The saddle-point solver's loop: blocks of ``check_every`` steps, each followed by a certificate,
        while any problem of the block is active (a problem that stopped keeps its values)."""
        spec = self.blk.spec
        check_every = max(1, min(spec.check_every, spec.maxiter))
        n_checks = max(1, -(-spec.maxiter // check_every))

        def block_of_steps(s):
            return self.certify(lax.fori_loop(0, check_every, lambda _, x: self.step(x), s))

        state = self.init()
        if n_checks == 1:
            return block_of_steps(state)  # one block runs whatever the data: no loop

        def active(s, k):
            finite = jnp.isfinite(s.upper) & jnp.isfinite(s.lower)
            return (k == 0) | (~self.converged(s.upper, s.lower) & finite)

        def cond(carry):
            k, s = carry
            return (k < n_checks) & (jnp.max(active(s, k).astype(jnp.int32)) > 0)

        def body(carry):
            k, s = carry
            return k + 1, _select(active(s, k), block_of_steps(s), s)

        return lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), state))[1]


def _write_answer(solver: _MirrorProx, state: _SolverState, out_ref, iout_ref):
    """The answer into the output slabs, with the certified loop's status and
    dec.linear's DecResult fields."""
    blk, kp = solver.blk, solver.blk.kp
    finite_mu = jnp.min(jnp.where(blk.real, jnp.isfinite(state.best_mu), True).astype(jnp.int32), axis=0) > 0
    lam_out, value = solver.form.answer(state)
    finite = jnp.isfinite(value) & jnp.isfinite(state.lower) & finite_mu & jnp.isfinite(lam_out)
    status = jnp.where(~finite, int(Status.NONFINITE),
                       jnp.where(solver.converged(value, state.lower), int(Status.OK), int(Status.MAX_ITER)))
    out_ref[pl.ds(0, kp), :] = state.best_mu
    out_ref[pl.ds(kp, kp), :] = state.best_om
    for f, v in enumerate((lam_out, value, state.lower, value - state.lower, state.step)):
        out_ref[2 * kp + f, :] = v.astype(blk.dtype)
    iout_ref[0, :] = state.iters
    iout_ref[1, :] = status.astype(jnp.int32)


def _make_kernel(spec: _Spec):
    """The kernel ``(model_ref, round_ref, out_ref, iout_ref)`` of one block of problems: the
    block's data and reductions (:class:`_Block`), the program's form (:class:`_ExactForm`
    or :class:`_OffsetForm`), mirror-prox to the certified answer (:class:`_MirrorProx`)."""

    def kernel(model_ref, round_ref, out_ref, iout_ref):
        blk = _Block(spec, model_ref, round_ref)
        form = _ExactForm(blk) if spec.form == "acdec" else _OffsetForm(blk)
        solver = _MirrorProx(blk, form)
        _write_answer(solver, solver.run(), out_ref, iout_ref)

    return kernel


# --------------------------------------------------------------------------------------
# The batched call: one pallas_call over every problem of every vmap level


def _run_lanes(spec: _Spec, phi, grams, null, f_hat, param, mu0, om0, step0):
    """Solves the problems stacked on the leading axis (N of them) in one ``pallas_call``."""
    n, k, r = phi.shape
    lay = _Layout(k, r)
    dtype = np.dtype(spec.dtype)
    if n == 0:
        empty = jnp.zeros((0,), dtype)
        none = jnp.zeros((0,), jnp.int32)
        return (jnp.zeros((0, k), dtype), jnp.zeros((0, k), dtype), empty, empty, empty, empty, empty, none, none)
    ii, jj = np.tril_indices(r)

    def actions_last(x):  # (N, ..., K) -> (N, ... * Kp), zeros on the padded actions
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, lay.kp - k)])
        return x.reshape(n, -1)

    # (F, N): problems on the minor axis. The model's slab does not change from round to round
    # in a rollout, so XLA may compute it once outside the rounds' loop.
    model = jnp.concatenate([actions_last(jnp.swapaxes(phi, 1, 2)),
                             actions_last(jnp.swapaxes(grams[:, :, ii, jj], 1, 2)), null[:, ii, jj]], axis=1)
    rounds = jnp.concatenate([f_hat, param[:, None], actions_last(mu0), actions_last(om0), step0[:, None]], axis=1)
    block = spec.block
    padded = -(-n // block) * block
    slabs = []
    for slab in (model, rounds):
        slab = slab.astype(dtype).T
        if padded != n:
            # Copies of the last problem: they finish when it does and change no other lane.
            slab = jnp.pad(slab, ((0, 0), (0, padded - n)), mode="edge")
        slabs.append(slab)
    lanes = lambda rows: pl.BlockSpec((rows, block), lambda i: (0, i))  # noqa: E731
    out, iout = pl.pallas_call(
        _make_kernel(spec),
        out_shape=(jax.ShapeDtypeStruct((lay.out_size, padded), dtype),
                   jax.ShapeDtypeStruct((2, padded), jnp.int32)),
        grid=(padded // block,),
        in_specs=[lanes(lay.model_size), lanes(lay.round_size)],
        out_specs=(lanes(lay.out_size), lanes(2)),
        interpret=spec.interpret,
        compiler_params=pl_triton.CompilerParams(num_warps=NUM_WARPS, num_stages=1),
        name=f"e2d_fused_{spec.form}",
    )(*slabs)
    out, iout = out[:, :n].T, iout[:, :n].T
    kp = lay.kp
    return (out[:, :k], out[:, kp:kp + k], out[:, 2 * kp], out[:, 2 * kp + 1], out[:, 2 * kp + 2],
            out[:, 2 * kp + 3], out[:, 2 * kp + 4], iout[:, 0], iout[:, 1])


@functools.lru_cache(maxsize=None)
def _lanes_solver(spec: _Spec):
    """``solve(phi, grams, null, f_hat, param, mu0, om0, step0)`` over a leading problem axis,
    whose ``vmap`` flattens the new axis into that one (so nested vmaps make one call)."""

    @jax.custom_batching.custom_vmap
    def solve(*args):
        return _run_lanes(spec, *args)

    @solve.def_vmap
    def solve_batched(axis_size, in_batched, *args):
        args = [x if batched else jnp.broadcast_to(x, (axis_size,) + x.shape) for x, batched in zip(args, in_batched)]
        n = args[0].shape[1]
        outs = solve(*[x.reshape((axis_size * n,) + x.shape[2:]) for x in args])
        outs = tuple(o.reshape((axis_size, n) + o.shape[1:]) for o in outs)
        return outs, (True,) * len(outs)

    return solve


# --------------------------------------------------------------------------------------
# Drop-in solvers (the signatures of e2d_jax.dec.linear.solve_acdec / solve_offset)


def _spec(form, s, config, gap_type, interpret, block) -> _Spec:
    """Checks (in Python, before tracing) and the static description of a call."""
    if not isinstance(s, ObservableSpan):
        raise ValueError(f"s must be an e2d_jax.envs.linear.ObservableSpan, got {type(s).__name__}")
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    if form == "acdec" and gap_type != "delta_f":
        raise ValueError("gap_type: the fused exact form solves gap_type='delta_f' only (the exact form is convex "
                         "only for Delta_f)")
    for name in ("maxiter", "check_every", "rtol", "atol"):
        if not hasattr(config, name):
            raise ValueError(f"config must have maxiter, check_every, rtol and atol (e.g. a "
                             f"e2d_jax.dec.solvers.Saddle), got {type(config).__name__} without {name!r}")
    if not hasattr(config, "kernel"):
        raise ValueError(f"config: the fused path runs the saddle-point solver (a Saddle), got {type(config).__name__}")
    maxiter = V.check_int("config.maxiter", config.maxiter, minimum=1)
    check_every = V.check_int("config.check_every", config.check_every, minimum=1)
    k, r = s.features.shape[-2:]
    block = default_block(k) if block is None else V.check_int("block", block, minimum=1)
    if block & (block - 1):
        raise ValueError(f"block must be a power of 2 (lanes of a Triton program), got {block}")
    dtype = np.dtype(s.features.dtype)
    if not supports(k, r, dtype, interpret=interpret):
        dtypes = INTERPRET_DTYPES if interpret else GPU_DTYPES
        raise ValueError(f"s: the fused path takes 2 <= K <= {MAX_ACTIONS} actions, span dimension "
                         f"1 <= r <= {MAX_RANK} and dtype in {[str(d) for d in dtypes]}, got K={k}, r={r}, "
                         f"dtype {dtype}; check supports() and use e2d_jax.dec.linear otherwise")
    return _Spec(form=form, gap_type=gap_type, num_actions=int(k), rank=int(r), maxiter=maxiter,
                 check_every=check_every, rtol=float(config.rtol), atol=float(config.atol), block=int(block),
                 interpret=bool(interpret), dtype=dtype.name)


def _solve(spec: _Spec, s: ObservableSpan, f_hat_r, param, warm):
    dtype = s.features.dtype
    warm = WarmStart.cold(spec.num_actions, dtype=dtype) if warm is None else warm
    args = (s.features, s.grams, s.null_proj, f_hat_r, jnp.asarray(param, dtype), jnp.asarray(warm.mu, dtype),
            jnp.asarray(warm.omega, dtype), jnp.asarray(warm.step, dtype))
    outs = _lanes_solver(spec)(*[jnp.asarray(x)[None] for x in args])
    mu, omega, lam, value, lower, gap, step, iters, status = (o[0] for o in outs)
    result = DecResult(mu=mu, lam=lam, value=value, lower_bound=lower, gap=gap, iterations=iters, status=status,
                       omega=omega)
    return result, WarmStart(mu, omega, step)


def solve_acdec(s: ObservableSpan, f_hat_r, eps2, config, warm: WarmStart | None = None,
                gap_type: str = "delta_f", *, interpret: bool = False,
                block: int | None = None) -> tuple[DecResult, WarmStart]:
    """The ac-DEC's exact form min_mu max_omega omega.a(mu) + eps sqrt(omega.c(mu)), fused.

    Same arguments and answer as :func:`e2d_jax.dec.linear.solve_acdec` with the saddle-point
    solver (the linear-DEC lemma, Section 3.4): mirror-prox from ``warm``, certified, with
    ``lam`` = lambda*(mu) and ``value`` = psi(lam, mu). Write it for one problem and vmap it;
    every vmap level around it joins one kernel launch (see the module docstring).

    Args:
      s: the observable span (features (K, r), grams (K, r, r), null_proj (r, r)); see
        :func:`supports` for the shapes and dtypes taken.
      f_hat_r: (r,) the reference model in span coordinates.
      eps2: () eps^2 > 0.
      config: ``maxiter``, ``check_every``, ``rtol``, ``atol`` (a
        :class:`~e2d_jax.dec.solvers.Saddle`); static.
      warm: the previous solve's :class:`~e2d_jax.types.WarmStart` (None: uniform, automatic step).
      gap_type: ``"delta_f"`` (the only one with an exact convex form).
      interpret: run the kernel as JAX operations (CPU, tests) instead of compiling it for a GPU.
      block: problems per program (a power of 2; None: :func:`default_block`).

    Returns:
      ``(DecResult, WarmStart)`` as :func:`e2d_jax.dec.linear.solve_acdec`.
    """
    spec = _spec("acdec", s, config, gap_type, interpret, block)
    return _solve(spec, s, f_hat_r, eps2, warm)


def solve_offset(s: ObservableSpan, f_hat_r, lam, config, warm: WarmStart | None = None,
                 gap_type: str = "delta_f", *, interpret: bool = False,
                 block: int | None = None) -> tuple[DecResult, WarmStart]:
    """The offset DEC min_mu max_b a_b(mu) + c_b(mu) / (4 lambda) for a fixed lambda, fused.

    Same arguments and answer as :func:`e2d_jax.dec.linear.solve_offset` with the saddle-point
    solver, for gaps Delta_f (c_b = ||phi_b||^2_{V(mu)^{-1}}) or Delta
    (c_b = ||phi_b - phi_mu||^2_{V(mu)^{-1}}); ``value`` is the objective at ``mu`` (without
    lambda eps^2) and ``lam`` the given lambda. Arguments as :func:`solve_acdec`, with ``lam``
    > 0 in place of ``eps2``.
    """
    spec = _spec("offset", s, config, gap_type, interpret, block)
    return _solve(spec, s, f_hat_r, lam, warm)
