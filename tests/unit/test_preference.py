"""Preference (Bradley-Terry) feedback: the environment, the logistic estimator, the agents on it.

References (tests/helpers/reference.py): the regularised logistic maximum-likelihood estimate
by cvxpy from the raw history (not from the estimator's sufficient statistics); the Hessian
by automatic differentiation of the loss; outcome frequencies against sigma(<x_a - x_b, f*>).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import e2d_jax as e2d
from e2d_jax import _checks as V
from e2d_jax.agents import estimation
from e2d_jax.envs import dueling, family, linear, preference
from e2d_jax.estimators import logistic, ridge
from reference import logistic_mle_cvx

BASE = np.array([[0.3, -1.1, 0.4], [1.2, 0.2, -0.5], [-0.7, 0.9, 0.8], [0.1, 0.5, -1.3]])
THETA = np.array([1.0, -0.5, 0.25])


def _history(params, actions, key):
    """Outcomes of ``actions`` drawn by the environment, one key per round."""
    keys = jax.random.split(key, len(actions))
    return np.asarray(jax.vmap(lambda k, a: preference.observe(k, params, a))(keys, jnp.asarray(actions)))


def test_outcomes_follow_bradley_terry():
    p = preference.from_base_arms(BASE, THETA)
    assert isinstance(p, preference.PreferenceEnvParams) and isinstance(p.model, preference.PreferenceModel)
    assert float(p.model.sigma) == preference.PREFERENCE_SIGMA
    n = 20000
    for a, b in ((0, 1), (2, 3), (1, 1)):
        action = a * 4 + b
        y = _history(p, np.full(n, action), jax.random.PRNGKey(action))[:, 0]
        assert set(np.unique(y)) <= {0.0, 1.0}
        prob = 1.0 / (1.0 + np.exp(-(BASE[a] - BASE[b]) @ THETA))
        assert abs(y.mean() - prob) < 4 * np.sqrt(prob * (1 - prob) / n), (a, b, y.mean(), prob)
    # The same base arms and f* as the Gaussian duelling game of the same key.
    key = e2d.instance_key(3)
    pref, duel = preference.random_preference(key, 3, 5), dueling.random_dueling(key, 3, 5)
    np.testing.assert_array_equal(pref.model.features, duel.model.features)
    np.testing.assert_array_equal(pref.model.obs_matrices, duel.model.obs_matrices)
    np.testing.assert_array_equal(pref.theta, duel.theta)


def test_the_environment_is_inferred_from_the_instance():
    p = preference.from_base_arms(BASE, THETA)
    assert family.environment_of(p) is preference.ENVIRONMENT
    assert family.params_family(p) == "linear" and family.family_of(p.model) == "linear"
    with pytest.raises(ValueError, match="the linear environment cannot run PreferenceEnvParams"):
        family.environment_of(p, linear.ENVIRONMENT)


def _fit_online(params, actions, outcomes, reg):
    model = params.model
    state = estimation.init(model, reg)
    assert isinstance(state, logistic.LogisticState)

    def step(state, xs):
        a, y = xs
        state = estimation.update(state, model, a, y, reg)
        return state, state.f_hat

    return jax.lax.scan(step, state, (jnp.asarray(actions), jnp.asarray(outcomes)))


@pytest.mark.parametrize("reg", [1.0, pytest.param(0.1, marks=pytest.mark.slow)])
def test_logistic_estimate_matches_cvxpy_along_the_run(reg):
    """Five warm-started Newton steps a round keep f_hat at the minimiser: within 1e-6 of
    cvxpy's solution on the raw history (Clarabel at 1e-12) at rounds 5, 40 and 300, and
    stationary there (float64)."""
    p = preference.from_base_arms(BASE, THETA)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 16, size=300)
    outcomes = _history(p, actions, jax.random.PRNGKey(1))
    final, path = _fit_online(p, actions, outcomes, reg)
    rows = np.asarray(p.model.obs_matrices)[actions, 0]
    for t in (5, 40, 300):
        ref = logistic_mle_cvx(rows[:t], outcomes[:t, 0], reg)
        np.testing.assert_allclose(np.asarray(path[t - 1]), ref, atol=1e-6, rtol=0)
        # ... and is stationary: the loss's gradient (here in NumPy) vanishes there.
        f = np.asarray(path[t - 1])
        grad = rows[:t].T @ (1 / (1 + np.exp(-rows[:t] @ f)) - outcomes[:t, 0]) + reg * f
        assert np.abs(grad).max() < 1e-6, (t, grad)
    # The design and its determinant are ridge regression's.
    v = reg * np.eye(3) + rows.T @ rows
    np.testing.assert_allclose(np.linalg.inv(np.asarray(final.v_inv)), v, rtol=1e-9)
    np.testing.assert_allclose(float(final.logdet), np.linalg.slogdet(v)[1] - 3 * np.log(reg), rtol=1e-9)
    # H^{-1} is the inverse of the loss's curvature at f_hat.
    hess = jax.hessian(logistic.loss)(final.f_hat, p.model.obs_matrices, final.plays, final.wins, reg)
    np.testing.assert_allclose(np.asarray(final.h_inv), np.linalg.inv(np.asarray(hess)), rtol=1e-9)


def test_the_confidence_set_covers_the_truth():
    """||f_hat - f*||_{V_t} <= beta_t^{1/2} at delta = 0.05 on at least 95% of 200 runs of
    uniformly random duels (it is conservative by 1/kappa, so all of them here), and the
    width is ridge's with sigma = 1/2 over kappa = sigma'(S L)."""
    p = preference.from_base_arms(BASE, THETA)
    model = p.model
    bound = float(np.linalg.norm(THETA))
    rows = np.linalg.norm(np.asarray(model.obs_matrices), axis=-1).max()
    slope = 1 / (1 + np.exp(-bound * rows)) * (1 - 1 / (1 + np.exp(-bound * rows)))
    np.testing.assert_allclose(float(logistic.min_slope(model.obs_matrices, bound)), slope, rtol=1e-12)

    def run(key):
        k1, k2 = jax.random.split(key)
        actions = jax.random.randint(k1, (150,), 0, 16)
        outcomes = jax.vmap(lambda k, a: preference.observe(k, p, a))(jax.random.split(k2, 150), actions)
        state, _ = _fit_online(p, actions, outcomes, 1.0)
        err = state.f_hat - p.theta
        width = estimation.confidence_width(state, model, bound, jnp.log(20.0), 1.0)
        ridge_width = ridge.confidence_width(state, 0.5, bound, jnp.log(20.0), reg=1.0)
        return err @ jnp.linalg.solve(state.v_inv, err), width, ridge_width

    dist2, width, ridge_width = jax.jit(jax.vmap(run))(jax.random.split(jax.random.PRNGKey(2), 200))
    np.testing.assert_allclose(np.asarray(width), np.asarray(ridge_width) / slope, rtol=1e-12)
    assert np.mean(np.sqrt(np.asarray(dist2)) <= np.asarray(width)) >= 0.95


def test_agents_on_preference_feedback():
    """Every agent runs with the logistic estimator; UCB and TS settle on self-duels, which
    reveal nothing, the E2D agents and IDS play informative pairs."""
    p = preference.random_preference(e2d.instance_key(0), 3, 4)
    informative = np.asarray(dueling.informative(p, np.arange(16)))
    agents = {"anytime-e2d": e2d.anytime_e2d(), "e2d": e2d.fixed_horizon_e2d(horizon=60), "ids": e2d.ids(),
              "ucb": e2d.ucb(), "ts": e2d.thompson_sampling()}
    share = {}
    for name, agent in agents.items():
        state = agent.init(jax.random.PRNGKey(0), p.model)
        assert isinstance(jax.tree_util.tree_leaves(state, is_leaf=lambda x: isinstance(x, logistic.LogisticState))[0],
                          logistic.LogisticState), name
        sim = e2d.simulate(p, agent, horizon=60, num_seeds=4, record_every=60, label=name)
        counts = np.asarray(sim.result.action_counts)
        assert np.all(np.isfinite(np.asarray(sim.result.regret))) and counts.sum(-1).min() == 60
        share[name] = float((counts[..., informative].sum(-1) / 60).mean())
    assert share["ucb"] == 0.0 and share["ts"] == 0.0, share
    assert min(share["anytime-e2d"], share["e2d"], share["ids"]) > 0.05, share


def test_bad_preference_instances_are_refused_naming_the_argument():
    with pytest.raises(V.ArgumentError, match="theta must contain only finite values") as exc:
        preference.from_base_arms(BASE, np.array([np.nan, 0.0, 0.0]))
    assert exc.value.argument == "theta"
    with pytest.raises(V.ArgumentError, match="base must contain only finite values"):
        preference.from_base_arms(np.array([[np.inf, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="theta must have shape"):
        preference.from_base_arms(BASE, np.ones(2))
    with pytest.raises(ValueError, match="num_arms"):
        preference.random_preference(e2d.instance_key(0), 3, 1)


BUILDERS = '''
import numpy as np
from e2d_jax.envs import preference


def nan_theta(key):
    return preference.from_base_arms(np.eye(3), np.array([np.nan, 0.0, 0.0]))
'''


@pytest.mark.parametrize("args, needle", [
    (["--env", "prefs_of_mine:nan_theta"], "theta must contain only finite values"),
    (["--env", "preference", "--arms", "1"], "--arms must be >= 2"),
])
def test_bad_preference_input_exits_2_on_the_command_line_and_writes_nothing(args, needle, tmp_path, monkeypatch,
                                                                              capsys):
    from e2d_jax import cli

    (tmp_path / "prefs_of_mine.py").write_text(BUILDERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--horizon", "5", "--seeds", "2", "--out", str(tmp_path / "out"), *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_the_report_counts_informative_plays_per_run():
    from e2d_jax.paper import preferences

    # localized duelling, d = 3: actions 0, 1 are the neighbour pairs, 2..4 the self-duels.
    table = pd.DataFrame({"instance_seed": [0, 0], "action_counts": [[3, 1, 4, 0, 0], [0, 0, 0, 2, 6]]})
    np.testing.assert_allclose(preferences.informative_share("dueling-localized", table), [0.5, 0.0])
    with pytest.raises(V.ArgumentError, match="families"):
        preferences.spec("no-such-family")
    options = {a.name: dict(a.options) for a in preferences.agents("dueling-localized")}
    assert options["anytime-e2d"] == {"gap_type": "delta"} and options["ucb"] == {}
