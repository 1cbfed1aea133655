import jax.numpy as jnp
import numpy as np

from e2d_jax.estimators import ridge
from reference import ridge_estimate


def test_rank_m_updates_match_direct_solve():
    rng = np.random.default_rng(0)
    d, m = 4, 3
    state = ridge.init(d, reg=0.5, dtype=jnp.float64)
    rows, ys = [], []
    for t in range(40):
        mat = rng.normal(size=(m, d))
        mat[rng.integers(m):] = 0.0  # padded rows are no-ops
        y = rng.normal(size=m) * (np.abs(mat).sum(1) > 0)
        state = ridge.update(state, jnp.asarray(mat), jnp.asarray(y))
        rows.append(mat)
        ys.append(y)
    f_ref, v_ref = ridge_estimate(rows, ys, d, reg=0.5)
    # float64, 40 rounds of Sherman-Morrison: agreement to ~1e-12; 1e-9 leaves margin.
    np.testing.assert_allclose(state.f_hat, f_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state.v_inv, np.linalg.inv(v_ref), rtol=1e-9, atol=1e-12)
    logdet_ref = np.linalg.slogdet(v_ref)[1] - d * np.log(0.5)
    np.testing.assert_allclose(state.logdet, logdet_ref, rtol=1e-10)
    assert int(state.count) == 40


def test_projection_onto_ball_in_v_norm():
    import scipy.optimize as so

    rng = np.random.default_rng(1)
    d = 3
    a = rng.normal(size=(d, d))
    v = a @ a.T + 0.3 * np.eye(d)
    f = rng.normal(size=d) * 3
    g = np.asarray(ridge.project_ball(jnp.asarray(f), jnp.asarray(np.linalg.inv(v)), 1.0))
    cons = {"type": "ineq", "fun": lambda x: 1.0 - x @ x}
    ref = so.minimize(lambda x: (x - f) @ v @ (x - f), np.zeros(d), constraints=[cons], method="SLSQP",
                      options={"ftol": 1e-14, "maxiter": 500}).x
    np.testing.assert_allclose(np.linalg.norm(g), 1.0, rtol=1e-8)
    np.testing.assert_allclose(g, ref, atol=1e-5)
    inside = np.asarray(ridge.project_ball(jnp.asarray(f / 100), jnp.asarray(np.linalg.inv(v)), 1.0))
    np.testing.assert_array_equal(inside, f / 100)


def test_block_update_of_many_rows_matches_direct_solve():
    """Maps with more than BLOCK_MIN_ROWS rows (a revealing action's K rows, padded maps) are
    added as one block: the same V^{-1}, log det and estimate as the direct solve, in float64
    to rounding and in float32 to its precision."""
    rng = np.random.default_rng(2)
    d, m = 5, ridge.BLOCK_MIN_ROWS + 8
    for dtype, rtol in ((jnp.float64, 1e-9), (jnp.float32, 2e-3)):
        state = ridge.init(d, reg=1.0, dtype=dtype)
        rows, ys = [], []
        for t in range(30):
            mat = rng.normal(size=(m, d))
            mat[rng.integers(1, m):] = 0.0  # padded rows are no-ops
            y = rng.normal(size=m) * (np.abs(mat).sum(1) > 0)
            state = ridge.update(state, jnp.asarray(mat, dtype), jnp.asarray(y, dtype))
            rows.append(mat)
            ys.append(y)
        f_ref, v_ref = ridge_estimate(rows, ys, d, reg=1.0)
        np.testing.assert_allclose(state.f_hat, f_ref, rtol=rtol, atol=rtol * 1e-3)
        np.testing.assert_allclose(state.v_inv, np.linalg.inv(v_ref), rtol=rtol, atol=rtol * 1e-3)
        np.testing.assert_allclose(state.logdet, np.linalg.slogdet(v_ref)[1], rtol=rtol)


def test_block_and_row_updates_agree():
    """The block update and the row-by-row steps are the same update (float64)."""
    rng = np.random.default_rng(3)
    d = 4
    a = rng.normal(size=(d, d))
    v_inv = jnp.asarray(np.linalg.inv(a @ a.T + np.eye(d)))
    rows = jnp.asarray(rng.normal(size=(ridge.BLOCK_MIN_ROWS + 1, d)))
    block = ridge._add_block(v_inv, jnp.asarray(0.3), rows)
    steps = ridge.add_rows(v_inv, jnp.asarray(0.3), rows[:ridge.BLOCK_MIN_ROWS])
    steps = ridge.add_rows(*steps, rows[ridge.BLOCK_MIN_ROWS:])
    np.testing.assert_allclose(block[0], steps[0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(block[1], steps[1], rtol=1e-12)
