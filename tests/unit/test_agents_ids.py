"""Information-directed sampling: the ratio minimiser against a brute-force grid over
distributions, the information gains and gap estimates against direct formulas, and the
agent's conformance on both model families."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import e2d_jax as e2d
from e2d_jax.agents import ids as I
from e2d_jax.envs import finite, linear, zoo
from e2d_jax.estimators import ridge
from e2d_jax.sim.rollout import instance_key, rollout, run_keys

RNG = np.random.default_rng(0)


def _brute_pair(d1, d2, i1, i2, num=200_001):
    p = np.linspace(0, 1, num)
    num_ = ((1 - p) * d1 + p * d2) ** 2
    den = (1 - p) * i1 + p * i2
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = np.where(num_ <= 0, 0.0, np.where(den > 0, num_ / den, np.inf))
    return vals.min()


def test_two_action_ratio_against_a_brute_force_grid():
    """The closed form within 1e-4 relative of the minimum over 200,001 points of [0, 1], and
    never above it (it is exact), on random and degenerate pairs."""
    cases = [tuple(RNG.uniform(0.0, 2.0, 2)) + tuple(RNG.uniform(0.0, 1.0, 2)) for _ in range(200)]
    cases += [(0.0, 1.0, 0.0, 1.0), (1.0, 1.0, 0.5, 0.2), (0.3, 0.9, 0.0, 0.4), (0.5, 0.5, 0.0, 0.0),
              (0.2, 0.7, 0.3, 0.3), (1.0, 0.1, 2.0, 0.0)]
    for d1, d2, i1, i2 in cases:
        got, p = I.two_action_ratio(jnp.float64(d1), jnp.float64(d2), jnp.float64(i1), jnp.float64(i2))
        ref = _brute_pair(d1, d2, i1, i2)
        if np.isinf(ref):
            assert np.isinf(got)
            continue
        assert float(got) <= ref * (1 + 1e-12) + 1e-15, (d1, d2, i1, i2)
        assert float(got) >= ref * (1 - 1e-4) - 1e-12, (d1, d2, i1, i2)
        assert 0.0 <= float(p) <= 1.0


def _brute_simplex(gaps, info, step=0.002):
    """min over a grid of the 3-simplex of (mu . gaps)^2 / (mu . info)."""
    grid = np.arange(0, 1 + step / 2, step)
    w1, w2 = np.meshgrid(grid, grid, indexing="ij")
    keep = w1 + w2 <= 1 + 1e-12
    mu = np.stack([w1[keep], w2[keep], 1 - w1[keep] - w2[keep]], axis=1)
    g, i = mu @ gaps, mu @ info
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = np.where(g <= 0, 0.0, np.where(i > 0, g * g / i, np.inf))
    return vals.min()


@pytest.mark.parametrize("seed", range(6))
def test_ids_distribution_is_the_minimum_over_distributions(seed):
    """With K = 3 the best two-action distribution is the minimum over the simplex (within
    1e-4 relative of a grid of step 0.002 over all distributions, and never above it)."""
    rng = np.random.default_rng(seed)
    gaps = rng.uniform(0.0, 1.0, 3)
    gaps[rng.integers(3)] *= 0.1
    info = rng.uniform(0.0, 1.0, 3)
    i, j, p, r = I.ids_distribution(jnp.asarray(gaps), jnp.asarray(info), "full")
    ref = _brute_simplex(gaps, info)
    assert float(r) <= ref * (1 + 1e-12)
    assert float(r) >= ref * (1 - 1e-4)
    mu = np.zeros(3)
    mu[int(i)] += 1 - float(p)
    mu[int(j)] += float(p)
    np.testing.assert_allclose((mu @ gaps) ** 2 / (mu @ info), float(r), rtol=1e-10)
    # "fast": the best pair that contains the winner (the smallest gap), never better than full.
    _, _, _, r_fast = I.ids_distribution(jnp.asarray(gaps), jnp.asarray(info), "fast")
    assert float(r_fast) >= float(r) * (1 - 1e-12)


def _full_pairs(gaps, info):
    """The best pair by evaluating every pair (the small-K path), any K."""
    return I._best_pair(jnp.asarray(gaps), jnp.asarray(info), jnp.arange(gaps.shape[0], dtype=jnp.int32))


@pytest.mark.parametrize("seed", range(4))
def test_dual_pair_search_equals_the_search_over_every_pair(seed):
    """Above FULL_PAIRS_MAX actions the pair comes from the dual search: its ratio equals the
    minimum over all K^2 pairs (1e-9 relative, float64), on random problems and on ones with a
    zero gap, zero informations, ties and an action that is informative but costly."""
    rng = np.random.default_rng(seed)
    k = I.FULL_PAIRS_MAX + 1 + 60 * seed
    gaps = rng.uniform(0.0, 2.0, k)
    info = rng.uniform(0.0, 1.0, k) ** 3
    cases = [(gaps, info)]
    g = gaps.copy(); g[rng.integers(k)] = 0.0
    cases.append((g, info))  # a zero gap: ratio 0
    i0 = info.copy(); i0[: k // 2] = 0.0
    cases.append((gaps, i0))  # half the actions uninformative
    cases.append((np.round(gaps, 1), np.round(info, 1)))  # ties
    g2, i2 = gaps.copy() + 0.5, info.copy() * 1e-3
    g2[3], i2[3] = 5.0, 1.0  # one costly informative action among uninformative good ones
    cases.append((g2, i2))
    for gi, ii in cases:
        i, j, p, r = I.ids_distribution(jnp.asarray(gi), jnp.asarray(ii), "full")
        _, _, _, ref = _full_pairs(gi, ii)
        np.testing.assert_allclose(float(r), float(ref), rtol=1e-9, atol=1e-300)
        mu = np.zeros(k)
        mu[int(i)] += 1 - float(p)
        mu[int(j)] += float(p)
        num, den = (mu @ gi) ** 2, mu @ ii
        np.testing.assert_allclose(0.0 if num == 0 else num / den, float(r), rtol=1e-10)


def test_blocked_difference_gaps_equal_the_direct_formula():
    """Above FULL_PAIRS_MAX actions the difference gaps come from blocks of a Gram matrix: equal to
    max_b (phi_b - phi_a) f + beta ||phi_b - phi_a||_{V^-1} computed directly (1e-9, float64),
    K not a multiple of the block."""
    k = I.GAP_BLOCK + 37
    params = linear.linear_bandit(instance_key(2), 3, k, dtype=jnp.float64)
    model = params.model
    st = _state_after(params, rounds=30)
    phi, f, v_inv, beta = np.asarray(model.features), np.asarray(st.f_hat), np.asarray(st.v_inv), 1.3
    diff = phi[None, :, :] - phi[:, None, :]
    norms = np.sqrt(np.maximum(np.einsum("abi,ij,abj->ab", diff, v_inv, diff), 0.0))
    expected = np.maximum((diff @ f + beta * norms).max(axis=1), 0.0)
    np.testing.assert_allclose(I.linear_gap_estimates(st, model, beta, "difference"), expected, rtol=1e-9, atol=1e-12)


def _state_after(params, rounds=15, seed=0):
    """A ridge state after some random play."""
    model = params.model
    st = ridge.init(model.dim, reg=1.0, dtype=jnp.float64)
    keys = jax.random.split(jax.random.key(seed), rounds)
    for t, k in enumerate(keys):
        a = t % model.num_actions
        y = linear.observe(k, params, jnp.int32(a))
        st = ridge.update(st, model.obs_matrices[a], y)
    return st


def test_information_gains_and_gap_estimates_against_direct_formulas():
    params = linear.semi_bandit(instance_key(3), 3, 6, dtype=jnp.float64)
    model = params.model
    st = _state_after(params)
    v = np.linalg.inv(np.asarray(st.v_inv))
    v_inv = np.linalg.inv(v)
    mats = np.asarray(model.obs_matrices)
    wc = np.array([np.linalg.slogdet(np.eye(m.shape[0]) + m @ v_inv @ m.T)[1] for m in mats])
    np.testing.assert_allclose(I.worst_case_info(st.v_inv, model.obs_matrices), wc, rtol=1e-9, atol=1e-12)
    w = np.asarray(model.features[2] - model.features[0])
    di = np.array([np.log(w @ v_inv @ w) - np.log(w @ np.linalg.inv(v + m.T @ m) @ w) for m in mats])
    np.testing.assert_allclose(I.directed_info(st.v_inv, model.obs_matrices, jnp.asarray(w)), di, rtol=1e-8, atol=1e-12)
    # The d x d forms through the grams (here m = 6 observation rows > d = 3): the same values.
    assert mats.shape[1] > mats.shape[2]
    np.testing.assert_allclose(I.worst_case_info(st.v_inv, model.obs_matrices, model.grams), wc, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(I.directed_info(st.v_inv, model.obs_matrices, jnp.asarray(w), model.grams), di,
                               rtol=1e-8, atol=1e-12)
    beta = 1.7
    phi, f = np.asarray(model.features), np.asarray(st.f_hat)
    norm = lambda x: np.sqrt(x @ v_inv @ x)
    diff = np.array([max((phi[b] - phi[a]) @ f + beta * norm(phi[b] - phi[a]) for b in range(6)) for a in range(6)])
    np.testing.assert_allclose(I.linear_gap_estimates(st, model, beta, "difference"), diff, rtol=1e-10)
    ucb = phi @ f + beta * np.array([norm(x) for x in phi])
    lcb = phi @ f - beta * np.array([norm(x) for x in phi])
    np.testing.assert_allclose(I.linear_gap_estimates(st, model, beta, "value"), ucb.max() - lcb, rtol=1e-10)
    # The confidence width with the anytime delta_t = 1 / (s log s), s = 1 + m (t - 1).
    t, m = 16, mats.shape[1]
    s = 1 + m * (t - 1)
    expected = np.sqrt(2 * np.log(s * np.log(s)) + float(st.logdet)) + 1.0
    np.testing.assert_allclose(I.confidence_width(st, model, jnp.int32(t)), expected, rtol=1e-12)


def test_finite_gaps_and_information_against_direct_formulas():
    params = finite.revealing_class(instance_key(1), 4, 7, gain=2.0)
    model = params.model
    w = RNG.dirichlet(np.ones(7))
    gaps, info = I.finite_gaps_and_info(jnp.asarray(w), model)
    r = np.asarray(model.rewards)
    means = np.asarray(model.obs.means)
    mask = np.asarray(model.obs_mask)
    np.testing.assert_allclose(gaps, w @ r.max(1) - w @ r, rtol=1e-12)
    best = r.argmax(1)
    expected = np.zeros(4)
    for a in range(4):
        mean = (w[:, None] * means[:, a]).sum(0)
        for s in range(4):
            sel = best == s
            if w[sel].sum() == 0:
                continue
            cond = (w[sel, None] * means[sel, a]).sum(0) / w[sel].sum()
            expected[a] += w[sel].sum() * np.sum(np.where(mask[a], (cond - mean) ** 2, 0.0))
    np.testing.assert_allclose(info, expected, rtol=1e-10, atol=1e-15)


AGENTS = {
    "linear-directed": lambda: I.ids(),
    "linear-worst-case-value-fast": lambda: I.ids(info_gain="worst-case", gap_estimate="value", sampling="fast"),
}


@pytest.mark.parametrize("name", sorted(AGENTS))
@pytest.mark.parametrize("env", ["semi", "eoo"])
def test_conformance_on_linear_models(name, env):
    params = (linear.semi_bandit(jax.random.key(1), 3, 5, dtype=jnp.float32) if env == "semi"
              else zoo.end_of_optimism(None, dtype=jnp.float32))
    agent = AGENTS[name]()
    run = jax.jit(jax.vmap(lambda k: rollout(k, params, agent, horizon=30, record_every=10)))
    keys = run_keys(0, np.arange(3))
    a, b = run(keys), run(keys)
    assert a.regret.shape == (3, 3) and int(a.invalid_rounds.sum()) == 0
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(x, y)
    assert isinstance(a.info, I.IDSInfo)


def test_ids_runs_on_finite_classes_and_takes_traced_hyperparameters():
    fin = e2d.revealing_class(instance_key(2), 4, 6, gain=2.0, dtype=jnp.float32)
    sim = e2d.simulate(fin, I.ids(), horizon=20, num_seeds=3)
    assert e2d.valid_seeds(sim.result).all()
    lin = linear.semi_bandit(instance_key(0), 3, 5, dtype=jnp.float32)
    grid = e2d.simulate(lin, I.ids, horizon=12, num_seeds=3, hparams={"delta": [0.01, 0.1], "reg": [1.0, 2.0]})
    assert grid.result.regret.shape[:2] == (2, 3)
    with pytest.raises(ValueError, match="info_gain"):
        I.linear_ids(info_gain="mutual")
    with pytest.raises(ValueError, match="on finite classes must be 'variance'"):
        e2d.simulate(fin, I.ids(info_gain="worst-case"), horizon=2, num_seeds=1)


def test_ids_plays_the_informative_action_on_the_end_of_optimism():
    """On the end-of-optimism instance IDS (directed) plays the informative third action more
    than UCB does, and both learn the optimal action."""
    params = zoo.end_of_optimism(None, dtype=jnp.float32)
    counts = {name: np.asarray(e2d.simulate(params, agent, horizon=1000, num_seeds=32).result.action_counts).mean(0)
              for name, agent in (("ids", I.ids()), ("ucb", e2d.ucb()))}
    assert counts["ids"][2] > counts["ucb"][2]
    assert counts["ids"][0] > 500 and counts["ucb"][0] > 500
