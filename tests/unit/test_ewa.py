"""EWA (Algorithm 2) against the Bayes posterior computed with scipy.stats densities."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st

from e2d_jax.envs import finite
from e2d_jax.estimators import ewa
from reference import bayes_posterior


def _play(params, actions, key):
    """Observations of a fixed action sequence and the EWA state after each of them."""
    model = params.model
    state = ewa.init(model.num_models, dtype=model.rewards.dtype)
    update = jax.jit(lambda s, a, y: ewa.update(s, finite.log_likelihood(model, a, y)))
    ys = []
    for t, a in enumerate(actions):
        y = finite.observe(jax.random.fold_in(key, t), params, a)
        state = update(state, a, y)
        ys.append(np.asarray(y))
    return state, np.array(ys)


def test_gaussian_posterior_matches_bayes():
    params = finite.multi_armed_bandit_class(jax.random.key(1), 3, 8, sigma=0.6, true_model=2)
    actions = np.arange(60) % 3
    state, ys = _play(params, actions, jax.random.key(2))
    means = np.asarray(params.model.obs.means)[..., 0]
    logd = np.array([[st.norm.logpdf(ys[t, 0], means[g, a], 0.6) for g in range(8)] for t, a in enumerate(actions)])
    # Sums of 60 float64 log-densities; the two normalisations differ only in rounding.
    np.testing.assert_allclose(ewa.posterior(state), bayes_posterior(logd), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(jax.scipy.special.logsumexp(state.log_weights), 0.0, atol=1e-12)
    assert int(state.count) == 60


def test_bernoulli_posterior_matches_bayes():
    params = finite.bernoulli_bandit_class(jax.random.key(3), 2, 5, true_model=4)
    actions = np.array([0, 1] * 40)
    state, ys = _play(params, actions, jax.random.key(4))
    p = np.asarray(params.model.obs.probs)[..., 0]
    logd = np.array([[st.bernoulli.logpmf(ys[t, 0], p[g, a]) for g in range(5)] for t, a in enumerate(actions)])
    np.testing.assert_allclose(ewa.posterior(state), bayes_posterior(logd), rtol=1e-9, atol=1e-12)


def test_learning_rate_tempers_the_log_likelihood():
    ll = jnp.array([-1.0, -3.0, -0.5])
    s = ewa.update(ewa.init(3, dtype=jnp.float64), ll, eta=0.5)
    w = np.exp(0.5 * np.asarray(ll))
    np.testing.assert_allclose(ewa.posterior(s), w / w.sum(), rtol=1e-14)


def test_log_space_is_stable_in_float32():
    """10^4 updates with log-likelihood differences of 1e3 per step: no overflow/underflow."""
    ll = jnp.array([0.0, -1000.0, -5.0, -1e-3], jnp.float32)

    def step(s, _):
        return ewa.update(s, ll), None

    s, _ = jax.lax.scan(step, ewa.init(4, dtype=jnp.float32), None, length=10_000)
    assert s.log_weights.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(s.log_weights)))
    np.testing.assert_allclose(jax.scipy.special.logsumexp(s.log_weights), 0.0, atol=1e-5)
    # Model 3 trails model 0 by 1e-3 per step: log-weight -10 after 10^4 steps (float32 sums of
    # 10^4 terms: ~1e-3 relative).
    np.testing.assert_allclose(s.log_weights[3] - s.log_weights[0], -10.0, rtol=2e-3)


def test_sample_frequencies_follow_the_weights():
    state = ewa.EWAState(log_weights=jnp.log(jnp.array([0.1, 0.6, 0.3])), count=jnp.zeros((), jnp.int32))
    idx = np.asarray(jax.vmap(lambda k: ewa.sample(k, state))(jax.random.split(jax.random.key(0), 30000)))
    freq = np.bincount(idx, minlength=3) / idx.size
    # Multinomial standard errors <= 0.003; 5 of them.
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.015)
    assert idx.dtype == np.int32


def test_estimate_mixture_and_sample():
    params = finite.multi_armed_bandit_class(jax.random.key(0), 3, 4)
    model = params.model
    state = ewa.EWAState(log_weights=jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4])), count=jnp.zeros((), jnp.int32))
    r, obs, w = ewa.estimate(jax.random.key(0), state, model, convex=True)
    np.testing.assert_allclose(r, np.array([0.1, 0.2, 0.3, 0.4]) @ np.asarray(model.rewards), rtol=1e-12)
    np.testing.assert_allclose(obs.means[:, 0], r, rtol=1e-12)
    r, obs, w = ewa.estimate(jax.random.key(0), state, model, convex=False)
    g = int(np.argmax(w))
    assert np.sum(w) == 1.0 and np.asarray(r).tolist() == np.asarray(model.rewards[g]).tolist()


def test_bayes_mixture_log_loss_regret_is_at_most_log_m():
    """Est_n <= log|M| for the Bayesian mixture (eta = 1): sum_t -log p_mix,t(y_t) <=
    sum_t -log p_{f*}(y_t) + log|M| on every sequence (Cesa-Bianchi and Lugosi, Prop. 3.1)."""
    params = finite.multi_armed_bandit_class(jax.random.key(6), 2, 16, true_model=7)
    model = params.model
    state = ewa.init(16, dtype=jnp.float64)
    mix_loss, true_loss = 0.0, 0.0
    means = np.asarray(model.obs.means)[..., 0]
    for t in range(200):
        a = t % 2
        y = finite.observe(jax.random.fold_in(jax.random.key(7), t), params, a)
        dens = st.norm.pdf(float(y[0]), means[:, a], 1.0)
        mix_loss -= np.log(np.asarray(ewa.posterior(state)) @ dens)
        true_loss -= np.log(dens[7])
        state = ewa.update(state, finite.log_likelihood(model, a, y))
    assert mix_loss - true_loss <= np.log(16) + 1e-9


def test_init_rejects_a_single_model():
    with pytest.raises(ValueError, match="num_models"):
        ewa.init(1)
