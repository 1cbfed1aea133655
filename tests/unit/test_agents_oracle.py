"""The regression-oracle baselines (SquareCB's inverse gap weighting and epsilon-greedy): they
learn on a linear bandit and on a finite class's linear view, a grid of their hyperparameter
is one program, epsilon-greedy's exploration rate is what it says, and bad hyperparameters are
refused naming them. Their agreement with an independent implementation on real data:
``test_datasets.py``."""
import jax.numpy as jnp
import numpy as np
import pytest

import e2d_jax as e2d
from e2d_jax.envs import finite


@pytest.fixture(scope="module")
def bandit():
    return e2d.linear_bandit(e2d.instance_key(0), 3, 8, dtype=jnp.float32)


@pytest.mark.parametrize("factory", [e2d.squarecb, e2d.epsilon_greedy])
def test_the_baselines_learn(factory, bandit):
    n = 300
    means = np.asarray(bandit.model.features @ bandit.theta)
    uniform = n * float(means.max() - means.mean())
    sim = e2d.simulate(bandit, factory(), horizon=n, num_seeds=8, record_every=n)
    assert int(np.asarray(sim.result.invalid_rounds).sum()) == 0
    assert float(np.asarray(sim.result.regret)[:, -1].mean()) < 0.3 * uniform
    params = finite.multi_armed_bandit_class(e2d.instance_key(1), 4, 10, dtype=jnp.float32)
    sim = e2d.simulate(params, factory(), horizon=100, num_seeds=4, record_every=100)
    assert int(np.asarray(sim.result.invalid_rounds).sum()) == 0


def test_a_grid_of_gamma_is_one_program(bandit):
    grid = e2d.simulate(bandit, e2d.squarecb, horizon=60, num_seeds=8, record_every=60,
                        hparams=e2d.hparam_grid(gamma_scale=[0.1, 10.0, 1000.0]))
    final = np.asarray(grid.result.regret)[..., -1].mean(axis=-1)
    assert final.shape == (3,) and len(set(np.round(final, 4))) == 3
    # The agent object with one value is the same program: no compile, the grid's bits.
    one = e2d.simulate(bandit, e2d.squarecb(gamma_scale=10.0), horizon=60, num_seeds=8, record_every=60)
    assert one.compile_seconds == 0.0
    np.testing.assert_array_equal(np.asarray(one.result.regret), np.asarray(grid.result.regret)[1])


def test_epsilon_greedy_explores_at_its_rate():
    """On 8 arms where arm 0 is clearly best (noise 0.1) the greedy action is arm 0 after a few
    rounds; epsilon = 0.4 plays each other arm with probability 0.4 / 8 (within 4 standard
    errors over 8,000 plays, the first rounds' greedy plays allowed for)."""
    n, seeds, eps = 200, 40, 0.4
    theta = np.zeros(8, np.float32)
    theta[0] = 1.0
    params = e2d.linear_side_observation(np.eye(8, dtype=np.float32), np.eye(8, dtype=np.float32), theta, sigma=0.1)
    sim = e2d.simulate(params, e2d.epsilon_greedy(epsilon=eps), horizon=n, num_seeds=seeds, record_every=n)
    shares = np.asarray(sim.result.action_counts).sum(axis=0)[1:] / (n * seeds)
    se = np.sqrt(eps / 8 * (1 - eps / 8) / (n * seeds))
    assert np.all(shares > eps / 8 - 4 * se) and np.all(shares < eps / 8 + 4 * se + 0.005), shares


@pytest.mark.parametrize("factory, kwargs, argument", [
    (e2d.squarecb, {"gamma_scale": 0.0}, "gamma_scale"),
    (e2d.squarecb, {"reg": -1.0}, "reg"),
    (e2d.epsilon_greedy, {"epsilon": 1.5}, "epsilon"),
    (e2d.epsilon_greedy, {"epsilon": "often"}, "epsilon"),
])
def test_bad_hyperparameters_are_refused_naming_them(factory, kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        factory(**kwargs)
