"""Every solver value on every program it supports, run through ``solver.solve(problem)``, against
an independent reference; and the certified loop that runs them (:mod:`e2d_jax.dec.loop`).

References: cvxpy (Clarabel) for the linear offset DEC, its minimum over a lambda grid for the
linear ac-DEC, and HiGHS linear programs for the finite programs (``tests/helpers/reference.py``).
Each answer is checked three ways: its certificate brackets the reference (lower <= reference,
and value >= the offset programs' exact optimum), its value is the objective of its mu
evaluated independently in NumPy, and an OK status means the value is within the tolerance of
the reference.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import e2d_jax as e2d
from e2d_jax.dec import finite as F
from e2d_jax.dec import linear as L
from e2d_jax.dec import loop
from e2d_jax.dec import solvers as S
from e2d_jax.types import Status
from e2d_jax.types import WarmStart
from reference import acdec_lp_grid, game_value_lp, linear_acdec_reference, linear_offset_cvx

EPS2, LAM = 0.1, 2.0
#: cvxpy's optimum is F at Clarabel's answer, suboptimal by up to ~1e-6 relative
#: (test_interior_point.py); the grid references of the ac-DEC are upper bounds as tight as their
#: grids (acdec_lp_grid, linear_acdec_reference), within 1e-4 of the optimum on these problems.
SLACK = {"offset": 1e-6, "acdec": 1e-4}


@functools.cache
def _linear():
    params = e2d.semi_bandit(e2d.instance_key(3), 2, 4, dtype=jnp.float64)
    f_hat = np.asarray(params.theta) + 0.3 * np.random.default_rng(0).normal(size=2)
    return params.model, f_hat


@functools.cache
def _finite(gap_type="delta_f"):
    params = e2d.revealing_class(e2d.instance_key(3), 4, 6, gain=3.0, dtype=jnp.float64)
    gaps, info = F.matrices(params.model, 1, gap_type)
    return np.asarray(gaps), np.asarray(info)


def _problem(family, program, gap_type):
    if family == "linear":
        model, f_hat = _linear()
        span = model.span
        f_r = jnp.asarray(f_hat) @ span.basis
        return L.LinearAcdec(span, f_r, EPS2, gap_type) if program == "acdec" else L.LinearOffset(span, f_r, LAM, gap_type)
    gaps, info = _finite(gap_type)
    problem = F.FiniteAcdec if program == "acdec" else F.FiniteOffset
    return problem(jnp.asarray(gaps), jnp.asarray(info), EPS2 if program == "acdec" else LAM, gap_type)


@functools.cache
def _reference(family, program, gap_type):
    problem = _problem(family, program, gap_type)
    if family == "linear":
        model, f_hat = _linear()
        feats, grams = np.asarray(model.features), np.asarray(model.grams)
        if program == "offset":
            return linear_offset_cvx(feats, grams, f_hat, LAM, gap_type)[0]
        return linear_acdec_reference(feats, grams, f_hat, EPS2, gap_type=gap_type)[0]
    gaps, info = np.asarray(problem.gaps), np.asarray(problem.info)
    if program == "offset":
        return game_value_lp(gaps - LAM * info)[0]
    return acdec_lp_grid(gaps, info, EPS2)[0]


def _objective(family, program, gap_type, mu, lam):
    """The objective of (mu, lam) evaluated in NumPy (pseudo-inverses, the original coordinates)."""
    problem = _problem(family, program, gap_type)
    mu = np.asarray(mu, np.float64)
    if family == "linear":
        model, f_hat = _linear()
        feats, grams = np.asarray(model.features), np.asarray(model.grams)
        x = feats if gap_type == "delta_f" else feats - mu @ feats
        c = np.einsum("bi,ij,bj->b", x, np.linalg.pinv(np.einsum("k,kij->ij", mu, grams)), x)
        r = feats @ f_hat
        lam = LAM if program == "offset" else float(lam)
        return float(np.max(r - mu @ r + c / (4 * lam)) + (lam * EPS2 if program == "acdec" else 0.0))
    gaps, info = np.asarray(problem.gaps), np.asarray(problem.info)
    lam = LAM if program == "offset" else float(lam)
    return float(np.max(mu @ (gaps - lam * info)) + (lam * EPS2 if program == "acdec" else 0.0))


#: Each solver class at a budget that certifies these problems, with its inner solvers where it
#: has them; every (family, program, gap type) it declares.
SOLVERS = {
    "Saddle": S.Saddle(maxiter=20_000, rtol=1e-6),
    "FrankWolfeGrid": S.FrankWolfeGrid(maxiter=4000, rtol=1e-3, lam_grid=20, lam_refine=6),
    "SaddleGrid": S.SaddleGrid(maxiter=4000, rtol=1e-5, lam_grid=20, lam_refine=6),
    "InteriorPoint": S.InteriorPoint(maxiter=40, rtol=1e-8),
    "MatrixGameIPM": S.MatrixGameIPM(),
    "LambdaSearch": S.LambdaSearch(atol=1e-9),
    "LambdaSearch(inner=Saddle)": S.LambdaSearch(inner=S.Saddle(maxiter=20_000), atol=1e-9),
    # Not a certified solve: the generic checks (a valid lower bound, an honest value) still hold.
    "SubgradientGrid": S.SubgradientGrid(maxiter=60, lam_grid=20),
}
CASES = [(name, family, program, gap)
         for name, solver in SOLVERS.items()
         for (family, program), gaps in solver.SUPPORTS.items() for gap in gaps
         if not (name == "LambdaSearch(inner=Saddle)" and family == "linear" and gap == "delta")]
#: The default run has each solver on each of its programs with the first gap type it declares
#: there; the other gap types run under -m slow (the defaults meet both below).
_FIRST_GAP = {}
for _name, _family, _program, _gap in CASES:
    _FIRST_GAP.setdefault((_name, _family, _program), _gap)
PARAMS = [pytest.param(*case, id="-".join(case),
                       marks=() if _FIRST_GAP[case[:3]] == case[3] else pytest.mark.slow) for case in CASES]


@pytest.mark.parametrize("name, family, program, gap_type", PARAMS)
def test_each_solver_on_each_of_its_programs(name, family, program, gap_type):
    solver = SOLVERS[name]
    problem = _problem(family, program, gap_type)
    result, carry = jax.jit(lambda p: solver.solve(p))(problem)
    ref = _reference(family, program, gap_type)
    value, lower = float(result.value), float(result.lower_bound)
    assert Status(int(result.status)) in (Status.OK, Status.MAX_ITER), result
    # The certificate: a lower bound below the optimum (the references are at or above it).
    assert lower <= ref + SLACK[program] * abs(ref) + 1e-12, (lower, ref)
    if program == "offset":  # the reference is the optimum: the value is above it
        assert value >= ref - SLACK[program] * abs(ref) - 1e-12, (value, ref)
    # The value is the objective of the returned (lam, mu), honestly evaluated.
    np.testing.assert_allclose(value, _objective(family, program, gap_type, result.mu, result.lam), rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(float(result.gap), value - lower, rtol=0, atol=1e-15)
    if int(result.status) == Status.OK:
        assert value - lower <= solver.rtol * abs(value) + solver.atol + 1e-12
        assert value <= ref + solver.rtol * abs(value) + SLACK[program] * abs(ref) + 1e-9, (value, ref)
    assert np.all(np.asarray(result.mu) >= 0) and abs(float(np.sum(result.mu)) - 1) < 1e-9
    assert isinstance(carry, WarmStart)


def test_the_default_solvers_certify_these_problems():
    """Every default (the DEC functions') certifies each program to its tolerance."""
    for family in ("linear", "finite"):
        for program in ("acdec", "offset"):
            for gap_type in ("delta_f", "delta"):
                solver = S.default_solver(family, program, gap_type)
                result, _ = solver.solve(_problem(family, program, gap_type))
                assert int(result.status) == Status.OK, (family, program, gap_type, solver, result)


def test_a_non_finite_problem_is_a_status_for_every_solver():
    """NaN data: each solver's answer says NONFINITE (one place sets it), nothing raises (each
    solver on the first program it declares)."""
    first = {name: case for name, *case in reversed(CASES)}
    for name, (family, program, gap_type) in first.items():
        problem = _problem(family, program, gap_type)
        if family == "linear":
            problem = type(problem)(problem.span, problem.f_hat * jnp.nan, *(
                (problem.eps2,) if program == "acdec" else (problem.lam,)), gap_type)
        else:
            problem = type(problem)(problem.gaps * jnp.nan, problem.info, *(
                (problem.eps2,) if program == "acdec" else (problem.lam,)), gap_type)
        result, _ = SOLVERS[name].replace(**({"maxiter": 50} if hasattr(SOLVERS[name], "maxiter") else {})).solve(
            problem)
        assert int(result.status) == Status.NONFINITE, (name, family, program, gap_type, result)


# --------------------------------------------------------------------------------------
# The loop


def _counting_step(state):
    return {"x": state["x"] * 0.5, "k": state["k"] + 1}


@pytest.mark.parametrize("early_stop", [True, False])
def test_the_loop_stops_at_the_tolerance_and_freezes_finished_problems(early_stop):
    """x halves each step; done once x <= 1/8 (3 steps from 1, 5 from 4): under vmap each
    problem stops at its own step, whether the loop stops early or runs its budget."""
    run = jax.vmap(lambda x0: loop.run(_counting_step, {"x": x0, "k": jnp.zeros((), jnp.int32)}, steps=10,
                                       done=lambda s: s["x"] <= 0.125, early_stop=early_stop))
    out = run(jnp.asarray([1.0, 4.0, 0.1]))
    np.testing.assert_array_equal(out["k"], [3, 5, 0])
    np.testing.assert_array_equal(out["x"], [0.125, 0.125, 0.1])


def test_the_loop_runs_its_first_steps_and_reads_a_count_from_the_state():
    state = {"x": jnp.asarray(0.1), "k": jnp.zeros((), jnp.int32)}
    done = lambda s: s["x"] <= 0.125  # noqa: E731 - already done at the start
    assert int(loop.run(_counting_step, state, steps=10, done=done, min_steps=2)["k"]) == 2
    # Unrolled: a budget that always runs in full.
    assert int(loop.run(_counting_step, state, steps=2, done=done, min_steps=2)["k"]) == 2
    # Counted by the state: one that starts at step 9 of 10 takes one step at most.
    later = {"x": jnp.asarray(4.0), "k": jnp.asarray(9, jnp.int32)}
    assert int(loop.run(_counting_step, later, steps=10, done=done, count=lambda s: s["k"])["k"]) == 10
    halted = loop.run(_counting_step, {"x": jnp.asarray(4.0), "k": jnp.zeros((), jnp.int32)}, steps=10,
                      done=done, halted=lambda s: s["k"] >= 1)
    assert int(halted["k"]) == 1


def test_a_loop_start_marked_as_batched_keeps_its_values_and_is_batched_under_vmap():
    """``batched_with`` returns the same values (NaN and infinities included, whatever the
    reference holds), leaves what is not an array alone, and under vmap the marked arrays are
    batched: a constant start is not, so ``out_axes=None`` accepts it and refuses the marked one."""
    start = {"k": jnp.zeros((), jnp.int32), "up": jnp.full((), jnp.inf), "p": jnp.asarray([0.5, jnp.nan, 0.5]),
             "static": 3}
    for ref in (jnp.asarray([0.0, 1.0]), jnp.asarray(jnp.nan), jnp.asarray(True)):
        out = loop.batched_with(ref, start)
        assert out["static"] == 3
        for name in ("k", "up", "p"):
            np.testing.assert_array_equal(out[name], start[name])
            assert out[name].dtype == start[name].dtype
    refs = jnp.asarray([1.0, 2.0])
    constant = jax.vmap(lambda r: start["p"], out_axes=None)(refs)
    np.testing.assert_array_equal(constant, start["p"])
    with pytest.raises(ValueError):
        jax.vmap(lambda r: loop.batched_with(r, start["p"]), out_axes=None)(refs)


def test_status_is_set_from_the_certificate():
    answer = loop.Answer(mu=jnp.asarray([0.5, 0.5]), omega=jnp.asarray([1.0]), lam=jnp.asarray(1.0),
                         value=jnp.asarray(1.0), lower=jnp.asarray(0.9995), iterations=jnp.asarray(3), carry=None)
    assert int(loop.status(answer, 1e-3, 0.0)) == Status.OK
    assert int(loop.status(answer._replace(lower=jnp.asarray(0.99)), 1e-3, 0.0)) == Status.MAX_ITER
    assert int(loop.status(answer._replace(mu=jnp.asarray([jnp.nan, 1.0])), 1e-3, 0.0)) == Status.NONFINITE
    assert int(loop.status(answer._replace(finite=jnp.asarray(False)), 1e-3, 0.0)) == Status.NONFINITE


def test_a_solve_continued_from_a_known_answer_keeps_the_better_bounds():
    """``loop.solve(..., known=...)`` under vmap on two copies of one program: where the known
    answer is certified the result is that answer, untouched and with no further iterations;
    where it is not (250 mirror-prox steps) the interior-point steps continue, and the result
    has the better of both bounds, its value the objective of its mu, certified, the
    iterations of both."""
    problem = _problem("linear", "offset", "delta_f")
    ref = _reference("linear", "offset", "delta_f")
    solver = S.InteriorPoint(maxiter=40, rtol=1e-8)
    good, good_carry = solver.solve(problem)
    weak, weak_carry = S.Saddle(maxiter=250, rtol=1e-8, check_every=250).solve(problem)
    assert int(good.status) == Status.OK and int(weak.status) == Status.MAX_ITER
    both = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), (good, good_carry), (weak, weak_carry))
    out, _ = jax.vmap(lambda known: loop.solve(solver, problem, known=known))(both)
    for field in ("mu", "omega", "value", "lower_bound", "iterations", "status"):
        np.testing.assert_array_equal(np.asarray(getattr(out, field))[0], np.asarray(getattr(good, field)))
    cont = jax.tree_util.tree_map(lambda x: x[1], out)
    assert int(cont.status) == Status.OK
    assert float(cont.value) <= float(weak.value) and float(cont.lower_bound) >= float(weak.lower_bound)
    assert float(cont.lower_bound) <= ref * (1 + SLACK["offset"]) and float(cont.value) >= ref * (1 - SLACK["offset"])
    assert abs(float(cont.value) - _objective("linear", "offset", "delta_f", cont.mu, LAM)) <= 1e-9 * abs(ref)
    assert int(cont.iterations) > int(weak.iterations)


# --------------------------------------------------------------------------------------
# The authors' solve


def _authors_update(features, obs, theta_hat, mu, t, d, steps, points):
    """The authors' ``E2D.update_mu`` (kirschnj/pm-ids, branch e2d; ``anytime_lambda``, gaps
    Delta_f) transcribed in NumPy in their own coordinates: ``points`` lambdas in (0, sqrt(t)],
    eps^2 = d / t, per lambda ``steps + 1`` passes of arg-max Frank-Wolfe with step 1 / (t + i + 2)
    whose objective is read before the last step."""
    k = features.shape[0]
    lambdas = np.linspace(0.0, np.sqrt(t), points + 1)[1:]
    grams = np.einsum("kmi,kmj->kij", obs, obs)
    objs, mus = [], []
    for lam in lambdas:
        m = mu.copy()
        for i in range(1, steps + 2):
            v = np.einsum("k,kij->ij", m, grams)
            alt = np.linalg.solve(v, features.T).T / (2 * lam) + theta_hat
            dec = (np.sum(alt * features, axis=1) - (features.T @ m) @ theta_hat
                   - lam * np.einsum("ki,ij,kj->k", alt - theta_hat, v, alt - theta_hat))
            b = np.argmax(dec)
            grad = -features @ theta_hat - lam * np.sum((obs @ (alt[b] - theta_hat)) ** 2, axis=1)
            final_obj, final_mu = dec[b], m
            rate = 1.0 / (t + i + 2)
            m = (1 - rate) * m + rate * np.eye(k)[np.argmin(grad)]
        objs.append(final_obj + lam * d / t)
        mus.append(final_mu)
    j = int(np.argmin(objs))
    return mus[j], lambdas[j], objs[j]


@pytest.mark.parametrize("t", [1.0, 6.0, 40.0])
def test_the_authors_solve_is_their_frank_wolfe_on_their_grid(t):
    """``SubgradientGrid`` (``solver="authors"``) on a duelling game (16 pair actions, observed
    reward differences only) returns the distribution, lambda and objective of the authors'
    update, transcribed independently in NumPy, to rounding; its lower bound stays below the
    certified optimum."""
    from e2d_jax.envs import dueling

    rng = np.random.default_rng(5)
    model = dueling.from_base_arms(rng.normal(size=(4, 3)), dtype=jnp.float64).model
    features, obs = np.asarray(model.features), np.asarray(model.obs_matrices)
    theta_hat = 0.5 * rng.normal(size=3)
    mu = rng.dirichlet(np.ones(16))
    solver = S.SubgradientGrid(maxiter=12, lam_grid=7)
    res = e2d.linear_acdec(model, jnp.asarray(theta_hat), 3.0 / t, solver=solver, mu0=jnp.asarray(mu))
    mu_ref, lam_ref, value_ref = _authors_update(features, obs, theta_hat, mu, t, 3, 12, 7)
    np.testing.assert_allclose(np.asarray(res.mu), mu_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(float(res.lam), lam_ref, rtol=1e-12)
    np.testing.assert_allclose(float(res.value), value_ref, rtol=1e-10)
    optimum = e2d.linear_acdec(model, jnp.asarray(theta_hat), 3.0 / t, rtol=1e-6, maxiter=20_000)
    assert int(optimum.status) == Status.OK
    assert float(res.lower_bound) <= float(optimum.value) + 1e-9
    assert float(res.value) >= float(optimum.lower_bound) - 1e-9


def test_the_authors_solve_is_refused_for_gaps_delta():
    with pytest.raises(ValueError, match="solver: SubgradientGrid does not solve .* gap_type='delta'"):
        S.resolve("authors", "linear", "acdec", "delta")


# --------------------------------------------------------------------------------------
# Warm starts


def test_a_warm_start_is_mixed_with_the_uniform_mixture_by_warm_mix():
    """``Saddle(warm_mix=a)`` from a warm start is ``Saddle()`` from the start mixed with a of
    the uniform mixture (on mu and omega alike), and ``warm_mix=1`` is the cold start."""
    problem = _problem("linear", "acdec", "delta_f")
    k = problem.span.features.shape[0]
    rng = np.random.default_rng(2)
    mu, om = rng.dirichlet(np.full(k, 0.3)), rng.dirichlet(np.full(k, 0.3))
    warm = WarmStart(jnp.asarray(mu), jnp.asarray(om), jnp.zeros(()))
    base = S.Saddle(maxiter=30, check_every=10)
    mixed = base.replace(warm_mix=0.25).solve(problem, warm)[0]
    by_hand = base.solve(problem, WarmStart(jnp.asarray(0.75 * mu + 0.25 / k), jnp.asarray(0.75 * om + 0.25 / k),
                                            jnp.zeros(())))[0]
    np.testing.assert_allclose(np.asarray(mixed.mu), np.asarray(by_hand.mu), rtol=0, atol=1e-14)
    assert float(mixed.value) == pytest.approx(float(by_hand.value), rel=1e-14)
    assert not np.allclose(np.asarray(mixed.mu), np.asarray(base.solve(problem, warm)[0].mu), atol=1e-6)
    cold = base.replace(warm_mix=1.0).solve(problem, warm)[0]
    np.testing.assert_allclose(np.asarray(cold.mu), np.asarray(base.solve(problem, None)[0].mu), rtol=0, atol=1e-14)


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_warm_mix_outside_zero_one_is_refused_by_name(value):
    with pytest.raises(ValueError, match="warm_mix"):
        S.Saddle(warm_mix=value)


def test_a_warm_start_away_from_the_optimum_certifies_sooner_with_the_mixture():
    """On 100 actions (linear bandit, d = 10), the anytime agent's budget started from a
    mixture concentrated on actions the optimum does not use: with 10% of the uniform
    mixture mixed in, the round certifies to 5% within its 200 steps; the pure warm start,
    whose other actions sit at the floor, does not."""
    params = e2d.linear_bandit(e2d.instance_key(0), 10, 100, dtype=jnp.float64)
    span = params.model.span
    f_r = jnp.asarray(params.theta) @ span.basis
    problem = L.LinearAcdec(span, f_r, 10.0 / 5.0, "delta_f")
    optimum = S.Saddle(maxiter=20_000, rtol=1e-6).solve(problem, None)[0]
    away = np.where(np.asarray(optimum.mu) < 1e-4, 1.0, 0.0)  # the actions the optimum leaves out
    warm = WarmStart(jnp.asarray(away / away.sum()), jnp.asarray(away / away.sum()), jnp.zeros(()))
    pure = S.TRACKING.replace(warm_mix=0.0, exchange=False).solve(problem, warm)[0]
    mixed = S.TRACKING.replace(exchange=False).solve(problem, warm)[0]
    assert int(mixed.status) == Status.OK and int(pure.status) == Status.MAX_ITER
    assert float(mixed.lower_bound) <= float(optimum.value) * (1 + 1e-9)


@pytest.mark.parametrize("seed", [pytest.param(0, marks=pytest.mark.slow), 2])
def test_the_exchange_line_search_certifies_a_moved_optimum_sooner(seed):
    """A semi-bandit (d = 10, K = 100) warm-started at its optimum with the heaviest action's
    mass moved onto an action the optimum barely uses: with the line search toward the best
    response after each certificate, the tracking budget certifies to 5% in fewer steps than
    without, and both answers' bounds bracket the optimum."""
    params = e2d.semi_bandit(e2d.instance_key(seed), 10, 100, dtype=jnp.float64)
    span = params.model.span
    f_r = (jnp.asarray(params.theta) + 0.3 * jax.random.normal(jax.random.PRNGKey(seed), (10,), jnp.float64)) @ span.basis
    problem = L.LinearAcdec(span, f_r, 10.0 / 8.0, "delta_f")
    optimum = S.Saddle(maxiter=20_000, rtol=1e-6).solve(problem, None)[0]
    mu = np.asarray(optimum.mu).copy()
    top, other = np.argsort(-mu)[[0, 5]]
    mu[other] += mu[top] - 1e-3
    mu[top] = 1e-3
    warm = WarmStart(jnp.asarray(mu), optimum.omega, jnp.zeros(()))
    plain = S.TRACKING.replace(exchange=False).solve(problem, warm)[0]
    exchanged = S.TRACKING.replace(exchange=True).solve(problem, warm)[0]
    assert int(plain.status) == int(exchanged.status) == Status.OK
    assert int(exchanged.iterations) < int(plain.iterations)
    for res in (plain, exchanged):
        assert float(res.lower_bound) <= float(optimum.value) + 1e-6 * abs(float(optimum.value))
        assert float(res.value) >= float(optimum.lower_bound) - 1e-6 * abs(float(optimum.value))


def test_exchange_by_default_only_above_its_action_count():
    """``exchange=None`` is the plain method up to ``EXCHANGE_MIN_ACTIONS`` actions (the same
    bits) and the line search above it."""
    assert not S.Saddle().exchanges(S.EXCHANGE_MIN_ACTIONS) and S.Saddle().exchanges(S.EXCHANGE_MIN_ACTIONS + 1)
    assert S.Saddle(exchange=True).exchanges(2) and not S.Saddle(exchange=False).exchanges(10_000)
    problem = _problem("linear", "acdec", "delta_f")
    assert problem.span.features.shape[0] <= S.EXCHANGE_MIN_ACTIONS
    default = S.TRACKING.solve(problem, None)[0]
    plain = S.TRACKING.replace(exchange=False).solve(problem, None)[0]
    np.testing.assert_array_equal(np.asarray(default.mu), np.asarray(plain.mu))
    assert float(default.value) == float(plain.value)


@pytest.mark.parametrize("value", [1, "yes", 0.5])
def test_exchange_other_than_a_bool_or_none_is_refused_by_name(value):
    with pytest.raises(ValueError, match="exchange"):
        S.Saddle(exchange=value)


# --------------------------------------------------------------------------------------
# Working sets


@functools.cache
def _many(env: str, k: int, d: int):
    params = getattr(e2d, env)(e2d.instance_key(4), d, k, dtype=jnp.float64)
    span = params.model.span
    f_r = (jnp.asarray(params.theta) + 0.5 * jax.random.normal(jax.random.PRNGKey(1), (d,), jnp.float64)) @ span.basis
    return L.LinearAcdec(span, f_r, 10.0 / 8.0, "delta_f")


@pytest.mark.parametrize("env", [pytest.param("linear_bandit", marks=pytest.mark.slow), "semi_bandit"])
def test_the_screen_of_a_working_set_is_the_certificate_of_its_mixtures(env):
    """The working set's screen of mixtures held on m of the K actions returns the certificate of
    the same mixtures over all K (upper, lower, lambda, psi), the min player's gradient at them,
    and a best response of the max player that attains the upper value."""
    problem = _many(env, 60, 4)
    form = problem.saddle_form()
    k = problem.span.features.shape[0]
    rng = np.random.default_rng(5)
    active = jnp.asarray(rng.choice(k, 16, replace=False))
    mu_w, om_w = jnp.asarray(rng.dirichlet(np.ones(16))), jnp.asarray(rng.dirichlet(np.ones(16)))
    mu, om = (jnp.zeros(k, jnp.float64).at[active].set(x) for x in (mu_w, om_w))
    up, lo, lam, psi, g, om_star = form.screen(active, mu_w, om_w)
    for got, want in zip((up, lo, lam, psi), form.certificate(mu, om)):
        assert float(got) == pytest.approx(float(want), rel=1e-10)
    np.testing.assert_allclose(np.asarray(g), np.asarray(form.grads(mu, om)[0]), rtol=1e-10, atol=1e-12)
    c, _ = L.feature_norms(mu, problem.span)
    a = problem.rewards() - mu @ problem.rewards()
    eps = np.sqrt(problem.eps2)
    assert float(jnp.sum(om_star)) == pytest.approx(1.0) and int(jnp.sum(om_star > 0)) <= 2
    assert float(om_star @ a + eps * jnp.sqrt(om_star @ c)) == pytest.approx(float(up), rel=1e-10)
    whole = form.screen(None, mu, om)
    for got, want in zip(whole[:4], (up, lo, lam, psi)):
        assert float(got) == pytest.approx(float(want), rel=1e-10)


def test_mirror_prox_on_a_working_set_brackets_the_optimum_of_all_actions():
    """On 300 actions (linear bandit, d = 3) mirror-prox on a working set of 96 of them: its
    certified interval and that of mirror-prox on every action overlap, its value is the
    honestly evaluated objective of its mixture over all 300 actions, and it meets the
    tolerance."""
    problem = _many("linear_bandit", 300, 3)
    solver = S.Saddle(maxiter=4000, rtol=1e-4, working_set=96)
    assert solver.set_size(300, 3) == 96
    ws = solver.solve(problem, None)[0]
    plain = solver.replace(working_set=300).solve(problem, None)[0]
    assert int(ws.status) == int(plain.status) == Status.OK
    assert float(ws.lower_bound) <= float(plain.value) * (1 + 1e-9)
    assert float(plain.lower_bound) <= float(ws.value) * (1 + 1e-9)
    value, lam = L.exact_value(ws.mu, problem.span, problem.f_hat, problem.eps2)
    assert float(ws.value) == pytest.approx(float(value), rel=1e-9)
    assert float(jnp.sum(ws.mu)) == pytest.approx(1.0) and float(jnp.min(ws.mu)) >= 0.0


def test_a_working_set_takes_in_the_actions_a_warm_start_leaves_out():
    """The anytime agent's budget on a working set of 64 of 300 actions (linear bandit, d = 3),
    warm-started on the 100 actions nearest a plane (which explore its normal poorly: the warm
    start's objective is more than 5% above the optimum): the round certifies to 5%, with a
    fifth of its mass or more on the actions the warm start left out, its bounds bracketing
    the optimum."""
    problem = _many("linear_bandit", 300, 3)
    optimum = S.Saddle(maxiter=20_000, rtol=1e-6, working_set=300).solve(problem, None)[0]
    low = np.argsort(np.abs(np.asarray(problem.span.features[:, 2])))[:100]
    start = np.zeros(300)
    start[low] = 1.0 / 100
    assert float(L.exact_value(jnp.asarray(start), problem.span, problem.f_hat, problem.eps2)[0]) \
        > 1.05 * float(optimum.value)
    warm = WarmStart(jnp.asarray(start), jnp.asarray(start), jnp.zeros(()))
    res = S.TRACKING.replace(working_set=64).solve(problem, warm)[0]
    assert int(res.status) == Status.OK
    assert float(res.lower_bound) <= float(optimum.value) * (1 + 1e-9)
    assert float(res.value) >= float(optimum.lower_bound) * (1 - 1e-9)
    assert float(jnp.sum(res.mu[low])) < 0.8


def test_the_default_working_set_grows_like_the_root_of_the_actions():
    assert S.working_set_size(S.WORKING_SET_MIN_ACTIONS, 3) == S.WORKING_SET_MIN_ACTIONS
    for k, r in [(1000, 3), (1000, 10), (10_000, 10), (10_000, 30), (100_000, 5)]:
        m = S.working_set_size(k, r)
        floor = max(S.WORKING_SET_PER_ROOT * np.sqrt(k), S.WORKING_SET_PER_DIMENSION * r, r * (r + 1) // 2 + 2)
        assert m % 32 == 0 and floor <= m < floor + 32 and S.WORKING_SET_SHARE * m <= k
    # Where the optimum's support bound makes the set more than a quarter of the actions, none.
    assert S.working_set_size(1000, 30) == 1000 and S.working_set_size(300, 3) == 300
    assert S.Saddle(working_set=50).set_size(1000, 10) == 50 and S.Saddle(working_set=5000).set_size(1000, 10) == 1000


@pytest.mark.parametrize("value", [1, 0, 2.5, "many"])
def test_a_working_set_of_fewer_than_two_actions_is_refused_by_name(value):
    with pytest.raises(ValueError, match="working_set"):
        S.Saddle(working_set=value)
