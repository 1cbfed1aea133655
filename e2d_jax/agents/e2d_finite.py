"""Agents for finite model classes: Anytime-E2D (Algorithm 1) and fixed-horizon E2D with the
exponential-weights estimator (Algorithm 2), and the linear UCB / TS
through a linear view of the class.

Anytime-E2D (:func:`anytime_e2d`), round t:

1. estimate f_hat_t from the EWA weights (a sample f ~ p_t by default, Algorithm 2 for a
   non-convex class; or the mixture sum_f p_t(f) f, with f_hat itself added to the max
   player's models, since a mixture is not in the class and the ac-DEC needs a model with
   zero information to be feasible: the max is then over M u {f_hat}, as in the lower bound
   of Foster et al. (2023, footnote in the paper));
2. compute Delta (or Delta_f) and I_{f_hat} (closed-form KL, ``e2d_jax.envs.finite``);
3. mu_t = the ac-DEC solution for eps_t^2 = c log|M| / t (Section 'Anytime-E2D', the paper's
   anytime choice for finite classes, c = ``eps2_scale`` = 1) by the certified branch-and-bound
   lambda search of ``e2d_jax.dec.finite``. The games of that search, min_mu max_g mu (Delta -
   lam I) e_g, depend on f_hat and lam but not on eps_t, and with a sampled f_hat they depend
   on which model was sampled only; so the default search remembers, per model of the class,
   the games it has solved (``solve_acdec_memory``, :data:`AGENT_SOLVER`): a model sampled
   before starts from its remembered games at the new eps_t (at most one refinement chunk of
   3 games a round), a model sampled for the first time from a 9-point grid over the proven
   range. The certificate covers every lam >= 0 either way. With the mixture estimate (no
   memory) the search is ``solve_acdec`` seeded by the last round's lam* (:data:`PLAIN_AGENT_SOLVER`,
   up to 16 games a round). ``lam_search="track"`` is a
   cheaper option (lam = 0 and 5 points around the previous round's lam*(mu), 6 games a
   round; the regret theorem of Section 3.2 allows any adapted lam_t) but it is a local
   search on a non-convex function, which can stay in the wrong basin when started far from
   the global minimiser, so it is not the default;
4. sample pi_t ~ mu_t; after the observation, EWA absorbs its log-likelihood.

Fixed-horizon E2D (:func:`fixed_horizon_e2d`): the same with the offset DEC at a fixed lam.
For a horizon n, the proof of the regret theorem of Section 3.2 with lam_t = lam and Est_n <= log|M|
(EWA) gives R_n <= n max_f dec^o_lam(f) + lam log|M|; :func:`lambda_tuning` minimises that
bound over a lam grid by computing max_f dec^o_lam(f) for the class (|M| x grid matrix
games). Given ``horizon``, the agent does this in ``init`` (traced). It depends on the model
only, but ``simulate`` gives every seed its own copy of the instance (for per-seed bits that
do not depend on the batch), so it is computed once per seed: |M| x 60 games, which on the
finite CLI classes costs about as much as a few hundred rounds. Pass ``lam=`` (e.g. from
:func:`lambda_tuning` on the concrete class) to skip it.

Non-finite solves: the round keeps the previous mu and reports Status.NONFINITE, as on
linear models. Defaults, names and info (:class:`~e2d_jax.types.E2DInfo`) are those of the
linear agents (gaps Delta_f, ``eps2_schedule``/``eps2_scale``, ``lam``/``lam_scale``,
``solver``); every numeric hyperparameter may be traced.

Baselines. :func:`posterior_sampling` is Thompson sampling on the finite class (sample
f ~ p_t with the EWA weights, which for eta = 1 are the exact Bayesian posterior; play
argmax_pi r_f(pi); :func:`e2d_jax.agents.ts.posterior_sampling`). The linear UCB and TS run on a class that carries a linear
view (the Gaussian bandit builders attach one: phi_pi = e_pi, the same observation maps), so
they use every observation the environment gives but not the finiteness of the class.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.agents import schedules
from e2d_jax.dec import finite as dec
from e2d_jax.dec import solvers as S
from e2d_jax.envs import finite
from e2d_jax.estimators import ewa
from e2d_jax.types import GAP_TYPES, Agent, AgentSpec, E2DInfo, Status, WarmStart

ESTIMATES = ("sample", "mixture")

#: The budget of a search without memory (``estimate="mixture"``, the ``"track"`` mode's first
#: search): one chunk of 8 games (lam = 0, the last round's lam* x {0.8, 1, 1.25} and 4
#: geometric points over the proven range; the plain 7-point grid when there is no previous
#: lam*), up to three branch-and-bound refinements of 8 games while the round is not certified
#: to 5% (interval bounds on 8 pieces that follow the optimal mixture), games solved to 1e-3
#: in at most 20 interior-point iterations. The per-round certified gap is reported in the
#: diagnostics, and a round whose gap is above 5% of its value is flagged (docs: Concepts,
#: 'Round statuses').
PLAIN_AGENT_SOLVER = S.LambdaSearch(inner=S.MatrixGameIPM(maxiter=20), rtol=0.05, inner_rtol=1e-3, lam_grid=7,
                                    lam_refine=8, lam_rounds=3, candidates=4, subdivide=8)

#: The default budget (a sampled f_hat, the global search): the search continues from the
#: games solved for the same model in earlier rounds (``dec.solve_acdec_memory``; the games do
#: not depend on eps_t), so a model seen before costs at most three refinement chunks of 3
#: games; a model sampled for the first time gets the 9-point grid (3 chunks) first. 16
#: refinement points per model are kept. Games and tolerance as above.
AGENT_SOLVER = PLAIN_AGENT_SOLVER.replace(lam_refine=3, memory=16)


def default_solver(estimate: str = "sample", lam_search: str = "global") -> S.LambdaSearch:
    """Anytime-E2D's default budget: :data:`AGENT_SOLVER` where the per-model memory applies
    (a sampled f_hat and the global search), else :data:`PLAIN_AGENT_SOLVER`."""
    return AGENT_SOLVER if estimate == "sample" and lam_search == "global" else PLAIN_AGENT_SOLVER


class E2DState(NamedTuple):
    ewa: ewa.EWAState  # the EWA weights
    mu: jax.Array  # (K,) float, the last sampling distribution
    omega: jax.Array  # (M or M+1,) float, the last max-player mixture (warm start)
    lam: jax.Array  # () float, the tracking centre (anytime, "track") or the fixed lam (E2D)
    # Anytime-E2D's global search with a sampled f_hat: the games solved for each model of the
    # class (a dec.LambdaMemory with a leading (M,) axis), or None.
    memory: dec.LambdaMemory | None = None


def check_finite_model(model, agent_name: str):
    """Raises a ValueError that says what to do when ``model`` is not a finite class."""
    if not isinstance(model, finite.FiniteModel):
        raise ValueError(f"model: e2d_jax.agents.e2d_finite.{agent_name} runs on finite classes, got a "
                         f"{type(model).__name__}; e2d_jax.{agent_name} dispatches on the model and runs on both "
                         "families")


def _check_common(gap_type, estimate, eta, solver, program):
    """Checks the shared arguments; returns the solver as a value (a name resolved)."""
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    if estimate not in ESTIMATES:
        raise ValueError(f"estimate must be one of {ESTIMATES}, got {estimate!r}")
    V.check_positive("eta", eta)
    return S.resolve(solver, "finite", program, gap_type)


def _matrices(key, state: E2DState, model: finite.FiniteModel, gap_type: str, estimate: str):
    """f_hat from EWA and the (K, M[+1]) gap and information matrices for it, and f_hat's
    index in the class (a sample; for the mixture, 0 and unused)."""
    rewards_hat, obs_hat, weights = ewa.estimate(key, state.ewa, model, convex=estimate == "mixture")
    if gap_type == "delta":
        g = finite.gap_matrix(model.rewards)
    else:
        g = finite.gap_matrix_f(model.rewards, rewards_hat)
    info = finite.info_matrix(model, obs_hat)
    if estimate == "mixture":
        # Add f_hat itself as a model of the max player (zero information, see module doc).
        own = jnp.max(rewards_hat) - rewards_hat
        g = jnp.concatenate([g, own[:, None]], axis=1)
        info = jnp.concatenate([info, jnp.zeros_like(own)[:, None]], axis=1)
    return g, info, jnp.argmax(weights).astype(jnp.int32)


def _init(model: finite.FiniteModel, estimate: str, memory_config: S.LambdaSearch | None = None):
    k, m = model.num_actions, model.num_models
    dtype = model.rewards.dtype
    width = m + 1 if estimate == "mixture" else m
    memory = None
    if memory_config is not None:
        one = dec.empty_memory(k, width, memory_config, dtype)
        memory = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (m,) + x.shape), one)
    return E2DState(ewa=ewa.init(m, dtype=dtype), mu=jnp.full((k,), 1.0 / k, dtype),
                    omega=jnp.full((width,), 1.0 / width, dtype), lam=jnp.zeros((), dtype), memory=memory)


def _update(eta):
    def update(state: E2DState, action, obs, model: finite.FiniteModel):
        ll = finite.log_likelihood(model, action, obs)
        return state._replace(ewa=ewa.update(state.ewa, ll, eta=eta))

    return update


def _play(key, state, res):
    """Samples from mu_t, or from the previous mu if the round is not finite; the status."""
    bad = ~jnp.all(jnp.isfinite(state.ewa.log_weights)) | ~jnp.all(jnp.isfinite(res.mu))
    status = jnp.where(bad, Status.NONFINITE, res.status).astype(jnp.int32)
    ok = status != Status.NONFINITE
    mu = jnp.where(ok, res.mu, state.mu)
    omega = jnp.where(ok, res.omega, state.omega)
    action = jax.random.categorical(key, jnp.log(jnp.maximum(mu, 0.0))).astype(jnp.int32)
    return action, status, mu, omega


LAMBDA_SEARCHES = ("global", "track")


def uses_memory(estimate: str, lam_search: str, solver: S.LambdaSearch) -> bool:
    """Whether Anytime-E2D keeps a :class:`~e2d_jax.dec.finite.LambdaMemory` per model: the
    global search with a sampled f_hat (whose matrices depend on the model only) and
    ``solver.memory > 0``."""
    return estimate == "sample" and lam_search == "global" and solver.memory > 0


def _warm_start(state: E2DState) -> WarmStart:
    # The last round's mixtures; the game solvers choose their step at every start.
    return WarmStart(state.mu, state.omega, jnp.zeros((), state.mu.dtype))


def memory_search(gaps, info, eps2, solver: S.LambdaSearch, state: E2DState, index):
    """One round's global lambda search continued from the games solved for model ``index``
    in earlier rounds (``dec.solve_acdec_memory``); returns the result and the new state's
    memory. The branch and bound covers every lam >= 0 as the plain search does, so a seed
    whose remembered points sit in one basin still refines another basin whose interval's
    bound is below the incumbent (the tests check the two-basin case)."""
    mem = jax.tree_util.tree_map(lambda x: x[index], state.memory)
    res, mem = dec.solve_acdec_memory(gaps, info, eps2, mem, solver, _warm_start(state))
    memory = jax.tree_util.tree_map(lambda all_, one: all_.at[index].set(one), state.memory, mem)
    return res, memory


def global_search(gaps, info, eps2, solver: S.LambdaSearch, state: E2DState):
    """One round's global lambda search: ``solve_acdec`` warm-started from the last round's
    mixtures, its first chunk seeded by the last round's lam* (``state.lam``; the posterior
    and f_hat move slowly). The coarse points over the whole proven range, lam = 0 and the
    branch and bound still cover every lam, so a seed in the wrong basin costs at most a
    coarser answer for a round (the tests check the two-basin case).
    Returns the result and the next round's seed."""
    res, _ = dec.solve_acdec(gaps, info, eps2, solver, _warm_start(state), lam_hint=state.lam)
    return res, res.lam.astype(state.lam.dtype)


def anytime_e2d(*, eps2_schedule="log-models", eps2_scale=1.0, gap_type: str = "delta_f", estimate: str = "sample",
                eta=1.0, lam_search: str = "global", solver=None) -> Agent:
    """Anytime-E2D (Algorithm 1) with EWA (Algorithm 2) on a finite class.

    Args:
      eps2_schedule: ``"log-models"`` (log|M| / t, the paper's) or a callable ``t -> eps_t^2``
        (see ``e2d_jax.agents.schedules``).
      eps2_scale: c > 0 in eps_t^2 = c * schedule(t) (may be traced).
      gap_type: ``"delta_f"`` (Delta_{f_hat}, as in the paper's experiments; default) or
        ``"delta"`` (Algorithm 1).
      estimate: ``"sample"`` (Algorithm 2 for a non-convex class) or ``"mixture"``.
      eta: EWA learning rate (1 in Algorithm 2; may be traced).
      lam_search: ``"global"`` (the certified branch-and-bound search of
        ``e2d_jax.dec.finite.solve_acdec`` every round; default) or ``"track"`` (lam = 0 and
        5 points around the previous round's lam*(mu), ``solve_acdec_tracking``: 6 games a
        round instead of up to 24; a local search, see the module docstring; its certified
        gap covers all lam and is large when it misses the global basin).
      solver: a :class:`~e2d_jax.dec.solvers.LambdaSearch` value or a name of
        :data:`e2d_jax.dec.solvers.SOLVERS` that solves the finite ac-DEC (default:
        :func:`default_solver`, i.e. :data:`AGENT_SOLVER` with its per-model memory for the
        default sampled f_hat and global search, :data:`PLAIN_AGENT_SOLVER` otherwise). A
        ``memory > 0`` is used only with a sampled f_hat and the global search.

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.E2DInfo`.

    References:
      Kirschner et al. (2023), Algorithm 1, Section 'Anytime-E2D', Appendix 'Online Density
      Estimation'.
    """
    if solver is None:
        solver = default_solver(estimate, lam_search)
    solver = _check_common(gap_type, estimate, eta, solver, "acdec")
    schedules.check_schedule(eps2_schedule, "finite")
    V.check_positive("eps2_scale", eps2_scale)
    if lam_search not in LAMBDA_SEARCHES:
        raise ValueError(f"lam_search must be one of {LAMBDA_SEARCHES}, got {lam_search!r}")

    def eps2_at(model, count, dtype):
        t = (count + 1).astype(dtype)
        return jnp.asarray(schedules.evaluate(eps2_schedule, eps2_scale, t, model), dtype)

    memory = uses_memory(estimate, lam_search, solver)

    def init(key, model):
        check_finite_model(model, "anytime_e2d")
        state = _init(model, estimate, solver if memory else None)
        if lam_search == "track":
            # The first centre from a global search for round 1's matrices, once per run (not
            # in `act`, where a branch on the round would run both sides under vmap); 1 if
            # that search gives lam = 0 (the usual case for eps_1^2 = log|M|).
            g, info, _ = _matrices(key, state, model, gap_type, estimate)
            res, _ = dec.solve_acdec(g, info, eps2_at(model, state.ewa.count, g.dtype), solver)
            state = state._replace(lam=jnp.where(res.lam > 0, res.lam, 1.0).astype(g.dtype))
        return state

    def act(key, state, model):
        key_est, key_pi = jax.random.split(key)
        g, info, index = _matrices(key_est, state, model, gap_type, estimate)
        eps2 = eps2_at(model, state.ewa.count, g.dtype)
        if memory:
            res, mem = memory_search(g, info, eps2, solver, state, index)
            state, centre = state._replace(memory=mem), res.lam.astype(state.lam.dtype)
        elif lam_search == "global":
            res, centre = global_search(g, info, eps2, solver, state)
        else:
            res, won = dec.solve_acdec_tracking(g, info, eps2, state.lam, solver)
            # The next centre is lam*(mu), the best lam for the mu just chosen (an alternating
            # minimisation of the joint objective, which leaves the local minimum that v has
            # at lam = 0 in many classes); else the grid point that won; else unchanged.
            centre = jnp.where(res.lam > 0, res.lam, jnp.where(won > 0, won, state.lam))
        action, status, mu, omega = _play(key_pi, state, res)
        info_out = E2DInfo(status=status, value=res.value, lam=res.lam, gap=res.gap,
                           iterations=res.iterations.astype(jnp.int32), eps2=eps2)
        return action, state._replace(mu=mu, omega=omega, lam=centre), info_out

    config = AgentSpec.of(anytime_e2d, ("eps2_scale", "eta"), eps2_schedule=eps2_schedule, eps2_scale=eps2_scale,
                          gap_type=gap_type, estimate=estimate, eta=eta, lam_search=lam_search, solver=solver)
    return Agent(init=init, act=act, update=_update(eta), config=config)


#: Fixed-horizon E2D's game solver (one game at a fixed lam a round): games certified to 1e-4 in
#: at most 20 interior-point iterations.
E2D_SOLVER = S.MatrixGameIPM(maxiter=20, rtol=1e-4)


def fixed_horizon_e2d(*, horizon: int | None = None, lam=None, lam_scale=1.0, gap_type: str = "delta_f",
                      estimate: str = "sample", eta=1.0, solver=E2D_SOLVER) -> Agent:
    """Fixed-horizon E2D: mu_t solves the offset DEC dec^o_lam(f_hat_t) for a fixed lam.

    Args:
      horizon: n, to tune lam = lam_scale * argmin_lam {n max_f dec^o_lam(f) + lam log|M|}
        for the class (:func:`lambda_tuning`, computed in ``init``).
      lam: lam >= 0 instead of ``horizon`` (may be traced).
      lam_scale: m > 0 multiplying lam (may be traced).
      gap_type: as in :func:`anytime_e2d`.
      estimate: see ``gap_type``.
      eta: see ``gap_type``.
      solver: the matrix-game solver: a :class:`~e2d_jax.dec.solvers.MatrixGameIPM` or
        :class:`~e2d_jax.dec.solvers.Saddle` value, or a name of :data:`e2d_jax.dec.solvers.SOLVERS`.

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.E2DInfo` (``eps2`` = 0).

    References:
      Foster et al. (2021), E2D; Kirschner et al. (2023), Section 'The Decision-Estimation
      Coefficient' (dec^o_lam).
    """
    solver = _check_common(gap_type, estimate, eta, solver, "offset")
    if (lam is None) == (horizon is None):
        raise ValueError("fixed_horizon_e2d needs exactly one of horizon (to tune lam for the class) or lam")
    if horizon is not None:
        horizon = V.check_int("horizon", horizon, minimum=1)
    else:
        V.check_positive("lam", lam, allow_zero=True)
    V.check_positive("lam_scale", lam_scale)

    def init(key, model):
        del key
        check_finite_model(model, "fixed_horizon_e2d")
        state = _init(model, estimate)
        dtype = model.rewards.dtype
        base = _tuning(model, horizon, gap_type, 60)[0] if lam is None else lam
        return state._replace(lam=jnp.asarray(base * lam_scale, dtype))

    def act(key, state, model):
        key_est, key_pi = jax.random.split(key)
        g, info, _ = _matrices(key_est, state, model, gap_type, estimate)
        res, _ = dec.solve_offset(g, info, state.lam, solver, _warm_start(state))
        action, status, mu, omega = _play(key_pi, state, res)
        info_out = E2DInfo(status=status, value=res.value, lam=res.lam, gap=res.gap,
                           iterations=res.iterations.astype(jnp.int32), eps2=jnp.zeros((), g.dtype))
        return action, state._replace(mu=mu, omega=omega), info_out

    config = AgentSpec.of(fixed_horizon_e2d, ("lam", "lam_scale", "eta"), horizon=horizon, lam=lam,
                          lam_scale=lam_scale, gap_type=gap_type, estimate=estimate, eta=eta, solver=solver)
    return Agent(init=init, act=act, update=_update(eta), config=config)


class LambdaTuning(NamedTuple):
    lam: float  # the chosen lambda
    bound: float  # n max_f dec^o_lam(f) + lam log|M| at the chosen lambda
    lams: np.ndarray  # (G,) the grid searched
    worst_dec: np.ndarray  # (G,) max_f dec^o_lam(f) on the grid


def _tuning(model: finite.FiniteModel, horizon: int, gap_type: str, num: int):
    """Traceable core of :func:`lambda_tuning`: (lam, bound, lams, worst_dec) as arrays."""
    k, m = model.num_actions, model.num_models
    dtype = model.rewards.dtype
    log_m = math.log(m)
    center = math.sqrt(horizon * k / log_m)
    lams = jnp.asarray(np.geomspace(1e-3 * center, 1e3 * center, num), dtype)
    config = S.SOLVERS["ipm"].replace(rtol=1e-6)

    def per_f(f):
        rewards_f, obs_f = finite.model_at(model, f)
        g = finite.gap_matrix(model.rewards) if gap_type == "delta" else finite.gap_matrix_f(model.rewards, rewards_f)
        info = finite.info_matrix(model, obs_f)
        return jax.vmap(lambda lam: dec.solve_offset(g, info, lam, config)[0].value)(lams)

    worst = jnp.max(jax.lax.map(per_f, jnp.arange(m)), axis=0)
    bound = horizon * worst + lams * log_m
    i = jnp.argmin(bound)
    return lams[i], bound[i], lams, worst


def lambda_tuning(model: finite.FiniteModel, horizon: int, *, gap_type: str = "delta_f", num: int = 60) -> LambdaTuning:
    """lam_n = argmin_lam { n max_{f in M} dec^o_lam(f) + lam log|M| } on a geometric grid.

    The bound is the fixed-horizon regret bound of E2D with EWA (Section 3.2's theorem with a
    constant lam and Est_n <= log|M|); max_f dec^o_lam(f) is computed for the class itself
    (one matrix game per model and grid point, certified to 1e-6). The grid spans
    [1e-3, 1e3] * sqrt(n K / log|M|), the Table 1 scale (dec^o_lam <= K / lam for bandits).

    Args:
      model: the class (concrete arrays).
      horizon: n >= 1.
      gap_type: ``"delta_f"`` (default, like the agents) or ``"delta"``.
      num: grid points.

    Returns:
      LambdaTuning (``lam``, ``bound``, the grid ``lams`` and ``worst_dec`` on it).
    """
    check_finite_model(model, "tune_lambda")
    horizon = V.check_int("horizon", horizon, minimum=1)
    num = V.check_int("num", num, minimum=2)
    if gap_type not in GAP_TYPES:
        raise ValueError(f"gap_type must be one of {GAP_TYPES}, got {gap_type!r}")
    lam, bound, lams, worst = jax.jit(_tuning, static_argnums=(1, 2, 3))(model, horizon, gap_type, num)
    return LambdaTuning(lam=float(lam), bound=float(bound), lams=np.asarray(lams, np.float64),
                        worst_dec=np.asarray(worst, np.float64))
