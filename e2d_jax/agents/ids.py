"""Information-directed sampling (IDS), on linear models with side observations and on finite
classes.

IDS (Russo and Van Roy, 2014; Kirschner and Krause, 2018; for linear partial monitoring
Kirschner, Lattimore and Krause, 2020) plays, every round, a distribution mu over actions
that minimises the information ratio

    Psi(mu) = (mu . Delta_hat)^2 / (mu . I),

with Delta_hat an estimate of every action's gap and I its information gain. The minimum
over the simplex is attained on at most two actions (Russo and Van Roy, 2014, Prop. 6), and on
two actions i, j with mu = (1 - p) e_i + p e_j the ratio is convex in p with the stationary
point p = D_i / (D_j - D_i) - 2 I_i / (I_j - I_i); :func:`two_action_ratio` evaluates that
point clipped to [0, 1] and both ends, so the minimum over each pair is exact, and
:func:`ids_distribution` takes the best pair: over all pairs (``sampling="full"``, the exact
minimiser over distributions) or over the pairs that contain the gap estimate's winner
(``sampling="fast"``, the authors' code's default).

Linear models (:func:`linear_ids`), with the ridge estimate f_hat_t, V_t = reg I + sum
M^T M and the confidence width beta_t^{1/2} ||x||_{V_t^{-1}}, beta_t^{1/2} = sigma sqrt(log
det V_t / det V_0 + 2 log(1 / delta_t)) + reg^{1/2} S (Abbasi-Yadkori et al., 2011; S the
class's bound on ||f*||; delta_t = 1 / (s log s) with s the observation rows received so far,
padded rows included, unless ``delta`` is given):

* gap estimates: ``"difference"`` Delta_hat(a) = max_b (phi_b - phi_a) . f_hat + beta^{1/2}
  ||phi_b - phi_a||_{V^{-1}} (>= 0), or ``"value"`` Delta_hat(a) = max_b UCB(phi_b) - LCB(phi_a);
  the *winner* a_hat minimises Delta_hat;
* information gains: ``"worst-case"`` I(a) = log det(I + M_a V^{-1} M_a^T) (twice the
  Gaussian mutual information of the observation and f with unit noise), or ``"directed"``
  I(a) = log ||w||^2_{V^{-1}} - log ||w||^2_{(V + M_a^T M_a)^{-1}} about the direction
  w = phi_{b*} - phi_{a_hat}, b* the plausibly better action (UCB of phi_b - phi_{a_hat} >= 0)
  farthest from a_hat in ||.||_{V^{-1}}; with no plausibly better action I = 1 on a_hat and 0
  elsewhere, so IDS plays a_hat.

Finite classes (:func:`finite_ids`), the Bayesian form, from the EWA posterior p_t (the exact
posterior for eta = 1): Delta(a) = E_p[r_f(a*_f)] - E_p[r_f(a)], the expected regret, and the
variance-based information gain I(a) = sum_{a*} P_p(A* = a*) ||E_p[o_a | A* = a*] - E_p[o_a]||^2
over the observed coordinates of the observation means o (Russo and Van Roy, 2014, Section
6; a lower bound on the mutual information up to the noise's scale, which the ratio's
minimiser does not depend on).

The ratio is minimised in closed form, so there is no certificate to report: the round's
status is OK unless a non-finite value appears (``Status.NONFINITE``). Every numeric
hyperparameter (``reg``, ``delta``, ``radius``, ``eta``) may be traced.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax import _linalg
from e2d_jax.agents import estimation
from e2d_jax.envs import finite
from e2d_jax.envs.family import family_of
from e2d_jax.envs.linear import LinearModel, playable
from e2d_jax.estimators import ewa, logistic, ridge
from e2d_jax.types import Agent, AgentSpec, ByFamily, Status

INFO_GAINS = ("directed", "worst-case")
FINITE_INFO_GAINS = ("variance",)
GAP_ESTIMATES = ("difference", "value")
SAMPLINGS = ("full", "fast")


class IDSInfo(NamedTuple):
    """Per-round diagnostics of IDS."""

    status: jax.Array  # () int32 Status
    ratio: jax.Array  # () float, the information ratio of the distribution played
    delta: jax.Array  # () float, the distribution's expected gap estimate
    info: jax.Array  # () float, the distribution's expected information gain
    p: jax.Array  # () float, the probability of the pair's second action


# --------------------------------------------------------------------------------------
# The ratio and its minimiser


def ratio(d, i):
    """Psi = d^2 / i with 0 / 0 = 0 (a gap of zero costs nothing) and d^2 / 0 = inf."""
    tiny = jnp.finfo(jnp.result_type(d, i)).tiny
    num = d * d
    return jnp.where(num <= 0.0, 0.0, jnp.where(i > tiny, num / jnp.maximum(i, tiny), jnp.inf))


def two_action_ratio(d1, d2, i1, i2):
    """min over p in [0, 1] of ((1 - p) d1 + p d2)^2 / ((1 - p) i1 + p i2), and its p.

    Psi is convex in p on [0, 1] (a quadratic over a positive linear function), so the
    minimum is at the stationary point d1 / (d2 - d1) - 2 i1 / (i2 - i1) clipped to [0, 1], or
    at an end; all three are evaluated. Broadcasts over its arguments.
    """
    dd, di = d2 - d1, i2 - i1
    safe_dd = jnp.where(dd == 0, 1.0, dd)
    safe_di = jnp.where(di == 0, 1.0, di)
    stat = jnp.where((dd != 0) & (di != 0), d1 / safe_dd - 2.0 * i1 / safe_di, 0.0)
    stat = jnp.clip(jnp.where(jnp.isfinite(stat), stat, 0.0), 0.0, 1.0)
    ps = jnp.stack([jnp.zeros_like(stat), jnp.ones_like(stat), stat])
    vals = ratio((1 - ps) * d1 + ps * d2, (1 - ps) * i1 + ps * i2)
    best = jnp.argmin(vals, axis=0)
    return jnp.take_along_axis(vals, best[None], 0)[0], jnp.take_along_axis(ps, best[None], 0)[0]


#: Above this many actions the full pair search is the dual search (:func:`dual_pair_search`):
#: the K^2 pairs cost more than its O(K) envelope evaluations.
FULL_PAIRS_MAX = 64
#: The dual search's golden-section steps on s (0.618^48 < 1e-10 of the bracket) and the
#: candidates it keeps: the actions nearest the envelope at s*, with the smallest gap estimate and
#: the largest information gain.
DUAL_STEPS = 48
DUAL_CANDIDATES = 6


def _best_pair(gaps, info, cand):
    """The best pair among the candidate actions ``cand`` (c,): (i, j, p, ratio)."""
    c = cand.shape[0]
    g, inf = gaps[cand], info[cand]
    vals, ps = two_action_ratio(g[:, None], g[None, :], inf[:, None], inf[None, :])
    flat = jnp.argmin(vals.reshape(-1))
    return (cand[flat // c].astype(jnp.int32), cand[flat % c].astype(jnp.int32), ps.reshape(-1)[flat],
            vals.reshape(-1)[flat])


def dual_pair_search(gaps, info):
    """The full pair search in O(K) per step, by duality: (i, j, p, ratio) as
    :func:`ids_distribution`'s ``"full"``.

    With x^2 / y = max_s (2 s x - s^2 y) for y > 0 (and 0 / 0 = 0), the ratio's minimum over
    the simplex is max_{s >= 0} h(s), h(s) = min_a (2 s Delta_a - s^2 I_a) (min-max over a
    bilinear-concave function: Sion's theorem). h is concave, so its maximiser s* is found by
    golden-section search on [0, 2 Delta_b / I_b], b the action of largest information (h(s) <=
    2 s Delta_b - s^2 I_b < 0 beyond). An optimal distribution is supported on the actions
    whose parabola attains h(s*) (the saddle point's complementary slackness): the pair is the
    best among the actions nearest the envelope at s* together with the action of smallest gap
    estimate and that of largest information gain, each pair minimised exactly by
    :func:`two_action_ratio`. Where several actions tie at the envelope, any pair among them is
    optimal up to the tie.
    """
    dtype = gaps.dtype
    b = jnp.argmax(info)
    tiny = jnp.finfo(dtype).tiny
    hi = jnp.where(info[b] > tiny, 2.0 * jnp.maximum(gaps[b], 0.0) / jnp.maximum(info[b], tiny), 0.0)
    hi = jnp.where(jnp.isfinite(hi), hi, 0.0)
    envelope = lambda s: jnp.min(2.0 * s * gaps - s * s * info)
    golden = jnp.asarray((math.sqrt(5.0) - 1.0) / 2.0, dtype)

    def step(_, bracket):
        lo, up = bracket
        a, c = up - golden * (up - lo), lo + golden * (up - lo)
        left = envelope(a) >= envelope(c)
        return jnp.where(left, lo, a), jnp.where(left, c, up)

    lo, up = jax.lax.fori_loop(0, DUAL_STEPS, step, (jnp.zeros((), dtype), hi.astype(dtype)))
    s_star = 0.5 * (lo + up)
    near = jax.lax.top_k(-(2.0 * s_star * gaps - s_star * s_star * info), DUAL_CANDIDATES - 2)[1]
    cand = jnp.concatenate([near, jnp.stack([jnp.argmin(gaps), b])]).astype(jnp.int32)
    return _best_pair(gaps, info, cand)


def ids_distribution(gaps, info, sampling: str = "full", winner=None):
    """The IDS distribution of gap estimates ``gaps`` (K,) and information gains ``info`` (K,).

    Returns ``(i, j, p, ratio)``: play j with probability p, else i. ``sampling="full"``
    searches every pair (the exact minimiser over distributions; above
    :data:`FULL_PAIRS_MAX` actions by :func:`dual_pair_search`); ``"fast"`` the pairs
    (winner, j).
    """
    k = gaps.shape[0]
    if sampling == "fast":
        w = jnp.argmin(gaps) if winner is None else winner
        vals, ps = two_action_ratio(gaps[w], gaps, info[w], info)
        j = jnp.argmin(vals)
        return w.astype(jnp.int32), j.astype(jnp.int32), ps[j], vals[j]
    if k > FULL_PAIRS_MAX:
        return dual_pair_search(gaps, info)
    return _best_pair(gaps, info, jnp.arange(k, dtype=jnp.int32))


def _play(key, i, j, p, gaps, info, r):
    action = jnp.where(jax.random.uniform(key, dtype=p.dtype) < p, j, i).astype(jnp.int32)
    delta = (1 - p) * gaps[i] + p * gaps[j]
    inf = (1 - p) * info[i] + p * info[j]
    ok = jnp.isfinite(delta) & jnp.isfinite(inf) & jnp.all(jnp.isfinite(gaps)) & jnp.all(jnp.isfinite(info))
    status = jnp.where(ok, Status.OK, Status.NONFINITE).astype(jnp.int32)
    return action, IDSInfo(status=status, ratio=r, delta=delta, info=inf, p=p)


# --------------------------------------------------------------------------------------
# Linear models


class LinearIDSState(NamedTuple):
    estimate: ridge.RidgeState | logistic.LogisticState  # by the model's feedback (agents.estimation)
    t: jax.Array  # () int32, rounds played


def confidence_width(state: ridge.RidgeState, model: LinearModel, t, *, delta=None, reg=1.0, radius=None):
    """beta_t^{1/2} = sigma sqrt(log det V_t / det V_0 + 2 log(1 / delta_t)) + reg^{1/2} S, with
    delta_t = 1 / (s log s), s = max(2, 1 + m (t - 1)) the observation rows received (padded
    rows included), unless ``delta`` is given."""
    dtype = state.f_hat.dtype
    if delta is None:
        log_inv_delta = ridge.anytime_log_inv_delta(model.obs_matrices.shape[-2] * (t - 1), dtype)
    else:
        log_inv_delta = -jnp.log(jnp.asarray(delta, dtype))
    bound = model.radius if radius is None else radius
    return estimation.confidence_width(state, model, bound, log_inv_delta, reg)


def _norms(v_inv, x):
    """||x_k||_{V^{-1}} for rows x (..., d)."""
    return jnp.sqrt(jnp.maximum(jnp.einsum("...i,ij,...j->...", x, v_inv, x), 0.0))


def linear_gap_estimates(state: ridge.RidgeState, model: LinearModel, beta_sqrt, kind: str = "difference"):
    """Delta_hat (K,) of the module docstring."""
    phi, f_hat, v_inv = model.features, state.f_hat, state.v_inv
    r = phi @ f_hat
    if kind == "value":
        width = beta_sqrt * _norms(v_inv, phi)
        return jnp.max(r + width) - (r - width)
    if phi.shape[0] > FULL_PAIRS_MAX:
        return _blocked_difference_gaps(phi, r, v_inv, beta_sqrt)
    diff = phi[None, :, :] - phi[:, None, :]  # [a, b] = phi_b - phi_a
    ucb = (r[None, :] - r[:, None]) + beta_sqrt * _norms(v_inv, diff)
    return jnp.maximum(jnp.max(ucb, axis=1), 0.0)


#: The block of actions b that the many-action difference gaps compare every a with at once.
GAP_BLOCK = 256


def _blocked_difference_gaps(phi, r, v_inv, beta_sqrt):
    """The ``"difference"`` gap estimates for many actions: ||phi_b - phi_a||^2_{V^{-1}} = q_a + q_b -
    2 phi_a^T V^{-1} phi_b (q_a = ||phi_a||^2_{V^{-1}}) from a (K, B) product per block of B actions
    b, with a running max: O(K^2 d) time, O(K B) memory. The term b = a is 0 exactly."""
    k = phi.shape[0]
    w = phi @ v_inv  # (K, d)
    q = jnp.einsum("kd,kd->k", w, phi)
    blocks = -(-k // GAP_BLOCK)
    # Padding repeats action 0, which leaves every max as it is.
    idx = jnp.concatenate([jnp.arange(k), jnp.zeros(blocks * GAP_BLOCK - k, jnp.int32)]).reshape(blocks, GAP_BLOCK)
    rows = jnp.arange(k)[:, None]

    def block(best, b):
        n2 = q[:, None] + q[b][None, :] - 2.0 * (w @ phi[b].T)
        ucb = (r[b][None, :] - r[:, None]) + beta_sqrt * jnp.sqrt(jnp.maximum(n2, 0.0))
        return jnp.maximum(best, jnp.max(jnp.where(b[None, :] == rows, 0.0, ucb), axis=1)), None

    best, _ = jax.lax.scan(block, jnp.zeros((k,), phi.dtype), idx)
    return best


def _observation_factors(v_inv, obs_matrices):
    """Per action the Cholesky factor of A_a = I + M_a V^{-1} M_a^T (m x m) and M_a V^{-1}."""
    mv = jnp.einsum("kmi,ij->kmj", obs_matrices, v_inv)  # (K, m, d)
    a = jnp.einsum("kmj,knj->kmn", mv, obs_matrices) + jnp.eye(obs_matrices.shape[1], dtype=v_inv.dtype)
    return _linalg.psd_cholesky(a), mv


def _gram_factors(v_inv, grams):
    """Per action the Cholesky factor of B_a = I + L^T G_a L (d x d, V^{-1} = L L^T, G_a = M_a^T
    M_a), and L: the same determinant as A_a's (Sylvester) at O(d^3) instead of O(m^3) when an
    action observes more rows than there are dimensions (the semi-bandit's revealing action,
    padded to every action)."""
    low = _linalg.psd_cholesky(v_inv)
    b = jnp.einsum("ji,kjl,lm->kim", low, grams, low) + jnp.eye(v_inv.shape[-1], dtype=v_inv.dtype)
    return _linalg.psd_cholesky(b), low


def _use_grams(v_inv, obs_matrices, grams):
    return grams is not None and obs_matrices.shape[1] > v_inv.shape[-1]


def worst_case_info(v_inv, obs_matrices, grams=None):
    """I(a) = log det(I + M_a V^{-1} M_a^T), (K,); by the d x d form det(I + L^T G_a L) when the
    grams (K, d, d) are given and the m observation rows outnumber the d dimensions."""
    if _use_grams(v_inv, obs_matrices, grams):
        chol, _ = _gram_factors(v_inv, grams)
    else:
        chol, _ = _observation_factors(v_inv, obs_matrices)
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


def directed_info(v_inv, obs_matrices, w, grams=None):
    """I(a) = log ||w||^2_{V^{-1}} - log ||w||^2_{(V + M_a^T M_a)^{-1}}, (K,), by Woodbury:
    w^T (V + M^T M)^{-1} w = w^T V^{-1} w - u^T (I + M V^{-1} M^T)^{-1} u, u = M V^{-1} w; or,
    with the grams when m > d, w^T (V + G)^{-1} w = u^T (I + L^T G L)^{-1} u, u = L^T w."""
    base = w @ v_inv @ w
    if _use_grams(v_inv, obs_matrices, grams):
        chol, low = _gram_factors(v_inv, grams)
        u = jnp.broadcast_to(w @ low, chol.shape[:-1])  # (K, d)
        z = jax.vmap(lambda c, x: _linalg.cholesky_solve(c, x))(chol, u)
        after = jnp.einsum("kd,kd->k", u, z)
    else:
        chol, mv = _observation_factors(v_inv, obs_matrices)
        u = mv @ w  # (K, m)
        z = jax.vmap(lambda c, x: _linalg.cholesky_solve(c, x))(chol, u)
        after = base - jnp.einsum("km,km->k", u, z)
    tiny = jnp.finfo(v_inv.dtype).tiny
    return jnp.maximum(jnp.log(jnp.maximum(base, tiny)) - jnp.log(jnp.maximum(after, tiny)), 0.0)


def linear_information(state: ridge.RidgeState, model: LinearModel, gaps, beta_sqrt, kind: str = "directed"):
    """The information gains (K,) of the module docstring, and the winner a_hat."""
    winner = jnp.argmin(gaps).astype(jnp.int32)
    if kind == "worst-case":
        return worst_case_info(state.v_inv, model.obs_matrices, model.grams), winner
    phi, v_inv = model.features, state.v_inv
    diff = phi - phi[winner]  # (K, d): phi_b - phi_{a_hat}
    plausible = diff @ state.f_hat + beta_sqrt * _norms(v_inv, diff) >= 0.0
    plausible = plausible.at[winner].set(False)
    dist = jnp.where(plausible, _norms(v_inv, diff), -1.0)
    b_star = jnp.argmax(dist)
    info = directed_info(v_inv, model.obs_matrices, diff[b_star], model.grams)
    alone = jax.nn.one_hot(winner, phi.shape[0], dtype=v_inv.dtype)
    return jnp.where(jnp.any(plausible), info, alone), winner


def linear_ids(*, info_gain: str = "directed", gap_estimate: str = "difference", sampling: str = "full",
               delta=None, reg=1.0, radius=None) -> Agent:
    """IDS on linear models with side observations (see the module docstring).

    Args:
      info_gain: ``"directed"`` (default) or ``"worst-case"``.
      gap_estimate: ``"difference"`` (default) or ``"value"``.
      sampling: ``"full"`` (the exact minimiser over distributions; default) or ``"fast"``
        (pairs with the winner).
      delta: the confidence level in (0, 1) (may be traced); None: the anytime
        delta_t = 1 / (s log s).
      reg: the ridge regulariser V_0 = reg I (> 0; may be traced).
      radius: S, the bound on ||f*|| (may be traced); default the class's ``model.radius``.

    Returns:
      Agent whose ``act`` info is :class:`IDSInfo`.
    """
    if info_gain not in INFO_GAINS:
        raise ValueError(f"info_gain must be one of {INFO_GAINS} on linear models, got {info_gain!r}")
    if gap_estimate not in GAP_ESTIMATES:
        raise ValueError(f"gap_estimate must be one of {GAP_ESTIMATES}, got {gap_estimate!r}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    if delta is not None:
        V.check_positive("delta", delta)
        if V.is_concrete(delta) and not float(delta) < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
    V.check_positive("reg", reg)
    if radius is not None:
        V.check_positive("radius", radius)

    def check(model):
        if not isinstance(model, LinearModel):
            raise ValueError(f"model: e2d_jax.agents.ids.linear_ids runs on linear models, got a "
                             f"{type(model).__name__}; e2d_jax.agents.ids.ids dispatches on the model")

    def init(key, model):
        del key
        check(model)
        return LinearIDSState(estimation.init(model, reg), jnp.zeros((), jnp.int32))

    def act(key, state, model):
        t = state.t + 1
        beta_sqrt = confidence_width(state.estimate, model, t, delta=delta, reg=reg, radius=radius)
        gaps = linear_gap_estimates(state.estimate, model, beta_sqrt, gap_estimate)
        info, winner = linear_information(state.estimate, model, gaps, beta_sqrt, info_gain)
        i, j, p, r = ids_distribution(gaps, info, sampling, winner)
        action, out = _play(key, i, j, p, gaps, info, r)
        return playable(model, action), state._replace(t=t), out

    def update(state, action, obs, model):
        return state._replace(estimate=estimation.update(state.estimate, model, action, obs, reg))

    config = AgentSpec.of(linear_ids, ("delta", "reg", "radius"), info_gain=info_gain, gap_estimate=gap_estimate,
                          sampling=sampling, delta=delta, reg=reg, radius=radius)
    return Agent(init=init, act=act, update=update, config=config)


# --------------------------------------------------------------------------------------
# Finite classes


class FiniteIDSState(NamedTuple):
    ewa: ewa.EWAState


def _observation_means(model: finite.FiniteModel):
    """(M, K, m) the mean of each observation coordinate under each model."""
    return model.obs.means if isinstance(model.obs, finite.GaussianObs) else model.obs.probs


def finite_gaps_and_info(weights, model: finite.FiniteModel):
    """The expected regret Delta (K,) and the variance-based information gain I (K,) under the
    posterior ``weights`` (M,)."""
    rewards = model.rewards  # (M, K)
    k = rewards.shape[1]
    best = jnp.argmax(rewards, axis=1)  # (M,) a*_f
    gaps = weights @ jnp.max(rewards, axis=1) - weights @ rewards
    onehot = jax.nn.one_hot(best, k, dtype=weights.dtype)  # (M, K*)
    p_star = weights @ onehot  # (K*,) P(A* = a*)
    means = _observation_means(model)  # (M, K, m)
    mean_all = jnp.einsum("g,gkm->km", weights, means)
    joint = jnp.einsum("g,gs,gkm->skm", weights, onehot, means)  # sum_f p_f 1[a*_f = s] o_f(k)
    cond = joint / jnp.maximum(p_star, jnp.finfo(weights.dtype).tiny)[:, None, None]
    sq = jnp.where(model.obs_mask[None], (cond - mean_all[None]) ** 2, 0.0).sum(-1)  # (K*, K)
    return gaps, p_star @ sq


def finite_ids(*, sampling: str = "full", eta=1.0) -> Agent:
    """Bayesian IDS on a finite class with the EWA posterior (see the module docstring).

    Args:
      sampling: ``"full"`` (the exact minimiser over distributions; default) or ``"fast"``.
      eta: the EWA learning rate (1: the Bayesian posterior; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`IDSInfo`.
    """
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    V.check_positive("eta", eta)

    def check(model):
        if not isinstance(model, finite.FiniteModel):
            raise ValueError(f"model: e2d_jax.agents.ids.finite_ids runs on finite classes, got a "
                             f"{type(model).__name__}; e2d_jax.agents.ids.ids dispatches on the model")

    def init(key, model):
        del key
        check(model)
        return FiniteIDSState(ewa.init(model.num_models, dtype=model.rewards.dtype))

    def act(key, state, model):
        weights = ewa.posterior(state.ewa)
        gaps, info = finite_gaps_and_info(weights, model)
        i, j, p, r = ids_distribution(gaps, info, sampling)
        action, out = _play(key, i, j, p, gaps, info, r)
        return action, state, out

    def update(state, action, obs, model):
        return FiniteIDSState(ewa.update(state.ewa, finite.log_likelihood(model, action, obs), eta=eta))

    return Agent(init=init, act=act, update=update, config=AgentSpec.of(finite_ids, ("eta",), sampling=sampling, eta=eta))


def ids(*, info_gain: str | None = None, gap_estimate: str = "difference", sampling: str = "full", delta=None,
        reg=1.0, radius=None, eta=1.0) -> Agent:
    """IDS for either model family: :func:`linear_ids` on linear models (``info_gain``
    ``"directed"`` by default, or ``"worst-case"``), :func:`finite_ids` on finite classes
    (``info_gain`` ``"variance"``, the only one there). The agent dispatches on the model it
    meets; the family-specific arguments are checked when it does."""
    linear_kw = dict(info_gain=info_gain or "directed", gap_estimate=gap_estimate, sampling=sampling, delta=delta,
                     reg=reg, radius=radius)
    linear_agent = finite_agent = None
    linear_err = finite_err = None
    try:
        linear_agent = linear_ids(**linear_kw)
    except ValueError as err:
        linear_err = err
    if info_gain not in (None, "variance"):
        finite_err = ValueError(f"info_gain on finite classes must be 'variance', got {info_gain!r}")
    else:
        try:
            finite_agent = finite_ids(sampling=sampling, eta=eta)
        except ValueError as err:
            finite_err = err
    if linear_agent is None and finite_agent is None:
        raise linear_err if str(linear_err) == str(finite_err) else ValueError(f"ids: {linear_err}; {finite_err}")

    def pick(model) -> Agent:
        family = family_of(model)
        agent, err = (linear_agent, linear_err) if family == "linear" else (finite_agent, finite_err)
        if agent is None:
            raise err
        return agent

    return Agent(
        init=lambda key, model: pick(model).init(key, model),
        act=lambda key, state, model: pick(model).act(key, state, model),
        update=lambda state, action, obs, model: pick(model).update(state, action, obs, model),
        config=ByFamily(tuple(sorted((family, agent.config) for family, agent in
                                     (("linear", linear_agent), ("finite", finite_agent)) if agent is not None))),
    )
