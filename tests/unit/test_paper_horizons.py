"""The long-horizon reproduction (:mod:`e2d_jax.paper.horizons`): the growth exponent on
synthetic curves whose exponent is known, and the preset's agents, environments, horizons and
recorded rounds."""
import numpy as np
import pytest

from e2d_jax import _checks as V
from e2d_jax.agents.e2d_linear import horizon_lambda
from e2d_jax.dec import solvers as S
from e2d_jax.experiments import registry
from e2d_jax.experiments.spec import plan
from e2d_jax.paper import horizons, presets
from e2d_jax.sim.rollout import record_rounds


def _rounds(n: int) -> np.ndarray:
    return record_rounds(n, max(1, n // horizons.RECORDED)).astype(np.float64)


@pytest.mark.parametrize("a", [0.0, 0.3, 0.5, 1.0])
def test_a_power_law_has_its_exponent(a):
    """R = c n^a, each run with its own c: the mean curve is mean(c) n^a, whose log-log slope is
    a on any window and in every resample (the CI collapses onto a)."""
    t = _rounds(100_000)
    c = np.random.default_rng(0).lognormal(size=(64, 1))
    e = horizons.growth_exponent(t, c * t ** a)
    assert e.slope == pytest.approx(a, abs=1e-9)
    assert e.lo == pytest.approx(a, abs=1e-9) and e.hi == pytest.approx(a, abs=1e-9)
    assert (e.first, e.last, e.points) == (10_000, 100_000, 451)


def test_logarithmic_regret_has_exponent_one_over_log_n():
    """R = c log n: d log R / d log n = 1 / log n, between 1/log(n) and 1/log(n/10) on the window."""
    t = _rounds(100_000)
    e = horizons.growth_exponent(t, 3.0 * np.log(t)[None])
    assert 1 / np.log(1e5) < e.slope < 1 / np.log(1e4)


def _poisson_curves(rng, t, a, runs, scale=20.0):
    """Runs whose regret is a Poisson process with mean c_s scale t^a, c_s ~ Gamma(4, 1/4) (mean
    1): E R(t) = scale t^a exactly, with the seed-to-seed spread of real regret curves."""
    lam = scale * t ** a
    rate = rng.gamma(4.0, 0.25, size=(runs, 1))
    steps = rng.poisson(rate * np.diff(lam, prepend=0.0))
    return np.cumsum(steps, axis=1).astype(np.float64)


def test_the_bootstrap_interval_covers_the_exponent():
    """Over 100 independent sets of 64 noisy runs with E R = 20 n^0.5, the 95% interval covers
    0.5 on at least 88 (binomial: 95 expected, 88 is about three standard deviations below), and
    the estimate is unbiased to within its spread."""
    rng = np.random.default_rng(1)
    t = _rounds(100_000)
    out = [horizons.growth_exponent(t, _poisson_curves(rng, t, 0.5, 64), boot=1000, seed=i) for i in range(100)]
    slopes = np.array([e.slope for e in out])
    covered = np.mean([e.lo <= 0.5 <= e.hi for e in out])
    assert covered >= 0.88
    assert abs(slopes.mean() - 0.5) < 2 * slopes.std() / np.sqrt(slopes.size) + 1e-3
    widths = np.array([e.hi - e.lo for e in out])
    assert np.all(widths > 0) and np.median(widths) < 0.05


def test_groups_resample_within_each_instance():
    """Two instances at very different levels: resampled within each, the interval still
    covers the common exponent, and a groups array of the wrong length is refused."""
    rng = np.random.default_rng(2)
    t = _rounds(20_000)
    runs = np.concatenate([_poisson_curves(rng, t, 0.7, 40, scale=2.0), _poisson_curves(rng, t, 0.7, 40, scale=50.0)])
    groups = np.repeat([0, 1], 40)
    e = horizons.growth_exponent(t, runs, groups=groups)
    assert e.lo <= 0.7 <= e.hi
    with pytest.raises(ValueError, match="groups"):
        horizons.growth_exponent(t, runs, groups=groups[:-1])


def test_growth_exponent_refuses_what_it_cannot_fit():
    t = np.array([1.0, 2.0, 3.0, 100.0])
    with pytest.raises(ValueError, match="rounds: fewer than two"):
        horizons.growth_exponent(t, np.ones((3, 4)))
    with pytest.raises(ValueError, match="regret must be"):
        horizons.growth_exponent(t, np.ones((3, 5)))
    with pytest.raises(ValueError, match="no run"):
        horizons.growth_exponent(t, np.ones((0, 4)))
    with pytest.raises(ValueError, match="window"):
        horizons.growth_exponent(t, np.ones((3, 4)), window=1.0)
    # No regret at all over the window: no logarithm, no exponent.
    e = horizons.growth_exponent(_rounds(1000), np.zeros((4, 500)))
    assert np.isnan(e.slope) and np.isnan(e.lo) and np.isnan(e.hi)


def test_below_from():
    rounds = np.array([10, 20, 30, 40, 50])
    assert horizons.below_from(rounds, [5, 1, 5, 1, 1], [2, 2, 2, 2, 2]) == 40
    assert horizons.below_from(rounds, [1, 1, 1, 1, 1], [2, 2, 2, 2, 2]) == 10
    assert horizons.below_from(rounds, [1, 1, 1, 1, 3], [2, 2, 2, 2, 2]) is None


def test_the_preset_agents_environments_and_defaults():
    assert horizons.default_horizon("cpu") == horizons.CPU_HORIZON
    assert horizons.default_horizon("gpu") == horizons.default_horizon("tpu") == 1_000_000
    assert horizons.default_seeds("cpu") == horizons.CPU_SEEDS and horizons.default_seeds("gpu") == 1024
    # The tests run on a CPU: the defaults are the CPU's.
    eoo, semi = horizons.specs()
    for s in (eoo, semi):
        assert s.horizon == horizons.CPU_HORIZON and s.seeds == horizons.CPU_SEEDS
        assert [a.label for a in s.agents] == ["anytime-e2d", "e2d", "ids", "ucb", "ts"]
        # The E2D agents with the preset's solver, the others at the library's defaults.
        assert [dict(a.options) for a in s.agents] == [{"solver": S.resolve(horizons.E2D_SOLVER)}] * 2 + [{}] * 3
        assert not any(a.grid for a in s.agents)
        assert s.every == horizons.CPU_HORIZON // horizons.RECORDED
        assert s.x64  # float32 ridge statistics break down over these horizons (see the module docstring)
    assert (eoo.env, eoo.name, eoo.instance_seeds) == ("end-of-optimism", "horizons-end-of-optimism", (0,))
    assert (semi.env, semi.d, semi.arms, semi.name, semi.instance_seeds) == ("semi-bandit", 3, 10,
                                                                            "horizons-semi-bandit", (0,))
    # --instances draws the semi-bandit's instances; end-of-optimism is one fixed instance.
    eoo, semi = presets.reproduce_specs("horizons", horizon=1000, seeds=8, instances=3)
    assert eoo.instance_seeds == (0,) and semi.instance_seeds == (0, 1, 2)
    assert eoo.horizon == semi.horizon == 1000 and eoo.seeds == 8 and semi.every == 2


@pytest.mark.parametrize("n", [200, 20_000, 100_000, 1_000_000])
def test_the_last_decade_is_well_recorded(n):
    rounds = _rounds(n)
    assert rounds[-1] == n and np.sum(rounds >= n / 10) >= 180


def test_e2d_is_tuned_for_the_runs_horizon():
    s = horizons.spec("semi-bandit", horizon=50_000, seeds=4)
    program = next(p for p in plan(s, "linear", width=64).programs if p.label == "e2d")
    assert program.numbers[:, program.program.names.index("lam")] == pytest.approx([horizon_lambda(50_000)])
    agent = registry.agent_factory("e2d", horizon=50_000, family="linear")()
    assert dict(agent.config.numbers)["lam"] == pytest.approx(horizon_lambda(50_000))


def test_horizon_applies_to_horizons_only():
    with pytest.raises(V.ArgumentError, match="horizon") as exc:
        presets.reproduce_specs("exp1", horizon=500)
    assert exc.value.argument == "horizon"
    with pytest.raises(V.ArgumentError, match="env"):
        horizons.spec("large-gaps")
