"""Contextual linear bandits: environments without contexts give the stored results of the
simulator before contexts existed (tests/helpers/stored_results.py); the round's regret is the played action's gap in the round's
context, under the context distribution; every agent runs and learns across contexts; per-seed
invariance; bad contextual input is refused naming the argument."""
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import procs
import pytest
import stored_results

import e2d_jax as e2d
from e2d_jax.envs import contextual, linear
from e2d_jax.experiments import registry
from e2d_jax.types import ActInfo, Agent, Environment, Status

STORED = pathlib.Path(__file__).parents[1] / "data" / "no_context_results.npz"
#: Agents whose rounds are closed forms (no warm-started iterative solver): their results are
#: compared to float32 rounding. The solver agents' warm starts carry XLA's instruction-set
#: rounding differences between machine types on, so theirs are compared more loosely.
CLOSED_FORM = ("ids", "ucb", "ts")


@pytest.mark.parametrize("agents", [
    CLOSED_FORM,
    pytest.param(("anytime-e2d", "e2d"), marks=pytest.mark.slow, id="solver-agents"),
], ids=lambda a: "closed-form" if a == CLOSED_FORM else None)
def test_environments_without_context_give_the_stored_results(tmp_path, agents):
    """The agents on a linear family, a finite one and preference feedback, run in a fresh
    process with the stored file's settings (``stored_results``): the same action counts and
    regrets (1e-5 relative) as the simulator before contexts (bit for bit on the machine that
    wrote the file); Anytime-E2D and E2D within 5% of the stored final regret (see CLOSED_FORM)."""
    out = tmp_path / "now.npz"
    subprocess.run([sys.executable, str(pathlib.Path(stored_results.__file__)), str(out), ",".join(agents)],
                   check=True, env=procs.cli_env(), timeout=900)
    stored, now = np.load(STORED), np.load(out)
    expected = sorted(key for key in stored.files if key.split("/")[1] in agents)
    assert sorted(now.files) == expected and expected
    for key in expected:
        env, agent, what = key.split("/")
        if agent in CLOSED_FORM:
            if what == "action_counts":
                np.testing.assert_array_equal(now[key], stored[key], err_msg=key)
            else:
                np.testing.assert_allclose(now[key], stored[key], rtol=1e-5, atol=1e-6, err_msg=key)
        elif what == "regret":
            np.testing.assert_allclose(now[key][:, -1], stored[key][:, -1], rtol=0.05, atol=0.05, err_msg=key)


def _always(action):
    """An agent that plays ``action`` every round."""
    return Agent(init=lambda key, model: jnp.zeros(()),
                 act=lambda key, state, model: (jnp.int32(action), state, ActInfo(status=jnp.int32(Status.OK))),
                 update=lambda state, action, obs, model: state)


def test_regret_is_the_gap_in_the_round_context():
    """An agent that always plays action 0: its mean regret after n rounds is n E_c[gap_0(c)]
    under the context distribution (non-uniform here), within 4 standard errors over 4,000 seeds;
    a context distribution on one context gives exactly n gap_0(that context)."""
    features = np.asarray(jax.random.normal(jax.random.key(1), (3, 4, 2)), np.float64)
    theta = np.array([0.6, 0.8])
    probs = np.array([0.6, 0.3, 0.1])
    gaps = (features @ theta).max(axis=1) - features[:, 0] @ theta  # (3,) gap of action 0 per context
    params = contextual.from_contexts(features, theta, probs=probs, dtype=jnp.float32)
    n = 20
    sim = e2d.simulate(params, _always(0), horizon=n, num_seeds=4000, record_every=n)
    final = np.asarray(sim.result.regret)[:, -1]
    se = final.std(ddof=1) / np.sqrt(final.size)
    assert abs(final.mean() - n * probs @ gaps) <= 4 * se + 1e-4, (final.mean(), n * probs @ gaps, se)
    assert se > 0  # the contexts vary from round to round
    for c in range(3):
        one = contextual.from_contexts(features, theta, probs=np.eye(3)[c], dtype=jnp.float32)
        sim = e2d.simulate(one, _always(0), horizon=n, num_seeds=3, record_every=n)
        np.testing.assert_allclose(np.asarray(sim.result.regret)[:, -1], n * gaps[c], rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def authors_instance():
    return contextual.authors_contextual(e2d.instance_key(0), 3, 10, 3, dtype=jnp.float32)


@pytest.mark.parametrize("name", ["anytime-e2d", "ucb", pytest.param("e2d", marks=pytest.mark.slow),
                                  pytest.param("ids", marks=pytest.mark.slow), pytest.param("ts", marks=pytest.mark.slow)])
def test_every_agent_runs_and_learns_across_contexts(authors_instance, name):
    """Anytime-E2D, E2D, IDS, UCB and TS on the authors' contextual game: no invalid rounds, and
    each one's mean regret well below that of playing uniformly at random (the estimator is
    kept across contexts)."""
    params = authors_instance
    n, seeds = 60, 8
    feats = np.asarray(params.contexts.features)
    means = feats @ np.asarray(params.theta)
    uniform = n * np.mean(means.max(axis=1) - means.mean(axis=1))
    agent = {"anytime-e2d": e2d.anytime_e2d, "e2d": lambda: e2d.fixed_horizon_e2d(horizon=n), "ids": e2d.ids,
             "ucb": e2d.ucb, "ts": e2d.thompson_sampling}[name]()
    sim = e2d.simulate(params, agent, horizon=n, num_seeds=seeds, record_every=n)
    assert int(np.asarray(sim.result.invalid_rounds).sum()) == 0
    assert np.asarray(sim.result.action_counts).sum() == n * seeds
    assert float(np.asarray(sim.result.regret)[:, -1].mean()) < 0.6 * uniform


def test_a_seed_does_not_depend_on_the_seeds_beside_it(authors_instance):
    """Seeds 2..4 of a run of 6 equal a run of seeds 2..4 alone (the contexts come from each
    seed's own key stream)."""
    agent = e2d.ucb()
    whole = e2d.simulate(authors_instance, agent, horizon=25, num_seeds=6, record_every=5)
    part = e2d.simulate(authors_instance, agent, horizon=25, num_seeds=3, first_seed=2, record_every=5)
    np.testing.assert_array_equal(np.asarray(whole.result.regret)[2:5], np.asarray(part.result.regret))
    np.testing.assert_array_equal(np.asarray(whole.result.action_counts)[2:5], np.asarray(part.result.action_counts))


def test_registered_contextual_families_build():
    for name, k in (("contextual-linear", 10), ("contextual-authors", 10), ("contextual-revealing", 10)):
        _, params, _ = registry.build_instance(name, 0, {}, "float32")
        assert isinstance(params, contextual.ContextualParams)
        assert params.contexts.features.shape[1:] == (k, 3)
    _, fresh, _ = registry.build_instance("contextual-linear", 0, {"contexts": 0}, "float32")
    assert isinstance(fresh, contextual.DrawnContextParams)
    _, p, _ = registry.build_instance("contextual-authors", 0, {"contexts": 5}, "float32")
    np.testing.assert_array_equal(np.asarray(p.theta), [1.0, 0.0, 0.0])
    _, p, _ = registry.build_instance("contextual-linear", 0, {"contexts": 4}, "float32")
    np.testing.assert_allclose(np.linalg.norm(np.asarray(p.contexts.features), axis=-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(p.theta)), 1.0, rtol=1e-5)


@pytest.mark.parametrize("kwargs, argument", [
    (dict(features=np.ones((4, 3))), "features"),
    (dict(features=np.ones((2, 1, 3))), "features"),
    (dict(theta=np.ones(2)), "theta"),
    (dict(theta=np.array([np.nan, 0.0, 0.0])), "theta"),
    (dict(features=np.full((2, 4, 3), np.inf)), "features"),
    (dict(probs=np.array([0.5, 0.6])), "probs"),
    (dict(probs=np.array([1.0])), "probs"),
    (dict(available=np.array([[True] * 4, [False] * 4])), "available"),
    (dict(available=np.ones((2, 3), bool)), "available"),
    (dict(obs_matrices=np.ones((2, 4, 3))), "obs_matrices"),
    (dict(obs_matrices=np.full((2, 4, 1, 3), np.nan)), "obs_matrices"),
])
def test_bad_contextual_input_is_refused_naming_the_argument(kwargs, argument):
    args = dict(features=np.ones((2, 4, 3)), theta=np.array([1.0, 0.0, 0.0]))
    args.update(kwargs)
    features, theta = args.pop("features"), args.pop("theta")
    with pytest.raises(ValueError, match=argument):
        contextual.from_contexts(features, theta, **args)


def test_an_own_context_whose_model_changes_shape_is_refused():
    """A user's environment whose round's model has other shapes than ``env.model(params)``:
    refused before anything runs, naming env.context."""
    base = linear.linear_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    wider = linear.linear_bandit(e2d.instance_key(1), 3, 6, dtype=jnp.float32)
    env = Environment(observe=linear.observe, mean_rewards=linear.mean_rewards, model=lambda p: p.model,
                      context=lambda key, p, t: wider)
    with pytest.raises(ValueError, match="env.context"):
        e2d.simulate(base, e2d.ucb(), horizon=5, num_seeds=2, env=env)


def test_an_own_reset_that_changes_the_instance_shape_is_refused():
    base = linear.linear_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    env = Environment(observe=linear.observe, mean_rewards=linear.mean_rewards, model=lambda p: p.model,
                      reset=lambda key, p: p._replace(theta=jnp.zeros(4, jnp.float32)))
    with pytest.raises(ValueError, match="env.reset"):
        e2d.simulate(base, e2d.ucb(), horizon=5, num_seeds=2, env=env)


def test_the_context_sees_the_round():
    """A user's environment that cycles through its contexts by the round index t: an agent
    that always plays action 0 has exactly the regret of that cycle, on every seed."""
    features = np.asarray(jax.random.normal(jax.random.key(2), (3, 4, 2)), np.float32)
    theta = np.array([0.6, 0.8], np.float32)
    params = contextual.from_contexts(features, theta, dtype=jnp.float32)

    def by_round(key, p, t):
        return contextual.context_instance(p, (t - 1) % 3)

    env = Environment(observe=linear.observe, mean_rewards=linear.mean_rewards, model=lambda p: p.model,
                      context=by_round)
    gaps = (features @ theta).max(axis=1) - features[:, 0] @ theta
    n = 10
    sim = e2d.simulate(params, _always(0), horizon=n, num_seeds=3, record_every=1, env=env)
    expected = np.cumsum([gaps[(t - 1) % 3] for t in range(1, n + 1)])
    np.testing.assert_allclose(np.asarray(sim.result.regret), np.broadcast_to(expected, (3, n)), rtol=1e-5)


@pytest.fixture(scope="module")
def revealing_instance():
    return contextual.revealing_contextual(e2d.instance_key(0), 3, 6, 4, share=0.5, dtype=jnp.float32)


def test_an_unavailable_action_is_a_copy_of_the_first_offered_one(revealing_instance):
    """The revealing action 0 is offered in contexts 0 and 1 only; elsewhere it carries action
    1's features and map, and the span is that of the offered actions."""
    models = revealing_instance.contexts
    available = np.asarray(models.available)
    np.testing.assert_array_equal(available[:, 0], [True, True, False, False])
    assert available[:, 1:].all()
    feats, obs = np.asarray(models.features), np.asarray(models.obs_matrices)
    np.testing.assert_array_equal(feats[2:, 0], feats[2:, 1])
    np.testing.assert_array_equal(obs[2:, 0], obs[2:, 1])
    for c in (0, 1):  # the revealing map observes every reward
        assert np.count_nonzero(np.abs(obs[c, 0]).sum(-1)) == 6
    # The revealing action's reward is the context's lowest.
    rewards = feats @ np.asarray(revealing_instance.theta)
    np.testing.assert_allclose(rewards[:2, 0], rewards[:2, 1:].min(axis=1), rtol=1e-6)


def test_the_dec_over_offered_actions_is_the_dec_of_the_smaller_game(revealing_instance):
    """The ac-DEC of a context that does not offer action 0 (a copy of action 1 in its place)
    equals the ac-DEC of the game of the offered actions alone, to the solvers' certificates."""
    context = contextual.context_instance(revealing_instance, 3).model
    f_hat = jnp.asarray([0.3, -0.2, 0.5], jnp.float32)
    full = e2d.linear_acdec(context, f_hat, 0.1)
    small = linear.linear_side_observation(np.asarray(context.features)[1:], np.asarray(context.obs_matrices)[1:],
                                           np.zeros(3, np.float32), radius=1.0).model
    alone = e2d.linear_acdec(small, f_hat, 0.1)
    tol = float(full.gap) + float(alone.gap) + 1e-5
    assert abs(float(full.value) - float(alone.value)) <= tol, (full, alone)


AGENTS = {"anytime-e2d": e2d.anytime_e2d, "e2d": lambda: e2d.fixed_horizon_e2d(horizon=40), "ids": e2d.ids,
          "ucb": e2d.ucb, "ts": e2d.thompson_sampling, "squarecb": e2d.squarecb, "epsilon-greedy": e2d.epsilon_greedy}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_agents_play_only_offered_actions(name, revealing_instance):
    """Every agent on contexts that offer different actions: no invalid round (an unavailable
    action played would be one), and the revealing action only where it is offered."""
    sim = e2d.simulate(revealing_instance, AGENTS[name](), horizon=40, num_seeds=4, record_every=40)
    assert int(np.asarray(sim.result.invalid_rounds).sum()) == 0
    assert np.asarray(sim.result.action_counts).sum() == 160


def test_playing_an_unavailable_action_invalidates_the_seed(revealing_instance):
    """Always playing the revealing action: the rounds of contexts that do not offer it are
    INVALID_ACTION rounds (about half of them), every seed invalid; regret counts the rounds'
    gaps against their best offered action."""
    n, seeds = 40, 50
    sim = e2d.simulate(revealing_instance, _always(0), horizon=n, num_seeds=seeds, record_every=n)
    invalid = np.asarray(sim.result.solver.status_counts)[:, Status.INVALID_ACTION]
    assert 0.3 * n < invalid.mean() < 0.7 * n
    assert (np.asarray(sim.result.invalid_rounds) == invalid).all()


def test_continuous_contexts_draw_new_features_every_round():
    """contexts=0: new N(0, I) features each round; always playing action 0 costs
    n E[max_a <x_a, f*> - <x_0, f*>] (Monte Carlo over the same distribution, within 4 standard
    errors), and every agent learns f* across rounds."""
    params = contextual.random_contextual(e2d.instance_key(3), 3, 5, 0, dtype=jnp.float32)
    assert isinstance(params, contextual.DrawnContextParams)
    n, seeds = 20, 2000
    sim = e2d.simulate(params, _always(0), horizon=n, num_seeds=seeds, record_every=n)
    final = np.asarray(sim.result.regret)[:, -1]
    x = np.random.default_rng(0).normal(size=(200_000, 5, 3))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    r = x @ np.asarray(params.data["theta"])
    expected = n * np.mean(r.max(axis=1) - r[:, 0])
    se = final.std(ddof=1) / np.sqrt(seeds)
    assert abs(final.mean() - expected) <= 4 * se + 1e-3, (final.mean(), expected, se)
    ucb = e2d.simulate(params, e2d.ucb(), horizon=200, num_seeds=8, record_every=200)
    assert float(np.asarray(ucb.result.regret)[:, -1].mean()) < 0.5 * 10 * expected
