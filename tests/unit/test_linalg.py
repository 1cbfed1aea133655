"""The shared small linear algebra (``e2d_jax._linalg``) against NumPy's float64 solves."""
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import procs
import pytest

from e2d_jax import _linalg


def _spd(key, batch, d, cond_shift=0.1):
    a = jax.random.normal(key, (batch, d, d + 2), jnp.float32)
    return a @ jnp.swapaxes(a, -1, -2) + cond_shift * jnp.eye(d, dtype=jnp.float32)


# d = 3 and 10: the linear DEC's shapes (Experiments 1 and 2); 6: the largest unrolled on CPU;
# 12: the largest unrolled elsewhere; 32, 40: LAPACK everywhere. Both forms of the solve are
# checked at every size, since the tests run on CPU and other platforms unroll up to 12.
@pytest.mark.parametrize("form", ["psd_solve", "_unrolled_solve", "_library_solve"])
@pytest.mark.parametrize("d", [1, 3, 6, 10, 12, 32, 40])
def test_psd_solve_matches_float64_reference(d, form):
    if form == "_unrolled_solve" and d > _linalg.UNROLL_MAX_DIM:
        pytest.skip("the unrolled form is only used up to UNROLL_MAX_DIM")
    solve = getattr(_linalg, form)
    v = _spd(jax.random.key(d), 6, d)
    rhs = jax.random.normal(jax.random.key(100 + d), (6, d, 4), jnp.float32)
    ref = np.linalg.solve(np.asarray(v, np.float64), np.asarray(rhs, np.float64))
    cond = np.linalg.cond(np.asarray(v, np.float64))
    x = np.asarray(jax.jit(solve)(v, rhs))
    # Backward-stable elimination: forward error <= a small multiple of cond * eps.
    tol = 50 * d * np.finfo(np.float32).eps * cond.max()
    np.testing.assert_allclose(x, ref, atol=tol * np.abs(ref).max(), rtol=0)
    # The same under vmap (the rollouts' layout) and unbatched.
    xv = np.asarray(jax.jit(jax.vmap(solve))(v, rhs))
    np.testing.assert_allclose(xv, x, rtol=1e-5, atol=1e-5 * np.abs(x).max())
    x0 = np.asarray(solve(v[0], rhs[0]))
    np.testing.assert_allclose(x0, x[0], rtol=1e-5, atol=1e-5 * np.abs(x).max())


def test_psd_solve_on_cpu_unrolls_small_systems_and_calls_lapack_above():
    """Which form a CPU program holds: unrolled up to CPU_SOLVE_UNROLL_MAX_DIM, LAPACK above
    (and the same bits as the library form)."""
    small, large = _linalg.CPU_SOLVE_UNROLL_MAX_DIM, _linalg.CPU_SOLVE_UNROLL_MAX_DIM + 1
    for d, lapack in ((small, False), (large, True), (_linalg.UNROLL_MAX_DIM, True)):
        v = _spd(jax.random.key(d), 64, d)
        rhs = jax.random.normal(jax.random.key(300 + d), (64, d, d), jnp.float32)
        text = jax.jit(jax.vmap(_linalg.psd_solve)).lower(v, rhs).as_text()
        assert ("lapack" in text) == lapack, d
    x = jax.jit(jax.vmap(_linalg.psd_solve))(v, rhs)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(jax.jit(jax.vmap(_linalg._library_solve))(v, rhs)))


@pytest.mark.parametrize("d", [3, 10])
def test_psd_solve_singular_matrix_stays_finite(d):
    """A rank-deficient V (a design with an unobserved direction): the floored pivot keeps
    the solve finite, and along the observed directions V x = rhs still holds."""
    u = np.linalg.qr(np.random.default_rng(d).normal(size=(d, d)))[0]
    ev = np.linspace(1.0, 2.0, d)
    ev[-1] = 0.0
    v = jnp.asarray((u * ev) @ u.T, jnp.float32)
    rhs = jnp.asarray(v @ np.random.default_rng(1).normal(size=(d, 2)), jnp.float32)  # in the range
    x = np.asarray(_linalg.psd_solve(v, rhs))
    assert np.all(np.isfinite(x))
    np.testing.assert_allclose(np.asarray(v, np.float64) @ x, np.asarray(rhs), atol=1e-4 * (1 + np.abs(x).max()))


# 5 and 10: the interior-point step's K for finite-mab and finite-revealing; 32: LAPACK.
@pytest.mark.parametrize("reciprocal", [False, True])
@pytest.mark.parametrize("d", [1, 5, 10, 32])
def test_cholesky_solve_matches_float64_reference(d, reciprocal):
    """psd_cholesky + cholesky_solve (the interior-point step's solve, reciprocal pivots or
    division), vector and matrix right-hand sides."""
    v = _spd(jax.random.key(7 + d), 6, d)
    rhs = jax.random.normal(jax.random.key(200 + d), (6, d), jnp.float32)
    ref = np.linalg.solve(np.asarray(v, np.float64), np.asarray(rhs, np.float64)[..., None])[..., 0]
    cond = np.linalg.cond(np.asarray(v, np.float64))
    solve = jax.jit(jax.vmap(lambda v, r: _linalg.cholesky_solve(_linalg.psd_cholesky(v, reciprocal), r, reciprocal)))
    x = np.asarray(solve(v, rhs))
    tol = 50 * d * np.finfo(np.float32).eps * cond.max()
    np.testing.assert_allclose(x, ref, atol=tol * np.abs(ref).max(), rtol=0)
    # The factor is backward stable: L L^T = v up to a small multiple of d eps |v| (this
    # includes the pivot floor's shift, eps d max v_ii); lower triangular.
    low = np.asarray(jax.jit(jax.vmap(lambda v: _linalg.psd_cholesky(v, reciprocal)))(v), np.float64)
    v64 = np.asarray(v, np.float64)
    np.testing.assert_allclose(low @ np.swapaxes(low, -1, -2), v64, rtol=0,
                               atol=50 * d * np.finfo(np.float32).eps * np.abs(v64).max())
    assert np.all(np.triu(low, 1) == 0.0)
    xm = np.asarray(jax.vmap(lambda v, r: _linalg.cholesky_solve(_linalg.psd_cholesky(v, reciprocal), r[:, None],
                                                                  reciprocal))(v, rhs))[..., 0]
    np.testing.assert_allclose(xm, x, rtol=1e-5, atol=1e-5 * np.abs(x).max())


def test_lapack_calls_in_pieces_equal_one_call_bit_for_bit():
    """A batch cut into pieces below LAPACK_INLINE_WORK (2,000 lanes of 10 x 10 with ten
    right-hand sides, and the lanes of a nested vmap, 30 x 30 Cholesky factors) gives the
    bits of the kernel called on each matrix: every matrix is factorised on its own either way."""
    v = _spd(jax.random.key(0), 2000, 10)
    rhs = jax.random.normal(jax.random.key(1), (2000, 10, 10), jnp.float32)
    assert 2000 * _linalg.lapack_work(v.shape, rhs.shape) > _linalg.LAPACK_INLINE_WORK
    pieces = np.asarray(jax.jit(jax.vmap(_linalg._library_solve))(v, rhs))
    whole = np.asarray(jax.jit(_linalg._lapack_solve)(v, rhs))
    np.testing.assert_array_equal(pieces, whole)
    nested = np.asarray(jax.jit(jax.vmap(jax.vmap(_linalg._library_solve)))(v.reshape(40, 50, 10, 10),
                                                                             rhs.reshape(40, 50, 10, 10)))
    np.testing.assert_array_equal(nested.reshape(pieces.shape), whole)
    big = _spd(jax.random.key(2), 64, 30)
    low = np.asarray(jax.jit(jax.vmap(_linalg.psd_cholesky))(big))
    np.testing.assert_allclose(low @ np.swapaxes(low, -1, -2), np.asarray(big), rtol=1e-4, atol=1e-3)


def test_lu_factors_and_solves_in_pieces_equal_the_kernels_bit_for_bit():
    """The LU factorisation and its solve (the interior point's factored Newton system, the
    logistic estimator's Newton step and inverse Hessian), for a batch above LAPACK_INLINE_WORK
    under vmap and nested vmap, give the bits of jax.scipy.linalg's kernels and of
    jnp.linalg.inv on each matrix, and solve the systems."""
    a = jax.random.normal(jax.random.key(5), (6, 8, 30, 30), jnp.float32) + 6.0 * jnp.eye(30, dtype=jnp.float32)
    b = jax.random.normal(jax.random.key(6), (6, 8, 30), jnp.float32)
    assert 48 * _linalg.lapack_work(a.shape) > _linalg.LAPACK_INLINE_WORK
    ours = jax.jit(jax.vmap(jax.vmap(lambda a, b: _linalg.lu_solve(_linalg.lu_factor(a), b))))(a, b)
    flat = jax.jit(lambda a, b: _linalg.lu_solve(_linalg.lu_factor(a), b))(a, b)
    kernels = jax.jit(jax.vmap(jax.vmap(
        lambda a, b: jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), b))))(a, b)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(kernels))
    np.testing.assert_array_equal(np.asarray(flat), np.asarray(kernels))
    inverse = jax.jit(jax.vmap(lambda a: _linalg.lu_solve(_linalg.lu_factor(a), jnp.eye(30, dtype=a.dtype))))
    np.testing.assert_array_equal(np.asarray(inverse(a[0])), np.asarray(jax.jit(jnp.linalg.inv)(a[0])))
    x64 = np.linalg.solve(np.asarray(a, np.float64), np.asarray(b, np.float64)[..., None])[..., 0]
    np.testing.assert_allclose(np.asarray(ours), x64, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("d", [10, 30])
def test_lapack_calls_differentiate_as_the_library_kernels(d):
    """Gradients (reverse mode, under vmap too) and forward-mode Jacobians through the
    LAPACK-backed solve and factor equal those of jax.scipy's kernels in float64."""
    with jax.enable_x64(True):
        v = _spd(jax.random.key(3), 3, d).astype(jnp.float64)
        rhs = jax.random.normal(jax.random.key(4), (3, d, 4), jnp.float64)

        def loss(solve, factor):
            return lambda v, r: jnp.sum(jnp.sin(solve(v, r))) + jnp.sum(factor(v) ** 2)

        ours = loss(_linalg.psd_solve, _linalg.psd_cholesky)
        ref = loss(lambda v, r: jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(v), True), r), jnp.linalg.cholesky)
        for fn in (jax.grad, lambda f: jax.grad(f, argnums=1)):
            np.testing.assert_allclose(jax.vmap(fn(ours))(v, rhs), jax.vmap(fn(ref))(v, rhs), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(jax.jacfwd(ours)(v[0], rhs[0]), jax.jacfwd(ref)(v[0], rhs[0]), rtol=1e-8,
                                   atol=1e-10)


def test_large_lapack_batches_running_at_once_finish():
    """Two independent large batched solves in one program, on a two-CPU process (XLA's thread
    pool then has two threads): cut into pieces that run in their calling threads, they finish
    (a kernel that split each batch over the pool would hold both threads and never return)."""
    code = (
        "import os\n"
        "os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])\n"
        "import jax, jax.numpy as jnp\n"
        "from e2d_jax import _linalg\n"
        "def body(i, c):\n"
        "    a, b, x, y = c\n"
        "    x, y = _linalg.psd_solve(a, x), _linalg.psd_solve(b, y)\n"
        "    return a, b, x / jnp.linalg.norm(x), y / jnp.linalg.norm(y)\n"
        "a = jnp.broadcast_to(2.0 * jnp.eye(10) + 0.1, (2000, 10, 10))\n"
        "x = jnp.ones((2000, 10, 10))\n"
        "out = jax.jit(jax.vmap(lambda *c: jax.lax.fori_loop(0, 50, body, c)))(a, 1.5 * a, x, x)\n"
        "print(bool(jnp.all(jnp.isfinite(jax.block_until_ready(out[2])))))\n"
    )
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    proc = subprocess.run([sys.executable, "-c", code], env=procs.cli_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True"]
