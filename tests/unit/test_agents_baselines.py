"""Step-by-step parity of environment + ridge + UCB / TS with the NumPy reference."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.envs import linear
from e2d_jax.estimators import ridge
from e2d_jax.sim.rollout import rollout
from reference import anytime_delta, oful_radius, run_linear_agent, ts_action, ucb_action

HORIZON = 50


def _jax_trajectory(agent, params, key):
    """Plays the agent with the rollout's key schedule, returning actions/obs/estimates."""
    model = params.model
    key_init, key_rounds = jax.random.split(key)
    act = jax.jit(agent.act)
    update = jax.jit(agent.update)
    observe = jax.jit(linear.observe)
    state = agent.init(key_init, model)
    actions, observations, estimates = [], [], []
    for t in range(1, HORIZON + 1):
        key_act, key_obs = jax.random.split(jax.random.fold_in(key_rounds, t))
        estimates.append(np.asarray(state.estimate.f_hat))
        a, state, _ = act(key_act, state, model)
        y = observe(key_obs, params, a)
        state = update(state, a, y, model)
        actions.append(int(a))
        observations.append(np.asarray(y))
    return np.array(actions), np.array(observations), np.array(estimates)


def _draws(key, m, d):
    _, key_rounds = jax.random.split(key)
    noises, zs = [], []
    for t in range(1, HORIZON + 1):
        key_act, key_obs = jax.random.split(jax.random.fold_in(key_rounds, t))
        noises.append(np.asarray(jax.random.normal(key_obs, (m,), jnp.float64)))
        zs.append(np.asarray(jax.random.normal(key_act, (d,), jnp.float64)))
    return noises, zs


@pytest.mark.parametrize("name", ["ucb", "ucb-anytime", "ts"])
@pytest.mark.parametrize("env_name", ["semi", "linear"])
def test_parity_with_numpy_reference(name, env_name):
    key_env, key = jax.random.split(jax.random.key(11))
    if env_name == "semi":
        params = linear.semi_bandit(key_env, 3, 8, sigma=0.7, dtype=jnp.float64)
    else:
        params = linear.linear_bandit(key_env, 4, 6, sigma=0.7, dtype=jnp.float64)
    m = params.model
    feats, mats, mask = (np.asarray(x) for x in (m.features, m.obs_matrices, m.obs_mask))
    theta, sigma = np.asarray(params.theta), 0.7
    noises, zs = _draws(key, mats.shape[1], feats.shape[1])
    if name == "ucb":
        agent = ucb(delta=0.05, radius=1.0, reg=1.0)
        choose = lambda t, f_hat, v: ucb_action(feats, f_hat, v, sigma, 0.05, 1.0, 1.0)
    elif name == "ucb-anytime":
        # Before round t (0-based) m t observation rows have been received, m = K on the
        # semi-bandit (padded rows included), 1 on the linear bandit.
        agent = ucb(delta="anytime", radius=1.0, reg=1.0)
        rows = mats.shape[1]
        choose = lambda t, f_hat, v: ucb_action(feats, f_hat, v, sigma, anytime_delta(rows * t), 1.0, 1.0)
    else:
        agent = thompson_sampling(scale=1.0, reg=1.0)
        choose = lambda t, f_hat, v: ts_action(feats, f_hat, v, sigma, zs[t])
    ref_a, ref_y, ref_f = run_linear_agent(feats, mats, mask, theta, sigma, choose, noises, HORIZON)
    a, y, f = _jax_trajectory(agent, params, key)
    # Actions are argmaxes of float64 indices whose ties have probability zero: exact.
    np.testing.assert_array_equal(a, ref_a)
    # Same noise draws; observations differ only by float64 rounding of M f* + sigma xi.
    np.testing.assert_allclose(y, ref_y, rtol=1e-12, atol=1e-12)
    # Sherman-Morrison updates vs a direct solve over 50 rounds, float64: ~1e-13 relative;
    # 1e-9 leaves room without hiding a wrong formula (those differ at 1e-2 or more).
    np.testing.assert_allclose(f, ref_f, rtol=1e-9, atol=1e-11)
    # The jitted rollout follows the same trajectory.
    res = jax.jit(lambda k: rollout(k, params, agent, horizon=HORIZON, record_every=1))(key)
    np.testing.assert_array_equal(res.action_counts, np.bincount(ref_a, minlength=feats.shape[0]))
    gaps = np.asarray(linear.gaps(params))
    np.testing.assert_allclose(res.regret, np.cumsum(gaps[ref_a]), rtol=1e-12, atol=1e-12)


def test_anytime_delta_sequence():
    """delta_s = 1 / (s log s), s = max(2, 1 + rows seen), against the reference, on the rows
    counts of the first rounds with m = 1 and m = 10 observation rows per round."""
    for m in (1, 10):
        for t in (0, 1, 2, 3, 10, 1999):
            got = np.exp(-float(ridge.anytime_log_inv_delta(jnp.int32(m * t), jnp.float64)))
            # log s + log log s against log(s log s) in float64: rounding only.
            np.testing.assert_allclose(got, anytime_delta(m * t), rtol=1e-12)
    # The first round (s = max(2, 1) = 2), the second with K = 10 rows (s = 11), and late in a
    # run of 2000 rounds with K = 10 (s = 19991: about 5e-6, the level the authors' UCB ends at).
    np.testing.assert_allclose(anytime_delta(0), 1 / (2 * np.log(2)))
    np.testing.assert_allclose(anytime_delta(10), 1 / (11 * np.log(11)))
    assert 5.0e-6 < anytime_delta(10 * 1999) < 5.1e-6


def test_anytime_confidence_radius_against_numpy():
    """beta_t^{1/2} of ucb(delta="anytime") over the first rounds, against the reference built
    from V_t = I + sum M^T M by a direct log-determinant."""
    params = linear.semi_bandit_authors(jax.random.key(3), 3, 10, dtype=jnp.float64)
    model = params.model
    mats, m = np.asarray(model.obs_matrices), model.obs_matrices.shape[1]
    state = ridge.init(3, reg=1.0, dtype=jnp.float64)
    v = np.eye(3)
    rng = np.random.default_rng(0)
    for t, a in enumerate([0, 4, 4, 7, 0, 2]):
        log_inv = ridge.anytime_log_inv_delta(m * state.count, jnp.float64)
        got = ridge.confidence_width(state, 1.0, 1.0, log_inv, reg=1.0)
        # log det by the matrix determinant lemma against slogdet: float64 rounding.
        np.testing.assert_allclose(float(got), oful_radius(v, 1.0, anytime_delta(m * t), 1.0, 1.0), rtol=1e-10)
        y = mats[a] @ np.asarray(params.theta) + rng.normal(size=m) * np.asarray(model.obs_mask[a])
        state = ridge.update(state, jnp.asarray(mats[a]), jnp.asarray(y))
        v += mats[a].T @ mats[a]


@pytest.mark.parametrize("call, name", [
    (lambda: ucb(delta=0.0), "delta"),
    (lambda: ucb(delta=1.5), "delta"),
    (lambda: ucb(delta=-1), "delta"),
    (lambda: ucb(delta="nope"), "delta"),
    (lambda: ucb(delta=None), "delta"),
    (lambda: ucb(radius=-1.0), "radius"),
    (lambda: ucb(reg=0.0), "reg"),
    (lambda: thompson_sampling(scale=0.0), "scale"),
    (lambda: thompson_sampling(reg=-1.0), "reg"),
])
def test_bad_hyperparameters(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_side_observations_help_baselines():
    """With the revealing action, UCB and TS still learn (regret grows sublinearly)."""
    params = linear.semi_bandit(jax.random.key(2), 3, 10, dtype=jnp.float64)
    for agent in (ucb(), thompson_sampling()):
        run = jax.jit(jax.vmap(lambda k: rollout(k, params, agent, horizon=400, record_every=100)))
        res = run(jax.random.split(jax.random.key(0), 16))
        first, last = np.diff(np.concatenate([[0.0], res.regret.mean(0)]))[[0, -1]]
        assert last < 0.5 * first, "per-round regret must fall as the agent learns"


def test_ucb_uses_the_class_bound_by_default():
    """Regression: UCB on the multi-armed bandit used S = 1 while ||theta*|| ~ sqrt(K/3); it
    now reads the class's bound (sqrt(K) there) unless given."""
    from e2d_jax.sim.simulate import simulate

    params = linear.multi_armed_bandit(jax.random.key(2), 9, dtype=jnp.float32)
    run = lambda agent: simulate(params, agent, horizon=200, num_seeds=4).result
    default, explicit = run(ucb()), run(ucb(radius=3.0))
    np.testing.assert_array_equal(default.action_counts, explicit.action_counts)
    assert not np.array_equal(default.action_counts, run(ucb(radius=1.0)).action_counts)
