"""Linear partial monitoring: duelling games, observability, the DEC where rewards are not observed.

References (tests/helpers/reference.py): the fixed-lambda program by cvxpy (second-order-cone
form; its equality constraint sum_pi M_pi^T u_pi = x is infeasible when x is not observed, so
it needs no notion of observability of its own), minimised over a lambda grid; the exact
objective of a given mu by pseudo-inverses. Neither uses the library's code.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import e2d_jax as e2d
from e2d_jax.dec import linear as L
from e2d_jax.envs import dueling
from e2d_jax.envs import linear as envs
from reference import LinearOffsetCvx, linear_acdec_reference, linear_exact_objective


def _arrays(params):
    return np.asarray(params.model.features, np.float64), np.asarray(params.model.grams, np.float64)


def _random_global_game(seed, k=6, d=3):
    """Random features; each action observes the difference of its reward to its neighbour's
    (or nothing, one action in three): globally observable, no action observes its own reward."""
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(k, d))
    obs = np.zeros((k, 1, d))
    for i in range(k - 1):
        obs[i, 0] = feats[i] - feats[i + 1]
    obs[rng.integers(0, k - 1)] = 0.0  # one pair no longer observed directly ...
    obs[k - 1, 0] = feats[0] - feats[k - 1]  # ... the cycle's closing pair still links everything
    grams = np.einsum("kmi,kmj->kij", obs, obs)
    return feats, grams


def test_observability_classes():
    semi = e2d.semi_bandit(e2d.instance_key(0), 3, 10, dtype=jnp.float64)
    assert envs.observability(*_arrays(semi)) == "local"
    duel = dueling.random_dueling(e2d.instance_key(0), 3, 10, dtype=jnp.float64)
    assert envs.observability(*_arrays(duel)) == "global"
    assert envs.reward_level_observable(duel.model.span)  # 10 base arms in R^3: differences span R^3
    loc = dueling.localized_dueling(4, dtype=jnp.float64)
    assert envs.observability(*_arrays(loc)) == "global"
    assert not envs.reward_level_observable(loc.model.span)
    assert envs.observability(*_random_global_game(0)) == "global"


def test_not_globally_observable_is_refused_naming_the_actions():
    feats = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    obs = np.array([[[1.0, 0.0]], [[0.0, 0.0]], [[1.0, 0.0]], [[0.0, 0.0]]])  # only the first coordinate is seen
    with pytest.raises(ValueError, match=r"obs_matrices: the game is not globally observable.*actions 1, 2 \(2 in all\)"):
        envs.linear_side_observation(feats, obs, np.array([1.0, 0.0]))
    # The same features with the second coordinate observed by one action: accepted.
    obs[1, 0] = [0.0, 1.0]
    assert envs.linear_side_observation(feats, obs, np.array([1.0, 0.0])).model.features.shape == (4, 2)


def test_dueling_builders_follow_the_authors_conventions():
    p = dueling.random_dueling(e2d.instance_key(3), 2, 3, dtype=jnp.float64)
    base = np.asarray(jax.random.normal(e2d.instance_key(3), (3, 2), dtype=jnp.float32), np.float64)
    feats, obs = np.asarray(p.model.features), np.asarray(p.model.obs_matrices)
    for a in range(3):
        for b in range(3):
            np.testing.assert_allclose(feats[3 * a + b], base[a] + base[b], rtol=1e-6)
            np.testing.assert_allclose(obs[3 * a + b, 0], base[a] - base[b], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(p.theta), [1.0, 0.0])
    assert list(np.flatnonzero(~np.asarray(dueling.informative(p, np.arange(9))))) == [0, 4, 8]  # self-duels
    normed = dueling.random_dueling(e2d.instance_key(3), 2, 3, normalize=True, dtype=jnp.float64)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(normed.model.features)[[0, 4, 8]], axis=-1), 2.0)
    loc = dueling.localized_dueling(3, min_gap=0.2, dtype=jnp.float64)
    np.testing.assert_allclose(np.asarray(envs.mean_rewards(loc)), [1.0, 0.8, 2.0, 0.0, 1.6])


CASES = [  # (name, features, grams, gap types whose program is finite)
    ("dueling k=3 d=3", *_arrays(dueling.random_dueling(e2d.instance_key(1), 3, 3, dtype=jnp.float64)), ("delta",)),
    ("dueling k=4 d=2", *_arrays(dueling.random_dueling(e2d.instance_key(2), 2, 4, normalize=True, dtype=jnp.float64)),
     ("delta", "delta_f")),
    ("localized d=4", *_arrays(dueling.localized_dueling(4, dtype=jnp.float64)), ("delta",)),
    ("random global", *_random_global_game(1), ("delta", "delta_f")),
]


# The 16-action case (both gap types, 40 s on a 2-core CPU) and the localized game (whose offset
# DEC the default run checks below) run with the slow marker.
@pytest.mark.parametrize("name, feats, grams, gap_types",
                         [pytest.param(*c, marks=pytest.mark.slow) if c[0] in ("dueling k=4 d=2", "localized d=4")
                          else c for c in CASES],
                         ids=[c[0] for c in CASES])
def test_acdec_on_globally_observable_games_matches_reference(name, feats, grams, gap_types):
    rng = np.random.default_rng(len(name))
    f_hat = rng.normal(size=feats.shape[1])
    d = feats.shape[1]
    for gap_type in gap_types:
        for eps2 in (d / 10, d / 500):
            res = L.linear_acdec(feats, grams, f_hat, eps2, gap_type=gap_type)
            ref, _, _ = linear_acdec_reference(feats, grams, f_hat, eps2, gap_type=gap_type)
            mu = np.asarray(res.mu)
            exact = linear_exact_objective(mu, feats, grams, f_hat, eps2, gap_type=gap_type)
            assert np.isfinite(ref) and np.isfinite(float(res.value))
            # The value is honest at mu, within 1e-2 of the optimum, and the certificate is below it.
            assert float(res.value) >= exact * (1 - 1e-6) - 1e-9
            assert (exact - ref) / ref <= 1e-2, (gap_type, eps2, exact, ref)
            assert float(res.lower_bound) <= ref * (1 + 1e-6) + 1e-9
            assert int(res.status) in (0, 1)


@pytest.mark.parametrize("name, feats, grams, gap_types", CASES[:3:2], ids=[c[0] for c in CASES[:3:2]])
def test_offset_dec_on_dueling_matches_cvxpy(name, feats, grams, gap_types):
    f_hat = np.random.default_rng(7).normal(size=feats.shape[1])
    for lam in (0.3, 5.0):
        res = L.linear_offset_dec(feats, grams, f_hat, lam, gap_type="delta")
        ref, _ = LinearOffsetCvx(feats, grams, f_hat, "delta").solve(lam)
        assert float(res.lower_bound) <= ref * (1 + 1e-6) + 1e-9 <= float(res.value) * (1 + 1e-6) + 2e-9
        assert (float(res.value) - ref) <= 1e-3 * abs(ref) + 1e-6


def test_delta_f_is_refused_where_the_reward_level_is_not_observed():
    loc = dueling.localized_dueling(3, dtype=jnp.float64)
    feats, grams = _arrays(loc)
    f_hat = np.zeros(3)
    for call in (lambda: L.linear_acdec(loc.model, f_hat, 0.1), lambda: L.linear_acdec(feats, grams, f_hat, 0.1),
                 lambda: L.linear_offset_dec(feats, grams, f_hat, 1.0),
                 lambda: e2d.simulate(loc, e2d.anytime_e2d(), horizon=5, num_seeds=2)):
        with pytest.raises(ValueError, match="gap_type='delta_f' needs every reward in the span"):
            call()


def test_agents_on_a_dueling_game():
    """Every agent runs; UCB and TS settle on self-duels, which reveal nothing (the failure of
    optimism the module documents); the E2D agents and IDS play informative pairs."""
    p = dueling.random_dueling(e2d.instance_key(0), 3, 4)
    informative = np.asarray(dueling.informative(p, np.arange(16)))
    agents = {"anytime-e2d": e2d.anytime_e2d(), "e2d": e2d.fixed_horizon_e2d(horizon=60), "ids": e2d.ids(),
              "ucb": e2d.ucb(), "ts": e2d.thompson_sampling()}
    share = {}
    for name, agent in agents.items():
        sim = e2d.simulate(p, agent, horizon=60, num_seeds=4, record_every=60, label=name)
        counts = np.asarray(sim.result.action_counts)
        assert np.all(np.isfinite(np.asarray(sim.result.regret))) and counts.sum(-1).min() == 60
        share[name] = float((counts[..., informative].sum(-1) / 60).mean())
    assert share["ucb"] == 0.0 and share["ts"] == 0.0, share
    assert min(share["anytime-e2d"], share["e2d"], share["ids"]) > 0.05, share


BUILDERS = '''
import numpy as np
from e2d_jax.envs import linear


def blind(key):
    feats = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    obs = np.array([[[1.0, 0.0]], [[0.0, 0.0]], [[1.0, 0.0]]])  # the second coordinate is never observed
    return linear.linear_side_observation(feats, obs, np.array([1.0, 0.0]))


def wrong_shape(key):
    return linear.linear_side_observation(np.eye(3), np.ones((3, 1, 2)), np.ones(3))
'''


@pytest.mark.parametrize("args, needle", [
    (["--env", "games_of_mine:blind"], "obs_matrices: the game is not globally observable"),
    (["--env", "games_of_mine:wrong_shape"], "obs_matrices must have shape"),
    (["--env", "dueling-localized", "--agents", "anytime-e2d"], "--gap-type='delta_f' needs every reward"),
])
def test_bad_games_exit_2_on_the_command_line_and_write_nothing(args, needle, tmp_path, monkeypatch, capsys):
    from e2d_jax import cli

    (tmp_path / "games_of_mine.py").write_text(BUILDERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--horizon", "5", "--seeds", "2", "--out", str(tmp_path / "out"), *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_the_zoo_gives_the_e2d_agents_gaps_delta_where_only_differences_are_observed():
    from e2d_jax.paper import zoo

    for family, gaps in (("dueling-localized", {"gap_type": "delta"}), ("dueling", {})):
        options = {a.name: dict(a.options) for a in zoo.agents(family)}
        assert options["anytime-e2d"] == gaps and options["e2d"] == gaps and options["ucb"] == {}
