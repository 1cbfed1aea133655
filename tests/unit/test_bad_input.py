"""Bad input at every public entry point: a ValueError naming the argument, raised before any
tracing (table-driven; the command line's table is in tests/integration/test_cli.py)."""
import jax.numpy as jnp
import numpy as np
import pytest

import e2d_jax as e2d
from e2d_jax.agents import e2d_linear
from e2d_jax.envs import finite, linear
from e2d_jax.experiments import registry
from e2d_jax.sim.program import factory_program
from e2d_jax.experiments.spec import SweepAgent, SweepSpec
from e2d_jax.sim.rollout import check_agent
from e2d_jax.types import ActInfo

F = np.eye(3)
G = np.einsum("ki,kj->kij", F, F)
H = np.zeros(3)
GAPS = np.array([[0.0, 0.5], [0.4, 0.0]])
INFO = np.array([[0.0, 0.3], [0.0, 0.2]])
KEY = e2d.instance_key(0)
PARAMS = linear.semi_bandit(KEY, 3, 4)
FINITE = finite.multi_armed_bandit_class(KEY, 3, 4)


def _nan(x, idx=0):
    x = np.array(x, float)
    x.flat[idx] = np.nan
    return x


CASES = [
    # the linear DEC
    ("linear_acdec NaN f_hat", lambda: e2d.linear_acdec(F, G, _nan(H), 0.1), "f_hat"),
    ("linear_acdec inf feature", lambda: e2d.linear_acdec(F * np.inf, G, H, 0.1), "features"),
    ("linear_acdec NaN gram", lambda: e2d.linear_acdec(F, _nan(G), H, 0.1), "grams"),
    ("linear_acdec gram not PSD", lambda: e2d.linear_acdec(F, G - 2 * np.eye(3), H, 0.1), "grams"),
    ("linear_acdec gram not symmetric", lambda: e2d.linear_acdec(F, G + np.triu(np.ones((3, 3)), 1), H, 0.1), "grams"),
    ("linear_acdec grams shape", lambda: e2d.linear_acdec(F, G[:2], H, 0.1), "grams"),
    ("linear_acdec f_hat shape", lambda: e2d.linear_acdec(F, G, np.zeros(4), 0.1), "f_hat"),
    ("linear_acdec K < 2", lambda: e2d.linear_acdec(F[:1], G[:1], H, 0.1), "features"),
    ("linear_acdec eps2 = 0", lambda: e2d.linear_acdec(F, G, H, 0.0), "eps2"),
    ("linear_acdec eps2 < 0", lambda: e2d.linear_acdec(F, G, H, -1.0), "eps2"),
    ("linear_acdec eps2 NaN", lambda: e2d.linear_acdec(F, G, H, np.nan), "eps2"),
    ("linear_acdec eps2 inf", lambda: e2d.linear_acdec(F, G, H, np.inf), "eps2"),
    ("linear_acdec unknown solver", lambda: e2d.linear_acdec(F, G, H, 0.1, solver="nope"), "solver"),
    ("linear_acdec unknown gap type", lambda: e2d.linear_acdec(F, G, H, 0.1, gap_type="nope"), "gap_type"),
    ("linear_offset_dec lambda < 0", lambda: e2d.linear_offset_dec(F, G, H, -1.0), "lam"),
    ("linear_offset_dec NaN f_hat", lambda: e2d.linear_offset_dec(F, G, _nan(H), 1.0), "f_hat"),
    # the finite DEC
    ("finite_acdec NaN gaps", lambda: e2d.finite_acdec(_nan(GAPS), INFO, 0.1), "gaps"),
    ("finite_acdec negative information", lambda: e2d.finite_acdec(GAPS, -INFO - 0.1, 0.1), "info"),
    # (negative gaps are valid: Delta_f(pi, g) = r_g(pi*_g) - r_f(pi) < 0 where f beats g)
    ("finite_acdec K < 2", lambda: e2d.finite_acdec(GAPS[:1], INFO[:1], 0.1), "gaps"),
    ("finite_acdec M < 2", lambda: e2d.finite_acdec(GAPS[:, :1], INFO[:, :1], 0.1), "gaps"),
    ("finite_acdec shapes differ", lambda: e2d.finite_acdec(GAPS, INFO[:, :1], 0.1), "info"),
    ("finite_acdec eps2 = 0", lambda: e2d.finite_acdec(GAPS, INFO, 0.0), "eps2"),
    ("finite_offset_dec lambda < 0", lambda: e2d.finite_offset_dec(GAPS, INFO, -1.0), "lam"),
    # environments
    ("semi_bandit d = 0", lambda: linear.semi_bandit(KEY, 0, 4), "d"),
    ("semi_bandit K = 1", lambda: linear.semi_bandit(KEY, 3, 1), "num_actions"),
    ("semi_bandit sigma = 0", lambda: linear.semi_bandit(KEY, 3, 4, sigma=0.0), "sigma"),
    ("semi_bandit revealing index out of range", lambda: linear.semi_bandit(KEY, 3, 4, revealing_action=4),
     "revealing_action"),
    ("semi_bandit_authors d = 0", lambda: linear.semi_bandit_authors(KEY, 0, 4), "d"),
    ("finite_class probability that rounds to 1 in float32",
     lambda: finite.finite_class(np.zeros((2, 2)), finite.BernoulliObs(np.full((2, 2, 1), 1 - 1e-9)),
                                     dtype="float32"), "obs.probs"),
    ("finite_class sigma whose square underflows in float32",
     lambda: finite.finite_class(np.zeros((2, 2)), finite.GaussianObs(np.zeros((2, 2, 1)), 1e-30),
                                     dtype="float32"), "obs.sigma"),
    # agents
    ("anytime_e2d eps2_scale = 0", lambda: e2d.anytime_e2d(eps2_scale=0.0), "eps2_scale"),
    ("anytime_e2d eps2_scale NaN", lambda: e2d.anytime_e2d(eps2_scale=np.nan), "eps2_scale"),
    ("anytime_e2d unknown schedule", lambda: e2d_linear.anytime_e2d(eps2_schedule="nope"), "eps2_schedule"),
    ("anytime_e2d unknown divergence", lambda: e2d_linear.anytime_e2d(divergence="nope"), "divergence"),
    ("anytime_e2d reg < 0", lambda: e2d_linear.anytime_e2d(reg=-1.0), "reg"),
    ("fixed_horizon_e2d horizon = 1", lambda: e2d_linear.fixed_horizon_e2d(horizon=1), "horizon"),
    ("fixed_horizon_e2d lam < 0", lambda: e2d_linear.fixed_horizon_e2d(lam=-1.0), "lam"),
    ("fixed_horizon_e2d lam_scale = 0", lambda: e2d_linear.fixed_horizon_e2d(horizon=10, lam_scale=0.0),
     "lam_scale"),
    # the simulator
    ("simulate horizon = 0", lambda: e2d.simulate(PARAMS, e2d.ucb(), horizon=0, num_seeds=2), "horizon"),
    ("simulate num_seeds = 0", lambda: e2d.simulate(PARAMS, e2d.ucb(), horizon=5, num_seeds=0), "num_seeds"),
    ("simulate record_every = 0", lambda: e2d.simulate(PARAMS, e2d.ucb(), horizon=5, num_seeds=2, record_every=0),
     "record_every"),
    # registry and sweeps
    ("unknown agent", lambda: registry.parse_agent("nope"), "agents: unknown agent 'nope'"),
    ("unknown environment", lambda: registry.build_instances("nope", [0]), "env: unknown environment 'nope'"),
    ("unknown environment option", lambda: registry.build_instances("semi-bandit", [0], {"gain": 2.0}),
     "env: semi-bandit takes no option gain \\(its options: d, arms, sigma\\)"),
    ("module:attribute that does not import", lambda: registry.build_instances("no_such_module:build", [0]),
     "env: cannot import module 'no_such_module'"),
    ("agent option of the other family", lambda: registry.agent_factory("anytime-e2d", horizon=5,
                                                                         options={"divergence": "kl"}, family="finite"),
     "option divergence applies to linear models only"),
    ("agent option that no agent reads", lambda: registry.agent_factory("ucb", horizon=5, options={"divergence": "kl"},
                                                                         family="linear"),
     "unknown option divergence \\(valid on linear models: delta, radius, reg"),
    ("ucb option delta that is not 'anytime'", lambda: registry.agent_factory("ucb", horizon=5, options={"delta": "nope"},
                                                                              family="linear"),
     "agents\\[ucb\\]: delta must be a number in \\(0, 1\\) or 'anytime'"),
    ("ucb@ an unknown parameter", lambda: registry.agent_factory("ucb@nope", horizon=5, family="linear"),
     "agents: ucb@nope: unknown option 'nope' \\(choose from anytime"),
    ("ucb@anytime with a grid over delta", lambda: factory_program(
        registry.agent_factory("ucb@anytime", horizon=5, family="linear"), "linear", {"delta": [0.1]}),
     "hparams: 'delta' is not a numeric hyperparameter of ucb \\(its numbers: reg"),
    ("ucb delta that is neither a number nor 'anytime'", lambda: e2d.ucb(delta="nope"), "delta"),
    ("sweep seeds = 0", lambda: SweepSpec(env="semi-bandit", agents=(SweepAgent.make("ucb"),), horizon=5, seeds=0),
     "seeds"),
    ("sweep horizon = 0", lambda: SweepSpec(env="semi-bandit", agents=(SweepAgent.make("ucb"),), horizon=0, seeds=1),
     "horizon"),
    ("sweep without agents", lambda: SweepSpec(env="semi-bandit", agents=(), horizon=5, seeds=1), "agents"),
    ("sweep grid with NaN", lambda: SweepAgent.make("anytime-e2d", grid={"eps2_scale": [np.nan]}), "grid"),
    ("sweep option that is a list", lambda: SweepAgent.make("anytime-e2d", {"eps2_scale": [0.1, 1.0]}),
     "numeric hyperparameters to vary go in grid"),
    # the interaction contract, refused before anything is compiled
    ("agent with a float action", lambda: check_agent(_agent(action=lambda: jnp.float32(1.0)), PARAMS),
     "integer scalar action"),
    ("agent with an info of None", lambda: check_agent(_agent(info=lambda: None), PARAMS),
     "info that has an int32 scalar 'status'"),
    ("agent with an info without status", lambda: check_agent(_agent(info=lambda: {"value": jnp.zeros(())}), PARAMS),
     "'status' field"),
    ("agent whose state changes shape", lambda: check_agent(_agent(grow=True), PARAMS), "structure, shapes and dtypes"),
    ("finite params with the linear environment", lambda: e2d.simulate(FINITE, e2d.ucb(), horizon=2, num_seeds=1,
                                                                       env=linear.ENVIRONMENT),
     "env: the linear environment cannot run FiniteEnvParams"),
    ("observation maps of different widths", lambda: e2d.linear_side_observation(np.eye(2), [np.eye(2), np.eye(3)],
                                                                                  np.zeros(2)),
     "obs_matrices\\[1\\] must have shape \\(m_1, d\\) with d=2 columns"),
]


def _agent(action=lambda: jnp.int32(0), info=lambda: ActInfo(jnp.int32(0)), grow=False):
    """An agent that breaks one part of the contract."""
    def init(key, model):
        return jnp.zeros((1,))

    def act(key, state, model):
        return action(), jnp.concatenate([state, state]) if grow else state, info()

    return e2d.Agent(init=init, act=act, update=lambda state, a, obs, model: state)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_value_error_naming_the_argument(case):
    _, call, name = case
    with pytest.raises(ValueError, match=name.replace("+", r"\+")):
        call()


def test_at_least_thirty_bad_inputs_are_covered():
    assert len(CASES) >= 30
