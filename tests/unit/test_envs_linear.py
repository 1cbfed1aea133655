import jax
import jax.numpy as jnp
import numpy as np
import pytest

from e2d_jax.envs import linear


def test_semi_bandit_structure():
    p = linear.semi_bandit(jax.random.key(3), 3, 10)
    m = p.model
    assert m.features.shape == (10, 3) and m.obs_matrices.shape == (10, 10, 3)
    assert m.grams.shape == (10, 3, 3) and m.span.basis.shape == (3, 3)
    np.testing.assert_allclose(np.linalg.norm(m.features, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(p.theta), 1.0, rtol=1e-12)
    r = np.asarray(m.features @ p.theta)
    revealing = np.where(np.asarray(m.obs_mask).sum(1) == 10)[0]
    assert revealing.size == 1, "exactly one revealing action"
    rev = revealing[0]
    assert r[rev] < r.max(), "the revealing action is suboptimal"
    # The revealing action observes Phi f* (one coordinate per action, noise I_K).
    np.testing.assert_array_equal(m.obs_matrices[rev], m.features)
    for k in range(10):
        if k != rev:
            np.testing.assert_array_equal(m.obs_matrices[k, 0], m.features[k])
            assert not np.any(m.obs_matrices[k, 1:])
        np.testing.assert_allclose(m.grams[k], m.obs_matrices[k].T @ m.obs_matrices[k], atol=1e-14)


def test_observation_distribution_and_padding():
    p = linear.semi_bandit(jax.random.key(1), 3, 5, sigma=0.5, revealing_action=2)
    keys = jax.random.split(jax.random.key(7), 20000)
    obs = jax.vmap(lambda k: linear.observe(k, p, jnp.int32(2)))(keys)
    mean = np.asarray(p.model.features @ p.theta)
    # 20000 draws: standard error 0.5/sqrt(20000) = 0.0035; 5 s.e. tolerance.
    np.testing.assert_allclose(obs.mean(0), mean, atol=0.018)
    np.testing.assert_allclose(obs.std(0), 0.5, atol=0.01)
    obs0 = jax.vmap(lambda k: linear.observe(k, p, jnp.int32(0)))(keys[:100])
    assert np.all(obs0[:, 1:] == 0.0), "padded entries are exactly zero"


def test_builders_vmap_over_instances_and_float32():
    keys = jax.random.split(jax.random.key(0), 4)
    batch = jax.vmap(lambda k: linear.semi_bandit(k, 3, 6, dtype=jnp.float32))(keys)
    assert batch.model.features.shape == (4, 6, 3) and batch.model.features.dtype == jnp.float32
    single = linear.semi_bandit(keys[2], 3, 6, dtype=jnp.float32)
    np.testing.assert_array_equal(batch.model.obs_matrices[2], single.model.obs_matrices)
    means = jax.vmap(linear.mean_rewards)(batch)
    assert means.shape == (4, 6)


def test_linear_bandit_and_mab():
    p = linear.linear_bandit(jax.random.key(0), 4, 7)
    assert p.model.obs_matrices.shape == (7, 1, 4)
    np.testing.assert_array_equal(p.model.obs_matrices[:, 0], p.model.features)
    q = linear.multi_armed_bandit(jax.random.key(0), 5)
    np.testing.assert_array_equal(q.model.features, np.eye(5))
    assert np.all((q.theta >= 0) & (q.theta <= 1))


def test_span_basis_d_greater_than_k():
    p = linear.semi_bandit(jax.random.key(0), 30, 10)
    u = np.asarray(p.model.span.basis)
    assert u.shape == (30, 10)
    np.testing.assert_allclose(u.T @ u, np.eye(10), atol=1e-10)
    # Every feature lies in the span.
    f = np.asarray(p.model.features)
    np.testing.assert_allclose(f @ u @ u.T, f, atol=1e-10)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: linear.semi_bandit(jax.random.key(0), 3, 1), "num_actions"),
        (lambda: linear.semi_bandit(jax.random.key(0), 0, 5), "d"),
        (lambda: linear.semi_bandit(jax.random.key(0), 3, 5, sigma=0.0), "sigma"),
        (lambda: linear.semi_bandit(jax.random.key(0), 3, 5, sigma=-1.0), "sigma"),
        (lambda: linear.semi_bandit(jax.random.key(0), 3, 5, revealing_action=5), "revealing_action"),
        (lambda: linear.linear_bandit(jax.random.key(0), 3, 1), "num_actions"),
        (lambda: linear.multi_armed_bandit(jax.random.key(0), 1), "num_actions"),
        (lambda: linear.linear_side_observation(np.ones((1, 2)), np.ones((1, 1, 2)), np.ones(2)), "num_actions"),
        (lambda: linear.linear_side_observation(np.eye(3), np.ones((3, 1, 2)), np.ones(3)), "obs_matrices"),
        (lambda: linear.linear_side_observation(np.eye(3), np.eye(3)[:, None], np.ones(2)), "theta"),
        (lambda: linear.linear_side_observation(np.eye(3), np.eye(3)[:, None], np.ones(3), sigma=0), "sigma"),
        (lambda: linear.linear_side_observation(np.ones(3), np.eye(3)[:, None], np.ones(3)), "features"),
        (lambda: linear.linear_side_observation(np.eye(3), np.tile(np.eye(3)[:1], (3, 1))[:, None], np.ones(3)),
             "obs_matrices: the game is not globally observable"),
    ],
)
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_side_observation_builder_matches_semi_bandit():
    p = linear.semi_bandit(jax.random.key(5), 3, 6, revealing_action=1)
    q = linear.linear_side_observation(p.model.features, p.model.obs_matrices, p.theta)
    np.testing.assert_array_equal(q.model.obs_mask, p.model.obs_mask)
    np.testing.assert_allclose(q.model.grams, p.model.grams, atol=1e-14)


@pytest.mark.parametrize("build", [
    lambda k, dt: linear.semi_bandit(k, 3, 10, dtype=dt),
    lambda k, dt: linear.linear_bandit(k, 4, 6, dtype=dt),
    lambda k, dt: linear.multi_armed_bandit(k, 5, dtype=dt),
])
def test_instance_depends_on_its_key_not_on_the_dtype(build):
    """Regression: the same instance seed used to give another instance under x64."""
    key = jax.random.key(11)
    a, b = build(key, jnp.float32), build(key, jnp.float64)
    np.testing.assert_allclose(np.asarray(a.model.features, np.float64), b.model.features, atol=1e-6)
    np.testing.assert_allclose(np.asarray(a.theta, np.float64), b.theta, atol=1e-6)
    np.testing.assert_array_equal(a.model.obs_mask, b.model.obs_mask)


def test_radius_is_the_class_bound():
    """UCB's S is the class's true bound: 1 on the unit-sphere instances, sqrt(K) for the
    multi-armed bandit (means in [0, 1]^K), ||theta|| for an explicit instance."""
    k = jax.random.key(0)
    assert float(linear.semi_bandit(k, 3, 10).model.radius) == 1.0
    mab = linear.multi_armed_bandit(k, 9)
    assert float(mab.model.radius) == pytest.approx(3.0)
    assert float(jnp.linalg.norm(mab.theta)) <= 3.0
    eye = np.eye(3)
    inst = linear.linear_side_observation(eye, eye[:, None, :], np.array([0.0, 3.0, 4.0]))
    assert float(inst.model.radius) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="radius"):
        linear.linear_side_observation(eye, eye[:, None, :], np.array([0.0, 3.0, 4.0]), radius=1.0)


def test_ragged_observation_maps_are_padded_exactly():
    """A list of per-action maps of different sizes equals the same maps padded by hand."""
    feats = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    maps = [np.eye(2), feats[1:2], feats[2]]
    theta = np.array([0.3, -0.2])
    ragged = linear.linear_side_observation(feats, maps, theta)
    padded, mask = linear.pad_observations(maps)
    assert padded.shape == (3, 2, 2) and mask.tolist() == [[True, True], [True, False], [True, False]]
    manual = linear.linear_side_observation(feats, padded, theta, obs_mask=mask)
    for a, b in zip(jax.tree_util.tree_leaves(ragged), jax.tree_util.tree_leaves(manual)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(ragged.model.grams[1], np.outer(feats[1], feats[1]))
