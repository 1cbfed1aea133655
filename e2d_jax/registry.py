"""Names the command line, the experiment layer and notebooks use for environments and agents.

An environment entry builds ``(Environment, params)`` from an :class:`EnvSpec`; an agent
entry builds an :class:`~e2d_jax.types.Agent` from an :class:`AgentSpec` and the model class
it will run on. Every agent name works for both model families where the algorithm exists
(the factory dispatches on the model), so one ``--agents`` list serves every environment.
Agent names may carry one parameter: fixed-horizon E2D tuned for n = 500 is ``e2d-n500``
(``e2d@500`` is accepted and named ``e2d-n500`` in every output); finite-class options follow
``@`` (``anytime-e2d@track+mixture``). An entry builds a *factory*: called with no arguments
it gives the agent, called with numeric hyperparameters (traced, e.g. ``eps2_scale``) it
gives the agent of one cell of a sweep's grid.

Environments (instance drawn from ``e2d_jax.simulate.instance_key(instance_seed)``):

* linear: ``semi-bandit`` (the paper's experiments as its text describes them; d=3, K=10),
  ``semi-bandit-authors`` (the same as the authors' code draws it: f* = e_1, unnormalised
  Gaussian features, action 0 revealing), ``linear-bandit``, ``mab``;
* finite classes: ``finite-mab`` (K=5, M=30 random mean vectors), ``finite-revealing``
  (K=10, M=30, an informative costly action at gain 3), ``finite-revealing-plain`` (gain 1),
  ``finite-bernoulli`` (K=5, M=30).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable

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
    options: dict = dataclasses.field(default_factory=dict)  # --solver, --divergence, ...

    @property
    def label(self) -> str:
        if self.param is None:
            return self.name
        if self.name == "e2d":
            return f"e2d-n{self.param}"
        return f"{self.name}@{self.param}"


ENVIRONMENTS: dict[str, tuple[Callable[[EnvSpec], tuple[Environment, object]], str]] = {}
AGENTS: dict[str, tuple[Callable[[AgentSpec, object], Agent], str]] = {}
# Which environment family (``"linear"`` or ``"finite"``) each name belongs to, and which
# families an agent name runs on.
ENV_FAMILY: dict[str, str] = {}
AGENT_FAMILIES: dict[str, tuple[str, ...]] = {}
# Which of the flags below apply to which family (a flag given for the other family is an
# error, never silently ignored).
FLAG_FAMILIES = {"solver": ("linear",), "solver_iters": ("linear",), "divergence": ("linear",),
                 "gaps": ("linear", "finite"), "eps2_schedule": ("linear",)}
# Which option keys each agent reads (a flag that no chosen agent reads is refused).
AGENT_OPTIONS: dict[str, tuple[str, ...]] = {
    "anytime-e2d": ("solver", "solver_iters", "divergence", "gaps", "eps2_schedule"),
    "e2d": ("solver", "solver_iters", "divergence", "gaps"),
}
# Extra ``e2d-jax run`` flags that agent factories read from ``AgentSpec.options``
# (the option key is the flag without dashes, with '-' as '_').
AGENT_FLAGS: list[tuple[str, dict]] = [
    ("--solver", dict(choices=["saddle", "fw-grid", "saddle-grid", "paper"], default=None,
                      help="DEC solver of the E2D agents on linear models: saddle (exact form, default), "
                           "fw-grid (Frank-Wolfe on a lambda grid), saddle-grid, or paper (100 FW steps, "
                           "50-point grid)")),
    ("--solver-iters", dict(type=int, default=None, help="per-round solver iteration budget (linear models)")),
    ("--divergence", dict(choices=["kl", "squared"], default=None,
                          help="E2D divergence on linear models: Gaussian KL (default, the paper's text) or "
                               "||M(g-f)||^2 (the authors' implementation)")),
    ("--gaps", dict(choices=["delta_f", "delta"], default=None, help="E2D gaps (default delta_f, both families)")),
    ("--eps2-schedule", dict(choices=["dim", "rank", "rank-log"], default=None,
                             help="Anytime-E2D's eps_t^2 on linear models: rank (r/t, r = dimension of the observable "
                                  "span; default), dim (d/t, the paper's experiments) or rank-log (r(1+log t)/t)")),
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
    """``"name"``, ``"name@param"`` or ``"e2d-nN"`` -> AgentSpec; ValueError naming --agents if unknown."""
    text = text.strip()
    if text.startswith("e2d-n") and "@" not in text:
        text = "e2d@" + text[len("e2d-n"):]
    name, _, param = text.partition("@")
    if name not in AGENTS:
        raise ValueError(f"--agents: unknown agent {name!r} (choose from {', '.join(sorted(AGENTS))})")
    return AgentSpec(name=name, param=param or None, horizon=horizon, options=dict(options or {}))


def _env_builder(spec: EnvSpec):
    if spec.name not in ENVIRONMENTS:
        raise ValueError(f"--env: unknown environment {spec.name!r} (choose from {', '.join(sorted(ENVIRONMENTS))})")
    return ENVIRONMENTS[spec.name][0]


def build_env(spec: EnvSpec):
    """``(Environment, params)`` of the instance with seed ``spec.instance_seed``."""
    from e2d_jax.simulate import instance_key

    return _env_builder(spec)(spec, instance_key(spec.instance_seed))


def build_instances(spec: EnvSpec, instance_seeds):
    """``(Environment, params)`` with a leading instance axis: the builder vmapped over the
    keys of ``instance_seeds`` (instance ``i`` equals ``build_env`` with that seed)."""
    import jax

    from e2d_jax.simulate import instance_keys

    build = _env_builder(spec)
    keys = instance_keys(instance_seeds)
    env, _ = build(spec, keys[0])
    return env, jax.vmap(lambda k: build(spec, k)[1])(keys)


def check_flags_apply(options: dict, agents: list) -> None:
    """Refuses an agent flag that none of ``agents`` (AgentSpecs) reads."""
    for key, value in options.items():
        if value is None:
            continue
        if not any(key in AGENT_OPTIONS.get(a.name, ()) for a in agents):
            readers = sorted(n for n, keys in AGENT_OPTIONS.items() if key in keys)
            raise ValueError(f"--{key.replace('_', '-')} applies to {', '.join(readers)} only; none of --agents "
                             f"{','.join(a.label for a in agents)} reads it")


def check_options(spec: AgentSpec, family: str) -> None:
    """Refuses flags that do not apply to the model family (never ignores them silently)."""
    for key, value in spec.options.items():
        if value is None or key not in FLAG_FAMILIES:
            continue
        if family not in FLAG_FAMILIES[key]:
            raise ValueError(f"--{key.replace('_', '-')} applies to {' and '.join(FLAG_FAMILIES[key])} models "
                             f"only; the environment is a {family} model class")


def build_agent_factory(spec: AgentSpec, model) -> Callable[..., Agent]:
    """The factory of ``spec``'s agent for ``model``: ``factory(**hyperparameters) -> Agent``."""
    from e2d_jax.agents.family import family_of

    family = family_of(model)
    if family not in AGENT_FAMILIES[spec.name]:
        raise ValueError(f"--agents: {spec.name} does not run on {family} models "
                         f"(it runs on {', '.join(AGENT_FAMILIES[spec.name])})")
    check_options(spec, family)
    return AGENTS[spec.name][0](spec, model)


def build_agent(spec: AgentSpec, model) -> Agent:
    """The agent of ``spec`` with its default hyperparameters."""
    return build_agent_factory(spec, model)()


# --- environments ----------------------------------------------------------------------


@register_env("semi-bandit", "linear", "linear semi-bandit with one revealing action (paper's experiments; d=3, K=10)")
def _semi_bandit(spec, key):
    from e2d_jax.envs import linear

    return linear.ENVIRONMENT, linear.semi_bandit(key, spec.d or 3, spec.arms or 10, sigma=spec.sigma,
                                                  dtype=spec.dtype)


@register_env("semi-bandit-authors", "linear",
              "the revealing semi-bandit as the authors' code draws it: f* = e1, N(0,1) features not "
              "normalised, action 0 revealing (possibly optimal) (d=3, K=10)")
def _semi_bandit_authors(spec, key):
    from e2d_jax.envs import linear

    return linear.ENVIRONMENT, linear.semi_bandit_authors(key, spec.d or 3, spec.arms or 10, sigma=spec.sigma,
                                                          dtype=spec.dtype)


@register_env("linear-bandit", "linear", "plain linear bandit, M_pi = phi_pi^T (d=3, K=10)")
def _linear_bandit(spec, key):
    from e2d_jax.envs import linear

    return linear.ENVIRONMENT, linear.linear_bandit(key, spec.d or 3, spec.arms or 10, sigma=spec.sigma,
                                                    dtype=spec.dtype)


@register_env("mab", "linear", "K-armed Gaussian bandit as a linear bandit (phi_pi = e_pi; K=10)")
def _mab(spec, key):
    from e2d_jax.envs import linear

    return linear.ENVIRONMENT, linear.multi_armed_bandit(key, spec.arms or 10, sigma=spec.sigma,
                                                         dtype=spec.dtype)


@register_env("finite-mab", "finite", "K-armed Gaussian bandit with M random mean vectors (finite class; K=5, M=30)")
def _finite_mab(spec: EnvSpec, key):
    from e2d_jax.envs import finite

    return finite.ENVIRONMENT, finite.multi_armed_bandit_class(key, spec.arms or 5, spec.models or 30,
                                                               sigma=spec.sigma, dtype=spec.dtype)


@register_env("finite-revealing", "finite",
              "finite class with an informative but costly revealing action, gain 3 (K=10, M=30)")
def _finite_revealing(spec: EnvSpec, key):
    from e2d_jax.envs import finite

    return finite.ENVIRONMENT, finite.revealing_class(key, spec.arms or 10, spec.models or 30,
                                                      sigma=spec.sigma, gain=3.0, dtype=spec.dtype)


@register_env("finite-revealing-plain", "finite", "finite class with the paper's revealing action, gain 1 (K=10, M=30)")
def _finite_revealing_plain(spec: EnvSpec, key):
    from e2d_jax.envs import finite

    return finite.ENVIRONMENT, finite.revealing_class(key, spec.arms or 10, spec.models or 30,
                                                      sigma=spec.sigma, gain=1.0, dtype=spec.dtype)


@register_env("finite-bernoulli", "finite", "K-armed Bernoulli bandit with M random probability vectors (K=5, M=30)")
def _finite_bernoulli(spec: EnvSpec, key):
    from e2d_jax.envs import finite

    if spec.sigma != 1.0:
        raise ValueError("--sigma does not apply to finite-bernoulli (Bernoulli observations have no noise scale)")
    return finite.ENVIRONMENT, finite.bernoulli_bandit_class(key, spec.arms or 5, spec.models or 30,
                                                             dtype=spec.dtype)


# --- agents ------------------------------------------------------------------------------


def _no_param(spec: AgentSpec):
    if spec.param is not None:
        raise ValueError(f"--agents: {spec.name} takes no '@' parameter, got {spec.label!r}")


def _linear_solver(options):
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


def _e2d_kwargs(spec: AgentSpec, family: str) -> dict:
    opts = spec.options
    kwargs = {"gaps": opts.get("gaps") or "delta_f"}
    if family == "linear":
        kwargs.update(solver=_linear_solver(opts), divergence=opts.get("divergence") or "kl")
        if kwargs["gaps"] == "delta" and kwargs["solver"].solver == "saddle":
            raise ValueError("--gaps delta needs --solver fw-grid, saddle-grid or paper")
    return kwargs


_ANYTIME_OPTIONS = {
    "delta": ("gaps", "delta"), "delta_f": ("gaps", "delta_f"),
    "sample": ("estimate", "sample"), "mixture": ("estimate", "mixture"),
    "track": ("lam_search", "track"), "global": ("lam_search", "global"),
}


@register_agent("anytime-e2d", ("linear", "finite"),
                "Anytime-E2D (Algorithm 1): eps_t^2 = r/t (r = observable rank; the paper's d/t: --eps2-schedule dim) with ridge on linear models, log|M|/t with EWA on "
                "finite classes (finite: @delta, @mixture, @track joined by '+')")
def _anytime(spec, model):
    from e2d_jax.agents.family import anytime_e2d, family_of

    family = family_of(model)
    kwargs = _e2d_kwargs(spec, family)
    if spec.param:
        if family == "linear":
            raise ValueError(f"--agents: {spec.label}: anytime-e2d takes '@' options on finite classes only")
        for token in spec.param.split("+"):
            if token not in _ANYTIME_OPTIONS:
                raise ValueError(f"--agents: {spec.label}: unknown option {token!r} "
                                 f"(choose from {', '.join(_ANYTIME_OPTIONS)}, joined by '+')")
            field, value = _ANYTIME_OPTIONS[token]
            kwargs[field] = value
    if family == "linear" and spec.options.get("eps2_schedule"):
        kwargs["eps2_schedule"] = spec.options["eps2_schedule"]
    return functools.partial(anytime_e2d, **kwargs)


@register_agent("e2d", ("linear", "finite"),
                "fixed-horizon E2D tuned for the run's horizon; e2d-nN tunes for horizon N (linear: "
                "lambda = sqrt(N/(4 log N)); finite: the regret-bound minimiser)")
def _e2d(spec, model):
    from e2d_jax.agents.family import family_of, fixed_horizon_e2d

    n = spec.horizon
    if spec.param is not None:
        try:
            n = int(spec.param)
        except ValueError:
            raise ValueError(f"--agents: e2d-nN (or e2d@N) needs an integer horizon N >= 2, got {spec.name}@{spec.param}") from None
    if n < 2:
        raise ValueError(f"--agents: e2d needs a tuning horizon >= 2, got {n}")
    return functools.partial(fixed_horizon_e2d, horizon=n, **_e2d_kwargs(spec, family_of(model)))


@register_agent("ucb", ("linear", "finite"),
                "OFUL / LinUCB on all observations, ||f*|| bound from the class (finite: its linear view)")
def _ucb(spec, model):
    from e2d_jax.agents.ucb import as_linear, ucb

    _no_param(spec)
    as_linear(model, "ucb")
    return ucb


@register_agent("ts", ("linear", "finite"), "Thompson sampling with the ridge Gaussian posterior (finite: linear view)")
def _ts(spec, model):
    from e2d_jax.agents.ts import thompson_sampling
    from e2d_jax.agents.ucb import as_linear

    _no_param(spec)
    as_linear(model, "ts")
    return thompson_sampling


@register_agent("ts-finite", ("finite",), "Thompson sampling on the finite class (EWA posterior, eta = 1)")
def _posterior_sampling(spec, model):
    from e2d_jax.agents.finite import posterior_sampling

    _no_param(spec)
    return posterior_sampling
