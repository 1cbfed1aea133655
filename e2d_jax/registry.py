"""Names the command line (and notebooks) use for environments and agents.

An environment entry builds ``(Environment, params)`` from an :class:`EnvSpec`; an agent
entry builds an :class:`~e2d_jax.types.Agent` from an :class:`AgentSpec`. Agent names may
carry one parameter after ``@`` (e.g. ``e2d@500``: fixed-horizon E2D tuned for n = 500).
Later modules add entries with :func:`register_env` / :func:`register_agent`.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import jax

from e2d_jax.types import Agent, Environment


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What an environment builder may read. ``None`` means the builder's default."""

    name: str
    d: int | None = None
    arms: int | None = None
    sigma: float = 1.0
    instance_seed: int = 0
    models: int | None = None  # size of a finite model class
    dtype: str | None = None


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """What an agent factory may read."""

    name: str  # registry name, e.g. "e2d"
    param: str | None  # the part after "@", if any
    horizon: int  # the run's horizon n
    options: dict = dataclasses.field(default_factory=dict)  # --solver, --fw-steps, ...

    @property
    def label(self) -> str:
        return self.name if self.param is None else f"{self.name}@{self.param}"


ENVIRONMENTS: dict[str, tuple[Callable[[EnvSpec], tuple[Environment, object]], str]] = {}
AGENTS: dict[str, tuple[Callable[[AgentSpec, object], Agent], str]] = {}
# Which environment family (``"linear"`` or ``"finite"``) each name belongs to.
ENV_FAMILY: dict[str, str] = {}
AGENT_FAMILIES: dict[str, tuple[str, ...]] = {}
# Extra ``e2d-jax run`` flags that agent factories read from ``AgentSpec.options``
# (the option key is the flag without dashes, with '-' as '_').
AGENT_FLAGS: list[tuple[str, dict]] = [
    ("--solver", dict(choices=["saddle", "fw-grid", "saddle-grid", "paper"], default=None,
                      help="DEC solver of the E2D agents: saddle (exact form, default), fw-grid "
                           "(Frank-Wolfe on a lambda grid), saddle-grid, or paper (100 FW steps, "
                           "50-point grid)")),
    ("--solver-iters", dict(type=int, default=None, help="per-round solver iteration budget")),
    ("--divergence", dict(choices=["kl", "squared"], default=None,
                          help="E2D divergence: Gaussian KL (default, paper's experiments) or ||M(g-f)||^2")),
    ("--gaps", dict(choices=["delta_f", "delta"], default=None, help="E2D gaps (default delta_f)")),
]


def register_env(name: str, family: str, help: str):
    def deco(fn):
        ENVIRONMENTS[name] = (fn, help)
        ENV_FAMILY[name] = family
        return fn

    return deco


def register_agent(name: str, families: tuple[str, ...], help: str):
    def deco(fn):
        AGENTS[name] = (fn, help)
        AGENT_FAMILIES[name] = families
        return fn

    return deco


def parse_agent(text: str, horizon: int, options: dict | None = None) -> AgentSpec:
    """``"name"`` or ``"name@param"`` -> AgentSpec; ValueError naming --agents if unknown."""
    name, _, param = text.strip().partition("@")
    if name not in AGENTS:
        raise ValueError(f"--agents: unknown agent {name!r} (choose from {', '.join(sorted(AGENTS))})")
    return AgentSpec(name=name, param=param or None, horizon=horizon, options=dict(options or {}))


def build_env(spec: EnvSpec):
    if spec.name not in ENVIRONMENTS:
        raise ValueError(f"--env: unknown environment {spec.name!r} (choose from {', '.join(sorted(ENVIRONMENTS))})")
    return ENVIRONMENTS[spec.name][0](spec)


def build_agent(spec: AgentSpec, model) -> Agent:
    return AGENTS[spec.name][0](spec, model)


# --- linear environments and the baselines (issue: foundation) -------------------------


def _linear_env(builder):
    def build(spec: EnvSpec):
        from e2d_jax.envs import linear

        key = jax.random.key(spec.instance_seed)
        return linear.ENVIRONMENT, builder(key, spec)

    return build


@register_env("semi-bandit", "linear", "linear semi-bandit with one revealing action (paper's experiments)")
def _semi_bandit(spec):
    from e2d_jax.envs import linear

    return _linear_env(
        lambda key, s: linear.semi_bandit(key, s.d or 3, s.arms or 10, sigma=s.sigma, dtype=s.dtype)
    )(spec)


@register_env("linear-bandit", "linear", "plain linear bandit, M_pi = phi_pi^T")
def _linear_bandit(spec):
    from e2d_jax.envs import linear

    return _linear_env(
        lambda key, s: linear.linear_bandit(key, s.d or 3, s.arms or 10, sigma=s.sigma, dtype=s.dtype)
    )(spec)


@register_env("mab", "linear", "K-armed Gaussian bandit as a linear bandit (phi_pi = e_pi)")
def _mab(spec):
    from e2d_jax.envs import linear

    return _linear_env(
        lambda key, s: linear.multi_armed_bandit(key, s.arms or 10, sigma=s.sigma, dtype=s.dtype)
    )(spec)


def _no_param(spec: AgentSpec):
    if spec.param is not None:
        raise ValueError(f"--agents: {spec.name} takes no '@' parameter, got {spec.label!r}")


@register_agent("ucb", ("linear",), "OFUL / LinUCB on all observations")
def _ucb(spec, model):
    from e2d_jax.agents.ucb import ucb

    _no_param(spec)
    return ucb()


@register_agent("ts", ("linear",), "Thompson sampling with the ridge Gaussian posterior")
def _ts(spec, model):
    from e2d_jax.agents.ts import thompson_sampling

    _no_param(spec)
    return thompson_sampling()


# --- E2D agents on linear models (issue: the linear DEC) -------------------------------


def _linear_solver(options):
    import dataclasses

    from e2d_jax.agents.e2d import AGENT_SOLVER
    from e2d_jax.dec.linear import PAPER_BUDGET

    name = options.get("solver") or "saddle"
    if name == "paper":
        cfg = PAPER_BUDGET
    elif name == "saddle":
        cfg = AGENT_SOLVER
    else:
        cfg = dataclasses.replace(AGENT_SOLVER, solver=name, maxiter=100, check_every=100, rtol=0.0,
                                  lam_grid=50, lam_refine=8, lam_rounds=1)
    iters = options.get("solver_iters")
    if iters is not None:
        if iters < 1:
            raise ValueError(f"--solver-iters must be >= 1, got {iters}")
        cfg = dataclasses.replace(cfg, maxiter=iters, check_every=min(cfg.check_every, iters) if name == "saddle" else iters)
    return cfg


def _e2d_common(options):
    return dict(solver=_linear_solver(options), divergence=options.get("divergence") or "kl",
                gaps=options.get("gaps") or "delta_f")


@register_agent("anytime-e2d", ("linear",), "Anytime-E2D (Algorithm 1), eps_t^2 = d/t, ridge estimates")
def _anytime(spec, model):
    from e2d_jax.agents.e2d import anytime_e2d

    _no_param(spec)
    kw = _e2d_common(spec.options)
    if kw["gaps"] == "delta" and kw["solver"].solver == "saddle":
        raise ValueError("--gaps delta needs --solver fw-grid, saddle-grid or paper")
    return anytime_e2d(**kw)


@register_agent("e2d", ("linear",), "fixed-horizon E2D, lambda = sqrt(n/(4 log n)); e2d@N tunes for horizon N")
def _e2d(spec, model):
    from e2d_jax.agents.e2d import fixed_horizon_e2d

    n = spec.horizon
    if spec.param is not None:
        try:
            n = int(spec.param)
        except ValueError:
            raise ValueError(f"--agents: e2d@N needs an integer horizon N >= 2, got {spec.label!r}") from None
    if n < 2:
        raise ValueError(f"--agents: e2d needs a tuning horizon >= 2, got {n}")
    return fixed_horizon_e2d(horizon=n, **_e2d_common(spec.options))
from e2d_jax import finite_registry  # noqa: E402,F401
