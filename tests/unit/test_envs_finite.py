"""Finite model classes: matrices against loop / integration references, sampling, builders."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st

from e2d_jax.envs import finite, linear
from reference import bernoulli_kl_pmf, finite_gaps, finite_gaps_f, gaussian_kl_quad


@pytest.fixture(scope="module")
def gaussian_vec():
    """A small Gaussian class with vector observations and a mask (m = 3)."""
    rng = np.random.default_rng(0)
    rewards = rng.uniform(size=(4, 3))
    means = rng.normal(size=(4, 3, 3))
    mask = np.array([[True, False, False], [True, True, False], [True, True, True]])
    return finite.finite_class(rewards, finite.GaussianObs(means, 0.7), obs_mask=mask, true_model=2)


def test_gap_matrices_match_loops():
    rng = np.random.default_rng(1)
    rewards = rng.uniform(size=(7, 5))
    np.testing.assert_allclose(finite.gap_matrix(jnp.asarray(rewards)), finite_gaps(rewards), rtol=0, atol=1e-15)
    np.testing.assert_allclose(finite.gap_matrix_f(jnp.asarray(rewards), jnp.asarray(rewards[3])),
                               finite_gaps_f(rewards, rewards[3]), rtol=0, atol=1e-15)
    # Delta_f with f in the class equals Delta on f's own column (Section 'Certifying').
    np.testing.assert_allclose(finite_gaps_f(rewards, rewards[3])[:, 3], finite_gaps(rewards)[:, 3])


def test_gaussian_info_matches_numerical_integration(gaussian_vec):
    model = gaussian_vec.model
    _, f_obs = finite.model_at(model, 1)
    info = np.asarray(finite.info_matrix(model, f_obs))
    means, mask = np.asarray(model.obs.means), np.asarray(model.obs_mask)
    ref = np.zeros_like(info)
    for pi in range(3):
        for g in range(4):
            # Independent coordinates: the KL of the product is the sum of the coordinates'.
            ref[pi, g] = sum(gaussian_kl_quad(means[g, pi, j], means[1, pi, j], 0.7) for j in range(3) if mask[pi, j])
    # quad with epsabs 1e-13 on smooth integrands: agreement to ~1e-10.
    np.testing.assert_allclose(info, ref, rtol=1e-8, atol=1e-10)
    assert np.all(info[:, 1] == 0.0)


def test_bernoulli_info_matches_pmf_sums():
    params = finite.bernoulli_bandit_class(jax.random.key(3), 3, 5)
    model = params.model
    _, f_obs = finite.model_at(model, 4)
    info = np.asarray(finite.info_matrix(model, f_obs))
    p = np.asarray(model.obs.probs)[..., 0]
    ref = np.array([[bernoulli_kl_pmf(p[g, pi], p[4, pi]) for g in range(5)] for pi in range(3)])
    np.testing.assert_allclose(info, ref, rtol=1e-12, atol=1e-14)
    # Bernoulli rewards are the success probabilities.
    np.testing.assert_allclose(model.rewards, p)


def test_mixture_reference_gives_parameter_average_kl():
    """I_f for a mixture f: KL to the Gaussian with the averaged means (closed form)."""
    params = finite.multi_armed_bandit_class(jax.random.key(0), 3, 4, sigma=0.5)
    model = params.model
    w = jnp.array([0.1, 0.2, 0.3, 0.4])
    rewards, obs = finite.mixture(model, w)
    r = np.asarray(model.rewards)
    np.testing.assert_allclose(rewards, np.asarray(w) @ r, rtol=1e-14)
    info = np.asarray(finite.info_matrix(model, obs))
    ref = (r.T - (np.asarray(w) @ r)[:, None]) ** 2 / (2 * 0.25)
    np.testing.assert_allclose(info, ref, rtol=1e-12)


def test_log_likelihood_matches_scipy_up_to_a_constant(gaussian_vec):
    model = gaussian_vec.model
    y = jnp.array([0.3, -1.2, 0.0])  # action 1 observes the first two coordinates
    ll = np.asarray(finite.log_likelihood(model, 1, y))
    means = np.asarray(model.obs.means)
    ref = np.array([st.norm.logpdf(y[:2], means[g, 1, :2], 0.7).sum() for g in range(4)])
    # EWA needs log-likelihoods up to a model-independent constant.
    np.testing.assert_allclose(ll - ll[0], ref - ref[0], rtol=1e-12, atol=1e-12)
    b = finite.bernoulli_bandit_class(jax.random.key(1), 2, 3).model
    p = np.asarray(b.obs.probs)[:, 1, 0]
    np.testing.assert_allclose(finite.log_likelihood(b, 1, jnp.array([1.0])), np.log(p), rtol=1e-12)
    np.testing.assert_allclose(finite.log_likelihood(b, 1, jnp.array([0.0])), np.log1p(-p), rtol=1e-12)


def test_observe_statistics_and_mask(gaussian_vec):
    keys = jax.random.split(jax.random.key(5), 20000)
    ys = np.asarray(jax.vmap(lambda k: finite.observe(k, gaussian_vec, 1))(keys))
    assert ys.shape == (20000, 3)
    assert np.all(ys[:, 2] == 0.0), "masked coordinates are exactly 0"
    target = np.asarray(gaussian_vec.true_obs.means)[1, :2]
    # Standard error 0.7 / sqrt(20000) = 0.005; 5 standard errors.
    np.testing.assert_allclose(ys[:, :2].mean(0), target, atol=0.025)
    np.testing.assert_allclose(ys[:, :2].std(0), 0.7, atol=0.02)
    b = finite.bernoulli_bandit_class(jax.random.key(2), 2, 3, true_model=1)
    yb = np.asarray(jax.vmap(lambda k: finite.observe(k, b, 0))(keys))
    assert set(np.unique(yb)) <= {0.0, 1.0}
    # Binomial standard error <= 0.5 / sqrt(20000) = 0.0035; 5 standard errors.
    assert abs(yb.mean() - float(b.true_rewards[0])) < 0.018


@pytest.mark.parametrize("builder", ["mab", "revealing"])
def test_linear_view_observes_the_same_as_the_finite_class(builder):
    """The linear view used by UCB / TS draws identical observations with the same key."""
    key = jax.random.key(4)
    if builder == "mab":
        params = finite.multi_armed_bandit_class(key, 4, 6, sigma=0.8, true_model=3)
    else:
        params = finite.revealing_class(key, 5, 6, sigma=0.8, gain=2.0, true_model=3)
    lin = linear.LinearEnvParams(model=params.model.linear, theta=params.true_rewards)
    np.testing.assert_allclose(linear.mean_rewards(lin), params.true_rewards, rtol=1e-15)
    for a in range(params.model.num_actions):
        k = jax.random.fold_in(key, a)
        np.testing.assert_allclose(finite.observe(k, params, a), linear.observe(k, lin, a), rtol=1e-13, atol=1e-13)


def test_revealing_class_structure():
    params = finite.revealing_class(jax.random.key(0), 6, 9, gain=3.0, reward_range=(0.5, 1.0))
    model = params.model
    r = np.asarray(model.rewards)
    assert np.all(r[:, -1] == 0.0) and np.all(r[:, :-1] >= 0.5)
    assert np.all(np.argmax(r, axis=1) != 5), "the revealing action is optimal for no model"
    info = np.asarray(finite.info_matrix(model, finite.model_at(model, 0)[1]))
    # pi_hat's information is gain^2 times the sum of the ordinary arms' (unit-free check).
    np.testing.assert_allclose(info[5], 9.0 * info[:5].sum(0), rtol=1e-12)


def test_grid_class_and_off_class_truth():
    params = finite.multi_armed_bandit_grid(2, [0.0, 0.5, 1.0], true_model=5)
    assert params.model.rewards.shape == (9, 2)
    np.testing.assert_allclose(params.true_rewards, [0.5, 1.0])
    off = finite.multi_armed_bandit_grid(2, [0.0, 1.0], true_model=np.array([0.3, 0.6]))
    assert int(off.true_index) == -1
    np.testing.assert_allclose(off.true_rewards, [0.3, 0.6])


def test_float32_builders_and_matrices():
    params = finite.revealing_class(jax.random.key(0), 4, 5, dtype=jnp.float32)
    model = params.model
    assert model.rewards.dtype == jnp.float32 and model.obs.means.dtype == jnp.float32
    info = finite.info_matrix(model, finite.model_at(model, 1)[1])
    assert info.dtype == jnp.float32 and finite.gap_matrix(model.rewards).dtype == jnp.float32
    y = finite.observe(jax.random.key(0), params, 3)
    assert y.dtype == jnp.float32 and y.shape == (4,)
    # The instance does not depend on the precision (drawn in float32 either way).
    p64 = finite.revealing_class(jax.random.key(0), 4, 5, dtype=jnp.float64)
    np.testing.assert_allclose(p64.model.rewards, model.rewards, rtol=1e-7)


@pytest.mark.parametrize("call, needle", [
    (lambda: finite.finite_class(np.ones((1, 3)), finite.GaussianObs(np.ones((1, 3, 1)), 1.0)), "M >= 2"),
    (lambda: finite.finite_class(np.ones((3, 1)), finite.GaussianObs(np.ones((3, 1, 1)), 1.0)), "K >= 2"),
    (lambda: finite.finite_class(np.ones(3), finite.GaussianObs(np.ones((3, 1, 1)), 1.0)), "rewards"),
    (lambda: finite.finite_class(np.ones((3, 2)), finite.GaussianObs(np.ones((3, 3, 1)), 1.0)), "obs.means"),
    (lambda: finite.finite_class(np.ones((3, 2)), finite.GaussianObs(np.ones((3, 2, 1)), 0.0)), "sigma"),
    (lambda: finite.finite_class(np.ones((3, 2)) * 0.5, finite.BernoulliObs(np.ones((3, 2, 1)))), "probs"),
    (lambda: finite.finite_class(np.ones((3, 2)) * 0.5, finite.BernoulliObs(np.full((3, 2, 1), -0.1))), "probs"),
    (lambda: finite.finite_class(np.ones((3, 2)), finite.GaussianObs(np.ones((3, 2, 1)), 1.0), true_model=3),
     "true_model"),
    (lambda: finite.finite_class(np.ones((3, 2)), finite.GaussianObs(np.ones((3, 2, 1)), 1.0),
                                 obs_mask=np.ones((2, 2), bool)), "obs_mask"),
    (lambda: finite.multi_armed_bandit_class(jax.random.key(0), 1, 5), "num_actions"),
    (lambda: finite.multi_armed_bandit_class(jax.random.key(0), 3, 1), "num_models"),
    (lambda: finite.multi_armed_bandit_grid(2, [0.5]), "levels"),
    (lambda: finite.revealing_class(jax.random.key(0), 2, 5), "num_actions"),
    (lambda: finite.revealing_class(jax.random.key(0), 4, 5, gain=0.5), "gain"),
    (lambda: finite.revealing_class(jax.random.key(0), 4, 5, revealing_reward=0.6), "revealing_reward"),
    (lambda: finite.bernoulli_bandit_class(jax.random.key(0), 3, 4, low=0.0), "low"),
])
def test_bad_input_raises_value_error_naming_the_argument(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()
