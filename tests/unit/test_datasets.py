"""Classification datasets as contextual bandits: the transformed rows, each round's model and
its closed-form observable span against the generic one, every seed's row order, the
practitioners' baselines against an independent NumPy implementation on the same data order,
and the errors (an unknown dataset, scikit-learn missing) on the command line and in Python."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("sklearn")

import e2d_jax as e2d  # noqa: E402
from e2d_jax import cli  # noqa: E402
from e2d_jax.agents import oracle  # noqa: E402
from e2d_jax.envs import datasets, linear  # noqa: E402
from e2d_jax.sim.rollout import seed_instances  # noqa: E402
from e2d_jax.types import ActInfo, Agent, Status  # noqa: E402


@pytest.fixture(scope="module")
def iris():
    return datasets.classification("iris", dtype=jnp.float64)


def test_rows_are_standardised_projected_and_on_the_unit_sphere():
    data = datasets.load("wine", dims=4)
    assert data.contexts.shape == (178, 5) and data.num_labels == 3
    np.testing.assert_allclose(np.linalg.norm(data.contexts, axis=1), 1.0, rtol=1e-12)
    assert sorted(set(data.labels)) == [0, 1, 2] and 0.0 < data.explained < 1.0
    # Fewer columns than dims: every column kept, all the variance.
    iris = datasets.load("iris", dims=8)
    assert iris.contexts.shape == (150, 5) and iris.explained == pytest.approx(1.0)


def test_the_closed_form_span_is_the_observable_span(iris):
    """A row's model: x_a = e_a ⊗ z; its span in closed form reproduces the features and Gram
    matrices, and its ac-DEC equals that of the same game built generically (the span from
    the eigendecomposition), within the two certificates."""
    z = iris.contexts[7]
    model = datasets.round_model(z, 3, jnp.float64)
    span = model.span
    np.testing.assert_allclose(np.asarray(span.features @ span.basis.T), np.asarray(model.features), atol=1e-12)
    np.testing.assert_allclose(np.asarray(jnp.einsum("ia,kij,jb->kab", span.basis, model.grams, span.basis)),
                               np.asarray(span.grams), atol=1e-12)
    np.testing.assert_allclose(np.asarray(span.basis.T @ span.basis), np.eye(3), atol=1e-12)
    generic = linear.linear_side_observation(np.asarray(model.features), np.asarray(model.features),
                                             np.zeros(model.dim), sigma=0.5, radius=1.0).model
    f_hat = jnp.asarray(np.random.default_rng(0).normal(size=model.dim) / 4)
    for eps2 in (0.05, 0.5):
        ours, theirs = e2d.linear_acdec(model, f_hat, eps2), e2d.linear_acdec(generic, f_hat, eps2)
        assert abs(float(ours.value) - float(theirs.value)) <= float(ours.gap) + float(theirs.gap) + 1e-6


def _always(action):
    return Agent(init=lambda key, model: jnp.zeros(()),
                 act=lambda key, state, model: (jnp.int32(action), state, ActInfo(status=jnp.int32(Status.OK))),
                 update=lambda state, action, obs, model: state)


def test_every_seed_plays_the_rows_in_its_own_order(iris):
    """seed_instances gives each seed's permutation of the rows; an agent that always plays
    label 0 has, round by round, one regret per row whose label is not 0, in that order, and
    the rows cycle once the horizon passes the dataset."""
    n, seeds = 200, 3
    orders = np.asarray(seed_instances(iris, seeds, seed=5).order)
    for order in orders:
        np.testing.assert_array_equal(np.sort(order), np.arange(150))
    assert not np.array_equal(orders[0], orders[1])
    sim = e2d.simulate(iris, _always(0), horizon=n, num_seeds=seeds, seed=5, record_every=1)
    labels = np.asarray(iris.labels)
    rows = orders[:, np.arange(n) % 150]
    np.testing.assert_array_equal(np.asarray(sim.result.regret), np.cumsum(labels[rows] != 0, axis=1))
    # The same seeds in another batch: the same orders.
    np.testing.assert_array_equal(np.asarray(seed_instances(iris, 2, seed=5, first_seed=1).order), orders[1:])


def _ridge_predictions(v_inv, b, x):
    return x @ (v_inv @ b)


def _replay(iris, rows, choose, n):
    """An independent NumPy run on the rows ``rows``: ridge on the disjoint features (V_0 = I),
    ``choose(y, t, rng_draw) -> action``; returns the regret after each round."""
    z, labels = np.asarray(iris.contexts), np.asarray(iris.labels)
    k, p = 3, z.shape[1]
    v_inv, b = np.eye(k * p), np.zeros(k * p)
    regret = []
    for t in range(1, n + 1):
        row = rows[t - 1]
        x = np.kron(np.eye(k), z[row])  # (K, K p): x_a = e_a ⊗ z
        a = choose(_ridge_predictions(v_inv, b, x), t)
        reward = float(a == labels[row])
        regret.append(1.0 - reward)
        u = v_inv @ x[a]
        v_inv -= np.outer(u, u) / (1.0 + x[a] @ u)
        b += reward * x[a]
    return np.cumsum(regret)


def test_greedy_replays_an_independent_implementation_exactly(iris):
    """epsilon-greedy with epsilon = 0 is greedy on the ridge predictions: the same mistakes,
    round by round, as a NumPy ridge regression on the same data order (float64)."""
    n, seeds = 150, 3
    rows = np.asarray(seed_instances(iris, seeds).order)
    sim = e2d.simulate(iris, e2d.epsilon_greedy(epsilon=0.0), horizon=n, num_seeds=seeds, record_every=1)
    for s in range(seeds):
        expected = _replay(iris, rows[s], lambda y, t: int(np.argmax(y)), n)
        np.testing.assert_array_equal(np.asarray(sim.result.regret)[s], expected)


def test_inverse_gap_weights_are_squarecbs():
    y = jnp.asarray([0.2, 0.9, 0.5, 0.9, -1.0])
    offered = jnp.asarray([True, True, True, False, True])
    p = np.asarray(oracle.inverse_gap_weights(y, offered, 10.0))
    expected = np.array([1 / (4 + 10 * 0.7), 0.0, 1 / (4 + 10 * 0.4), 0.0, 1 / (4 + 10 * 1.9)])
    expected[1] = 1.0 - expected.sum()
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(oracle.inverse_gap_weights(y, offered, 0.0))[[0, 1, 2, 4]], 0.25)


def test_squarecb_agrees_with_an_independent_implementation(iris):
    """SquareCB's mean number of mistakes over 300 seeds equals an independent NumPy
    implementation's on the same data orders (its own draws) within the two 99% intervals."""
    n, seeds = 120, 300
    rows = np.asarray(seed_instances(iris, seeds).order)
    sim = e2d.simulate(iris, e2d.squarecb(), horizon=n, num_seeds=seeds, record_every=n)
    ours = np.asarray(sim.result.regret)[:, -1]
    rng = np.random.default_rng(1)

    def choose(y, t):
        gamma = 10.0 * np.sqrt(t)
        best = int(np.argmax(y))
        p = 1.0 / (3 + gamma * (y[best] - y))
        p[best] = 0.0
        p[best] = 1.0 - p.sum()
        return int(rng.choice(3, p=p))

    theirs = np.array([_replay(iris, rows[s], choose, n)[-1] for s in range(seeds)])
    half = 2.58 * np.sqrt(ours.var(ddof=1) / seeds + theirs.var(ddof=1) / seeds)
    assert abs(ours.mean() - theirs.mean()) <= half, (ours.mean(), theirs.mean(), half)


def test_an_unknown_dataset_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"name: unknown dataset 'irsi' \(did you mean 'iris'\?\)"):
        datasets.classification("irsi")


def test_a_missing_scikit_learn_names_the_install_command(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    datasets._load.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"pip install 'e2d_jax\[data\]'"):
            datasets.classification("wine")
        out = tmp_path / "run"
        with pytest.raises(SystemExit) as exit_:
            cli.main(["run", "--env", "data-wine", "--horizon", "5", "--seeds", "2", "--agents", "ucb",
                      "--out", str(out)])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "--env" in err and "pip install 'e2d_jax[data]'" in err and len(err.strip().splitlines()) == 1
        assert not out.exists()
    finally:
        datasets._load.cache_clear()


def test_the_command_line_refuses_an_unknown_dataset(tmp_path, capsys):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--env", "data-irsi", "--horizon", "5", "--seeds", "2", "--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--env" in err and "data-iris" in err
    assert not out.exists()
