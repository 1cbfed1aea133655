"""The instance zoo: every instance's gaps and optimal action from its definition, and every
partial-monitoring game's observability claim checked by an independent classification
(cells, neighbours and signal spans, ``reference.observability``)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from e2d_jax.envs import linear, zoo
from e2d_jax.experiments import registry
from e2d_jax.sim.rollout import instance_key, instance_keys
from reference import observability

KEY = instance_key(0)


def _gaps(params):
    return np.asarray(linear.gaps(params))


def test_end_of_optimism():
    p = zoo.end_of_optimism(KEY, eps=0.01)
    np.testing.assert_allclose(p.model.features, [[1, 0], [0.99, 0.08], [0, 1]], atol=1e-12)
    np.testing.assert_allclose(_gaps(p), [0.0, 0.01, 1.0], atol=1e-12)
    assert int(np.argmax(linear.mean_rewards(p))) == 0
    # Bandit feedback: each action observes its own reward.
    np.testing.assert_allclose(p.model.obs_matrices[:, 0, :], p.model.features)


def test_hard_semi_bandit():
    p = zoo.hard_semi_bandit(KEY, d=3)
    theta = np.full(3, 1 / np.sqrt(3)) + np.array([0, 3 / 31, 0])
    np.testing.assert_allclose(p.theta, theta)
    np.testing.assert_allclose(_gaps(p), [theta[1], theta[1] - theta[0], 0, theta[1] - theta[2]], atol=1e-12)
    assert int(np.argmax(linear.mean_rewards(p))) == 2
    # Action 0 (reward 0) observes every other action's reward; action i observes its own.
    grams = np.asarray(p.model.grams)
    np.testing.assert_allclose(grams[0], np.eye(3))
    for i in range(1, 4):
        np.testing.assert_allclose(grams[i], np.outer(np.eye(3)[i - 1], np.eye(3)[i - 1]))


def test_large_gaps():
    p = zoo.large_gaps(KEY)
    np.testing.assert_allclose(linear.mean_rewards(p), [0.97, 0.09, -0.09, -0.8])
    np.testing.assert_allclose(_gaps(p), [0.0, 0.88, 1.06, 1.77], atol=1e-12)


def test_heteroscedastic():
    batch = jax.vmap(lambda k: zoo.heteroscedastic(k, d=3, rho=0.5, eps=0.1, sigma=1.0))(instance_keys(range(4)))
    p = jax.tree_util.tree_map(lambda x: x[0], batch)
    b = np.asarray(p.model.features[:8])
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0)
    np.testing.assert_allclose(p.model.features[8:], 0.9 * b, atol=1e-12)
    # Noise in reward units: sigma / rho on the first copy, sigma on the second.
    sigma = float(p.model.sigma)
    first = sigma / np.abs(np.asarray(p.model.obs_matrices[:8, 0]) @ b[0] / (b[:1] @ b[0]))[0]
    assert sigma == pytest.approx(2.0) and first == pytest.approx(2.0)
    second = sigma * np.linalg.norm(b[0]) / np.linalg.norm(np.asarray(p.model.obs_matrices[8, 0]))
    assert second == pytest.approx(1.0)
    r = np.asarray(linear.mean_rewards(p))
    assert int(np.argmax(r)) < 8 and np.isclose(np.linalg.norm(p.theta), 1.0)
    assert not np.allclose(batch.theta[0], batch.theta[1])  # f* is drawn from the key


def test_simple_bandit():
    p = zoo.simple_bandit(KEY, d=3, arms=10)
    np.testing.assert_allclose(p.theta, [1, 0, 0])
    np.testing.assert_allclose(_gaps(p), np.max(p.model.features[:, 0]) - p.model.features[:, 0])


GAMES = {
    # (loss matrix over outcomes, feedback symbols): apple tasting, outcomes (good, bad)
    "apple-tasting": (np.array([[0.0, 1.0], [1.0, 0.0]]), [["good", "bad"], ["-", "-"]]),
    # label-efficient prediction, outcomes (0, 1)
    "label-efficient": (np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), [["-", "-"], ["-", "-"], ["0", "1"]]),
}


def _pricing_game(k, no_sale=1.0):
    """Dynamic pricing with prices 1/k..1 and valuations 0, 1/k, ..., 1: the loss is the
    surplus v - p left when the buyer buys, the constant no_sale when not."""
    prices = np.arange(1, k + 1) / k
    values = np.arange(0, k + 1) / k
    loss = np.array([[v - p if v >= p - 1e-12 else no_sale for v in values] for p in prices])
    feedback = [["buy" if v >= p - 1e-12 else "no" for v in values] for p in prices]
    return loss, feedback


@pytest.mark.parametrize("name", ["apple-tasting", "label-efficient", "dynamic-pricing"])
def test_games_match_their_definition_and_observability(name):
    params = registry.build_instance(name, 0)[1]
    model = params.model
    if name == "dynamic-pricing":
        loss, feedback = _pricing_game(4)
        # Each model is a distribution q over the valuations: the rewards are -loss . q and the
        # observation of price p is a sale, with probability P(v >= p).
        probs = np.asarray(model.obs.probs[..., 0])
        assert np.all((probs > 0) & (probs < 1))
        assert np.all(np.diff(probs, axis=1) <= 1e-12)  # sales fall with the price
        dist = np.concatenate([1 - probs[:, :1], -np.diff(probs, axis=1), probs[:, -1:]], axis=1)
        np.testing.assert_allclose(dist.sum(1), 1.0)
        np.testing.assert_allclose(model.rewards, -dist @ loss.T, atol=1e-12)
    else:
        loss, feedback = GAMES[name]
        q = np.linspace(0.05, 0.95, 19)
        outcome = np.stack([q, 1 - q], 1) if name == "apple-tasting" else np.stack([1 - q, q], 1)
        np.testing.assert_allclose(model.rewards, 1 - outcome @ loss.T, atol=1e-12)
    expected = {"apple-tasting": "locally", "label-efficient": "globally", "dynamic-pricing": "globally"}[name]
    assert observability(loss, feedback) == expected
    assert zoo.OBSERVABILITY[name][0].startswith(expected)
    # The true model is one of the class, drawn from the key.
    batch = registry.build_instances(name, range(6))[1]
    idx = np.asarray(batch.true_index)
    np.testing.assert_allclose(batch.true_rewards, np.asarray(batch.model.rewards)[np.arange(6), idx])
    assert len(set(idx.tolist())) > 1


def test_laser_is_the_authors_game():
    """Independent re-derivation of the authors' laser arrays (pm/main.py, laser): bumps
    exp(-||x - c||^2) on the 5 x 5 grid of [-1, 1]^2, a 3 x 3 stencil of spacing 0.5."""
    p = zoo.laser(dtype=jnp.float64)
    feats, obs = np.asarray(p.model.features), np.asarray(p.model.obs_matrices)
    assert feats.shape == (18, 25) and obs.shape == (18, 9, 25)
    centres = [(a, b) for a in (-1, -0.5, 0, 0.5, 1) for b in (-1, -0.5, 0, 0.5, 1)]
    offsets = [(a, b) for a in (-0.5, 0, 0.5) for b in (-0.5, 0, 0.5)]
    bump = lambda x, c: np.exp(-((x[0] - c[0]) ** 2 + (x[1] - c[1]) ** 2))  # noqa: E731
    for i, (sx, sy) in enumerate(offsets):
        points = [(sx + ox, sy + oy) for ox, oy in offsets]
        np.testing.assert_allclose(obs[i], [[bump(x, c) for c in centres] for x in points], rtol=1e-12)
        mean = np.mean([[bump(x, c) for c in centres] for x in points], axis=0)
        np.testing.assert_allclose(feats[9 + i], mean, rtol=1e-12)
        np.testing.assert_allclose(obs[9 + i, 0], mean, rtol=1e-12)
    assert np.all(feats[:9] == 0) and np.asarray(p.theta)[18] == 1 and np.asarray(p.theta).sum() == 1
    assert linear.observability(feats, np.asarray(p.model.grams)) == "local"
