"""Names of environments and agents, for sweep files, the command line and notebooks.

Wherever a sweep takes an environment or an agent by name, it takes one of

* a registered name (the library's below, or one added with :func:`register_env` /
  :func:`register_agent`), or
* ``module:attribute`` of code importable from the working directory (the current
  directory is put on ``sys.path`` for the import), e.g. ``my_problem:build`` or
  ``my_agents:epsilon_greedy``.

An environment is an *instance builder* ``builder(key, **options) -> params`` returning an
instance exactly as the library's builders do (``LinearEnvParams`` or ``FiniteEnvParams``):
the options are the sweep's environment options, the sizes ``d``, ``arms`` and ``models`` and
``sigma`` included where given, and ``dtype`` where the builder accepts it. The builder is
vmapped over instance keys, so it must be traceable in the key.

An agent is a *factory* ``factory(**kwargs) -> Agent``: it is called with the agent's static
options from the sweep (strings, numbers) and, in a grid, with each cell's numeric
hyperparameters as traced values, exactly like the library's own factories. A factory that
takes a ``horizon`` argument gets the sweep's horizon.

The library's names are the entries of :data:`ENVIRONMENTS` and :data:`AGENTS`, each with a
one-line ``help`` (the command line's ``--help`` lists them with it); an environment's
instance ``i`` is drawn from ``instance_key(i)``. The library's agents run on both model
families where the algorithm exists. Agent names may carry one parameter after ``@``:
fixed-horizon E2D tuned for n = 500 is ``e2d@500``, also written ``e2d-n500`` (the name used
in every output); finite-class options of Anytime-E2D follow ``@``
(``anytime-e2d@track+mixture``), and UCB with the anytime confidence level is ``ucb@anytime``.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import os
import re
import sys
from typing import Any, Callable

import jax

from e2d_jax import _checks as V
from e2d_jax.agents import e2d_finite, e2d_linear
from e2d_jax.agents.e2d import anytime_e2d, fixed_horizon_e2d
from e2d_jax.agents.ids import ids
from e2d_jax.agents.ts import posterior_sampling, thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.dec import solvers as S
from e2d_jax.envs import finite, linear, zoo
from e2d_jax.envs.family import FAMILIES, environment_of, params_family
from e2d_jax.sim.rollout import instance_key, instance_keys
from e2d_jax.types import DIVERGENCES, GAP_TYPES, Agent


# --------------------------------------------------------------------------------------
# Environments


@dataclasses.dataclass(frozen=True)
class RegisteredEnv:
    """An environment name: its builder ``builder(key, **options) -> params``, the model
    family it builds (None: decided by what it returns) and a one-line description."""

    name: str
    builder: Callable
    family: str | None = None
    help: str = ""

    def options(self) -> tuple[str, ...] | None:
        """The option names the builder takes (None: any, it takes ``**options``)."""
        return _keywords(self.builder)


ENVIRONMENTS: dict[str, RegisteredEnv] = {}


def _keywords(fn) -> tuple[str, ...] | None:
    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def register_env(name: str, builder: Callable | None = None, *, family: str | None = None, help: str = ""):
    """Registers an instance builder under ``name`` (also usable as a decorator).

    Args:
      name: letters, digits and ``-._``.
      builder: ``builder(key, **options) -> params`` (a ``LinearEnvParams`` or
        ``FiniteEnvParams``), traceable in ``key``.
      family: ``"linear"`` or ``"finite"`` if known (checked against what it builds).
      help: one line for listings (the command line's help shows it).

    Returns:
      The builder (so ``@register_env("name")`` leaves the function as it is).
    """
    if builder is None:
        return lambda fn: register_env(name, fn, family=family, help=help)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise V.ArgumentError("name", f"{V.name('name')} must be letters, digits and - . _, got {name!r}")
    if not callable(builder):
        raise ValueError(f"builder must be callable (key, **options) -> params, got {type(builder).__name__}")
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES} or None, got {family!r}")
    ENVIRONMENTS[name] = RegisteredEnv(name, builder, family, help)
    return builder


def load_attribute(text: str, what: str):
    """``module:attribute`` imported from the working directory (a ValueError naming ``what``
    with the reason when the module or attribute is missing)."""
    arg = what.split("[", 1)[0]
    where = f"{V.name(arg)}{what[len(arg):]}"
    module, _, attr = text.partition(":")
    if not module or not attr:
        raise V.ArgumentError(arg, f"{where}: {text!r} is not module:attribute")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(module)
    except ImportError as err:
        raise V.ArgumentError(arg, f"{where}: cannot import module {module!r} from {cwd} ({err})") from None
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise V.ArgumentError(arg, f"{where}: module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise V.ArgumentError(arg, f"{where}: {text} is a {type(obj).__name__}, not a function")
    return obj


def resolve_env(name: str) -> RegisteredEnv:
    """The registered environment ``name``, or ``module:attribute`` loaded as one."""
    if ":" in name:
        return RegisteredEnv(name, load_attribute(name, "env"), None, f"instance builder {name}")
    if name not in ENVIRONMENTS:
        raise V.ArgumentError("env", f"{V.name('env')}: unknown environment {name!r} (choose from {', '.join(sorted(ENVIRONMENTS))}, or "
                         "give module:attribute of an instance builder of your own)")
    return ENVIRONMENTS[name]


def env_options(entry: RegisteredEnv, options: dict, dtype: str | None) -> dict:
    """The keyword arguments the builder gets: ``options`` without the Nones, and ``dtype``
    where it takes one; an option the builder does not take is refused with the valid ones."""
    opts = {k: v for k, v in options.items() if v is not None}
    accepted = entry.options()
    if dtype is not None and (accepted is None or "dtype" in accepted):
        opts["dtype"] = dtype
    if accepted is not None:
        unknown = sorted(set(opts) - set(accepted))
        if unknown:
            valid = ", ".join(a for a in accepted if a != "dtype") or "none"
            raise V.ArgumentError(unknown[0], f"{V.name('env')}: {entry.name} takes no option "
                                              f"{', '.join(V.name(u) for u in unknown)} (its options: {valid})")
    return opts


def _check_built(entry: RegisteredEnv, params):
    family = params_family(params)
    if family is None:
        raise V.ArgumentError("env", f"{V.name('env')}: {entry.name} returned a {type(params).__name__}; an instance builder must return "
                         "LinearEnvParams or FiniteEnvParams, as the library's builders do (e.g. "
                         "e2d_jax.envs.linear.linear_side_observation or e2d_jax.envs.finite.finite_class)")
    if entry.family is not None and family != entry.family:
        raise V.ArgumentError("env", f"{V.name('env')}: {entry.name} is registered as {entry.family} but built a {family} instance")
    return family


def build_instances(name: str, instance_seeds, options: dict | None = None, dtype: str | None = None):
    """``(Environment, params, family)`` with a leading instance axis: the builder vmapped over
    the keys of ``instance_seeds`` (instance ``i`` equals the builder at ``instance_key(seed)``)."""
    entry = resolve_env(name)
    opts = env_options(entry, dict(options or {}), dtype)
    keys = instance_keys(instance_seeds)
    try:
        params = jax.vmap(lambda k: entry.builder(k, **opts))(keys)
    except TypeError as err:
        raise V.ArgumentError("env", f"{V.name('env')}: calling {entry.name}(key, {', '.join(f'{k}=...' for k in opts)}) failed: {err}") from None
    family = _check_built(entry, params)
    return environment_of(params), params, family


def build_instance(name: str, instance_seed: int = 0, options: dict | None = None, dtype: str | None = None):
    """``(Environment, params, family)`` of one instance, drawn from ``instance_key(instance_seed)``."""
    entry = resolve_env(name)
    opts = env_options(entry, dict(options or {}), dtype)
    try:
        params = entry.builder(instance_key(instance_seed), **opts)
    except TypeError as err:
        raise V.ArgumentError("env", f"{V.name('env')}: calling {entry.name}(key, {', '.join(f'{k}=...' for k in opts)}) failed: {err}") from None
    family = _check_built(entry, params)
    return environment_of(params), params, family


def instance_shapes(name: str, options: dict | None = None, dtype: str | None = None):
    """``(params, family)`` of one instance as abstract shapes (``jax.eval_shape``; nothing is
    computed)."""
    entry = resolve_env(name)
    opts = env_options(entry, dict(options or {}), dtype)
    params = jax.eval_shape(lambda k: entry.builder(k, **opts), instance_key(0))
    return params, _check_built(entry, params)


# --------------------------------------------------------------------------------------
# Agents


@dataclasses.dataclass(frozen=True)
class AgentRequest:
    """What an agent entry is asked for: the name as written, its ``@`` parameter, the
    sweep's horizon, the static options, and the model family of the environment."""

    name: str
    param: str | None
    horizon: int
    options: dict
    family: str

    @property
    def label(self) -> str:
        return agent_label(self.name, self.param)


@dataclasses.dataclass(frozen=True)
class RegisteredAgent:
    """An agent name: ``make(request) -> factory`` where ``factory(**hyperparameters) -> Agent``;
    the families it runs on (None: any), the static options it reads, a one-line description."""

    name: str
    make: Callable[[AgentRequest], Callable[..., Agent]]
    families: tuple | None = None
    options: tuple | None = ()
    help: str = ""
    takes_param: bool = False


AGENTS: dict[str, RegisteredAgent] = {}


@dataclasses.dataclass(frozen=True)
class AgentProgram:
    """What an agent entry compiles to: ``factory(**numbers) -> Agent`` with numeric
    hyperparameters that may be traced, and the numbers this entry fixes.

    Entries whose ``key`` is equal differ only in numbers, so a sweep runs them as cells of
    one compiled program (:func:`e2d_jax.experiments.spec.plan`): E2D tuned for several
    horizons is one program with one lambda per cell.

    Attributes:
      key: identifies the compiled program (the agent, the family and its static options).
      factory: ``factory(**hyperparameters) -> Agent``.
      numbers: sorted ``(name, value)`` pairs the entry fixes (e.g. E2D's tuned ``lam``).
      defaults: sorted ``(name, value)`` pairs: the factory's default value of each numeric
        hyperparameter (what a merged cell takes for a name the entry does not set).
    """

    key: Any
    factory: Callable[..., Agent]
    numbers: tuple = ()
    defaults: tuple = ()

    def bound(self) -> Callable[..., Agent]:
        """The factory with this entry's numbers given: ``bound()(**grid cell) -> Agent``."""
        return functools.partial(self.factory, **dict(self.numbers)) if self.numbers else self.factory


def _numeric_defaults(fn) -> tuple:
    """Sorted ``(name, value)`` pairs of a function's keyword arguments with a number as default."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(sorted((p.name, float(p.default)) for p in params
                        if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)))


def _user_agent(name: str, factory: Callable, help: str = "") -> RegisteredAgent:
    accepted = _factory_keywords(factory)

    def make(request: AgentRequest):
        if request.param is not None:
            raise V.ArgumentError("agents", f"{V.name('agents')}: {name} takes no '@' parameter, got {request.label!r}")
        kwargs = dict(request.options)
        if accepted is not None and "horizon" in accepted:
            kwargs.setdefault("horizon", request.horizon)
        if accepted is not None:
            unknown = sorted(set(kwargs) - set(accepted))
            if unknown:
                raise V.ArgumentError("agents", f"{V.name('agents')}[{name}]: the factory takes no option {', '.join(unknown)} (its arguments: "
                                 f"{', '.join(accepted) or 'none'})")
        return functools.partial(factory, **kwargs) if kwargs else factory

    return RegisteredAgent(name, make, None, None, help)


def _factory_keywords(fn) -> tuple[str, ...] | None:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def register_agent(name: str, factory: Callable | None = None, *, help: str = ""):
    """Registers an agent factory under ``name`` (also usable as a decorator).

    Args:
      name: letters, digits and ``-._``.
      factory: ``factory(**kwargs) -> Agent``, called with the sweep's static options and
        each grid cell's hyperparameters (traced) as keyword arguments, and with
        ``horizon`` where it takes one.
      help: one line for listings.

    Returns:
      The factory.
    """
    if factory is None:
        return lambda fn: register_agent(name, fn, help=help)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise V.ArgumentError("name", f"{V.name('name')} must be letters, digits and - . _, got {name!r}")
    if not callable(factory):
        raise ValueError(f"factory must be callable (**kwargs) -> Agent, got {type(factory).__name__}")
    AGENTS[name] = _user_agent(name, factory, help)
    return factory


def agent_label(name: str, param: str | None = None) -> str:
    """The name an agent carries in every output: ``e2d-nN`` for E2D tuned for N, the
    attribute name for ``module:attribute``, else the name with its ``@`` parameter."""
    if ":" in name:
        return name.rpartition(":")[2].rpartition(".")[2]
    if param is None:
        return name
    if name == "e2d":
        return f"e2d-n{param}"
    return f"{name}@{param}"


def parse_agent(text: str) -> tuple[str, str | None]:
    """``"name"``, ``"name@param"``, ``"e2d-nN"`` or ``"module:attribute"`` -> (name, param);
    a ValueError listing the known agents for an unknown name."""
    text = text.strip()
    if ":" in text:
        return text, None
    if text.startswith("e2d-n") and "@" not in text:
        text = "e2d@" + text[len("e2d-n"):]
    name, _, param = text.partition("@")
    if name not in AGENTS:
        raise V.ArgumentError("agents", f"{V.name('agents')}: unknown agent {name!r} (choose from {', '.join(sorted(AGENTS))}, or give "
                         "module:attribute of an agent factory of your own)")
    return name, param or None


def resolve_agent(name: str) -> RegisteredAgent:
    if ":" in name:
        return _user_agent(agent_label(name), load_attribute(name, f"agents[{name}]"), f"agent factory {name}")
    return AGENTS[name]


def agent_program(text: str, *, horizon: int, options: dict | None = None, family: str) -> AgentProgram:
    """The :class:`AgentProgram` of agent ``text`` with ``options`` (static options, and numeric
    hyperparameters fixed for this entry), for a sweep of ``horizon`` rounds on an environment
    of ``family``."""
    name, param = parse_agent(text)
    entry = resolve_agent(name)
    options = dict(options or {})
    if entry.families is not None and family not in entry.families:
        raise V.ArgumentError("agents", f"{V.name('agents')}: {entry.name} does not run on {family} models (it runs on "
                         f"{', '.join(entry.families)})")
    check_options(text, options)
    if param is not None and not entry.takes_param:
        raise V.ArgumentError("agents", f"{V.name('agents')}: {entry.name} takes no '@' parameter, got {agent_label(name, param)!r}")
    numeric = set(hyperparameters(text, family) or ()) if ":" not in name else set()
    numbers = {k: float(v) for k, v in options.items()
               if k in numeric and isinstance(v, (int, float)) and not isinstance(v, bool)}
    static = {k: v for k, v in options.items() if k not in numbers}
    made = entry.make(AgentRequest(name, param, horizon, static, family))
    if not isinstance(made, AgentProgram):
        key = (entry.name, param if ":" not in name else name, family, tuple(sorted(static.items())))
        made = AgentProgram(key=key, factory=made, defaults=_numeric_defaults(made))
    clash = sorted(set(numbers) & {k for k, _ in made.numbers})
    if clash:
        raise V.ArgumentError("agents", f"{V.name('agents')}[{agent_label(name, param)}]: {', '.join(clash)} is set by the agent itself "
                         f"({dict(made.numbers)}); vary it with a multiplier instead")
    return dataclasses.replace(made, numbers=tuple(sorted({**dict(made.numbers), **numbers}.items())))


def agent_factory(text: str, *, horizon: int, options: dict | None = None, family: str) -> Callable[..., Agent]:
    """The factory ``factory(**hyperparameters) -> Agent`` of agent ``text`` with ``options``,
    for a sweep of ``horizon`` rounds on an environment of ``family``
    (:meth:`AgentProgram.bound` of :func:`agent_program`)."""
    return agent_program(text, horizon=horizon, options=options, family=family).bound()


def check_options(text: str, options: dict) -> None:
    """Refuses (ValueError) an option that a registered agent does not read, listing the ones it
    does: its static options and its numeric hyperparameters (a fixed value; a grid varies
    them). Agents given as module:attribute are checked when their factory is called."""
    name, param = parse_agent(text)
    if ":" in name:
        return
    entry = AGENTS[name]
    if entry.options is not None:
        numeric = {k for (n, _), names in _HYPERPARAMETERS.items() if n == name for k in names}
        unknown = sorted(set(options) - set(entry.options) - numeric)
        if unknown:
            valid = ", ".join(dict.fromkeys(list(entry.options) + sorted(numeric))) or "none"
            raise V.ArgumentError("agents", f"{V.name('agents')}[{agent_label(name, param)}]: unknown option {', '.join(unknown)} (valid: {valid})")
        for key in sorted(set(options) & numeric - set(entry.options)):
            value = options[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise V.ArgumentError(key, f"{V.name('agents')}[{agent_label(name, param)}]: {V.name(key)} must be a "
                                           f"number, got {value!r}")


def hyperparameters(text: str, family: str) -> tuple[str, ...] | None:
    """The numeric hyperparameters an agent's grid may vary (None: not known)."""
    name, _ = parse_agent(text)
    return _HYPERPARAMETERS.get((name, family))


def _builtin(name, families, options, help, takes_param=False):
    def deco(make):
        AGENTS[name] = RegisteredAgent(name, make, families, options, help, takes_param)
        return make

    return deco


# --- the library's environments ----------------------------------------------------------


@functools.partial(register_env, "semi-bandit", family="linear",
                   help="linear semi-bandit with one revealing action (the paper's experiments; d=3, K=10)")
def _semi_bandit(key, d=3, arms=10, sigma=1.0, dtype=None):
    return linear.semi_bandit(key, d, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "semi-bandit-authors", family="linear",
                   help="the revealing semi-bandit as the authors' code draws it: f* = e1, N(0,1) features not "
                        "normalised, action 0 revealing (possibly optimal) (d=3, K=10)")
def _semi_bandit_authors(key, d=3, arms=10, sigma=1.0, dtype=None):
    return linear.semi_bandit_authors(key, d, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "linear-bandit", family="linear",
                   help="plain linear bandit, M_pi = phi_pi^T (d=3, K=10)")
def _linear_bandit(key, d=3, arms=10, sigma=1.0, dtype=None):
    return linear.linear_bandit(key, d, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "mab", family="linear",
                   help="K-armed Gaussian bandit as a linear bandit (phi_pi = e_pi; K=10)")
def _mab(key, arms=10, sigma=1.0, dtype=None):
    return linear.multi_armed_bandit(key, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "finite-mab", family="finite",
                   help="K-armed Gaussian bandit with M random mean vectors (finite class; K=5, M=30)")
def _finite_mab(key, arms=5, models=30, sigma=1.0, dtype=None):
    return finite.multi_armed_bandit_class(key, arms, models, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "finite-revealing", family="finite",
                   help="finite class with an informative but costly revealing action, gain 3 (K=10, M=30)")
def _finite_revealing(key, arms=10, models=30, sigma=1.0, gain=3.0, dtype=None):
    return finite.revealing_class(key, arms, models, sigma=sigma, gain=gain, dtype=dtype)


@functools.partial(register_env, "finite-revealing-plain", family="finite",
                   help="finite class with the paper's revealing action, gain 1 (K=10, M=30)")
def _finite_revealing_plain(key, arms=10, models=30, sigma=1.0, dtype=None):
    return finite.revealing_class(key, arms, models, sigma=sigma, gain=1.0, dtype=dtype)


@functools.partial(register_env, "finite-bernoulli", family="finite",
                   help="K-armed Bernoulli bandit with M random probability vectors (K=5, M=30)")
def _finite_bernoulli(key, arms=5, models=30, dtype=None):
    return finite.bernoulli_bandit_class(key, arms, models, dtype=dtype)


# The instance zoo (e2d_jax.envs.zoo): the instances the paper argues from and partial-monitoring games.
register_env("end-of-optimism", lambda key, eps=0.01, alpha=1.0, sigma=1.0, dtype=None: zoo.end_of_optimism(
    key, eps=eps, alpha=alpha, sigma=sigma, dtype=dtype), family="linear",
    help="the end-of-optimism instance: 3 actions in R^2, the second eps-suboptimal, the third informative (eps=0.01)")
register_env("hard-semi-bandit", lambda key, d=3, sigma=1.0, dtype=None: zoo.hard_semi_bandit(
    key, d=d, sigma=sigma, dtype=dtype), family="linear",
    help="a semi-bandit whose revealing action has zero reward (d=3, K=4)")
register_env("large-gaps", lambda key, sigma=1.0, dtype=None: zoo.large_gaps(key, sigma=sigma, dtype=dtype),
             family="linear", help="a linear bandit in R^2 with large gaps (K=4)")
register_env("heteroscedastic", lambda key, d=3, rho=0.5, eps=0.1, sigma=1.0, dtype=None: zoo.heteroscedastic(
    key, d=d, rho=rho, eps=eps, sigma=sigma, dtype=dtype), family="linear",
    help="two copies of the unit sign vectors with different noise and rewards (d=3, K=16)")
register_env("simple-bandit", lambda key, d=3, arms=10, sigma=1.0, dtype=None: zoo.simple_bandit(
    key, d=d, arms=arms, sigma=sigma, dtype=dtype), family="linear",
    help="a linear bandit with N(0,1) features and f* = e1, as the authors' code draws it (d=3, K=10)")
register_env("apple-tasting", lambda key, models=19, dtype=None: zoo.apple_tasting(key, models=models, dtype=dtype),
             family="finite", help="apple tasting, a locally observable partial-monitoring game (M=19)")
register_env("label-efficient", lambda key, models=19, dtype=None: zoo.label_efficient(key, models=models, dtype=dtype),
             family="finite", help="label-efficient prediction, globally but not locally observable (M=19)")
register_env("dynamic-pricing", lambda key, arms=4, levels=4, dtype=None: zoo.dynamic_pricing(
    key, prices=arms, levels=levels, dtype=dtype), family="finite",
    help="dynamic pricing with K prices and a grid of valuation distributions, not locally observable (K=4)")


# --- the library's agents ------------------------------------------------------------------

def _static_options(builders: dict) -> dict:
    """``{option: families}``: the static options of an agent whose implementation per family is
    ``builders`` (``{family: builder}``), read from the builders' signatures: the keyword
    arguments whose default is a string, and ``solver`` (numeric hyperparameters go in grids)."""
    out: dict = {}
    for family, build in builders.items():
        for p in inspect.signature(build).parameters.values():
            if p.kind == p.KEYWORD_ONLY and (isinstance(p.default, str) or p.name == "solver"):
                out.setdefault(p.name, []).append(family)
    return {k: tuple(v) for k, v in out.items()}


_E2D_BUILDERS = {
    "anytime-e2d": {"linear": e2d_linear.anytime_e2d, "finite": e2d_finite.anytime_e2d},
    "e2d": {"linear": e2d_linear.fixed_horizon_e2d, "finite": e2d_finite.fixed_horizon_e2d},
}
#: ``{agent: {option: families}}``: the E2D agents' static options, from their builders'
#: signatures, and ``solver_iters`` (the solver's iteration budget) wherever ``solver`` is.
E2D_OPTIONS = {name: {**opts, "solver_iters": opts["solver"]}
               for name, opts in ((n, _static_options(b)) for n, b in _E2D_BUILDERS.items())}

_HYPERPARAMETERS = {
    ("anytime-e2d", "linear"): ("eps2_scale", "reg"), ("anytime-e2d", "finite"): ("eps2_scale", "eta"),
    ("e2d", "linear"): ("lam", "lam_scale", "reg"), ("e2d", "finite"): ("lam", "lam_scale", "eta"),
    ("ucb", "linear"): ("delta", "radius", "reg"), ("ucb", "finite"): ("delta", "radius", "reg"),
    ("ts", "linear"): ("scale", "reg"), ("ts", "finite"): ("scale", "reg"), ("ts-finite", "finite"): ("eta",),
    ("ids", "linear"): ("delta", "reg", "radius"), ("ids", "finite"): ("eta",),
}


def agent_solver(name: str | None, iters: int | None, default: S.Solver) -> S.Solver:
    """An E2D agent's solver from the ``solver`` and ``solver_iters`` options: the preset
    ``name`` of :data:`e2d_jax.dec.solvers.SOLVERS` (None: ``default``, the agent's own), with
    its iteration budget set to ``iters`` (that of the inner solver of a lambda search)."""
    solver = default if name is None else S.resolve(name)
    if iters is not None:
        if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
            raise V.ArgumentError("solver_iters", f"{V.name('solver_iters')} must be an integer >= 1, got {iters!r}")
        if isinstance(solver, S.LambdaSearch):
            inner = solver.inner if solver.inner is not None else S.SOLVERS["saddle"]
            solver = solver.replace(inner=inner.replace(maxiter=iters))
        else:
            changes = {"maxiter": iters}
            if hasattr(solver, "check_every"):
                changes["check_every"] = min(solver.check_every, iters)
            solver = solver.replace(**changes)
    return solver


def _e2d_kwargs(request: AgentRequest, default_solver: S.Solver | None) -> dict:
    """The builder's keyword arguments from an E2D entry's static options (checked for the
    family; their values are checked by the builder)."""
    families = E2D_OPTIONS[request.name]
    kwargs = {}
    for key, value in request.options.items():
        if request.family not in families[key]:
            raise V.ArgumentError(key, f"{V.name('agents')}[{request.label}]: option {V.name(key)} applies to "
                                       f"{' and '.join(families[key])} models only; the environment is a "
                                       f"{request.family} model class")
        if key not in ("solver", "solver_iters"):
            kwargs[key] = value
    if "solver" in request.options or "solver_iters" in request.options:
        if default_solver is None and request.options.get("solver") is None:
            raise V.ArgumentError("solver_iters", f"{V.name('agents')}[{request.label}]: {V.name('solver_iters')} "
                                                  f"needs a {V.name('solver')} on {request.family} models")
        kwargs["solver"] = agent_solver(request.options.get("solver"), request.options.get("solver_iters"),
                                        default_solver)
    return kwargs


_ANYTIME_OPTIONS = {
    "delta": ("gap_type", "delta"), "delta_f": ("gap_type", "delta_f"),
    "sample": ("estimate", "sample"), "mixture": ("estimate", "mixture"),
    "track": ("lam_search", "track"), "global": ("lam_search", "global"),
}


@_builtin("anytime-e2d", ("linear", "finite"), tuple(E2D_OPTIONS["anytime-e2d"]),
          "Anytime-E2D (Algorithm 1): ridge and eps_t^2 = r/t on linear models (the paper's d/t: eps2_schedule "
          "dim), EWA and log|M|/t on finite classes (finite: @delta, @mixture, @track joined by '+')",
          takes_param=True)
def _anytime(request: AgentRequest):
    options = {}
    if request.param:
        if request.family == "linear":
            raise V.ArgumentError("agents", f"{V.name('agents')}: {request.label}: anytime-e2d takes '@' options on finite classes only")
        for token in request.param.split("+"):
            if token not in _ANYTIME_OPTIONS:
                raise V.ArgumentError("agents", f"{V.name('agents')}: {request.label}: unknown option {token!r} "
                                 f"(choose from {', '.join(_ANYTIME_OPTIONS)}, joined by '+')")
            field, value = _ANYTIME_OPTIONS[token]
            options[field] = value
    if request.family == "linear":
        default = e2d_linear.AGENT_SOLVER
    else:
        default = e2d_finite.default_solver(options.get("estimate", "sample"), options.get("lam_search", "global"))
    kwargs = {**_e2d_kwargs(request, default), **options}
    build = e2d_linear.anytime_e2d if request.family == "linear" else e2d_finite.anytime_e2d
    build(**kwargs)  # checks the static options now, with the family's own message
    return AgentProgram(key=("anytime-e2d", request.family, tuple(sorted(kwargs.items()))),
                        factory=functools.partial(anytime_e2d, **kwargs), defaults=_numeric_defaults(build))


@_builtin("e2d", ("linear", "finite"), tuple(E2D_OPTIONS["e2d"]),
          "fixed-horizon E2D tuned for the run's horizon; e2d-nN tunes for horizon N (linear: lambda = "
          "sqrt(N/(4 log N)); finite: the regret-bound minimiser)", takes_param=True)
def _e2d(request: AgentRequest):
    n = request.horizon
    if request.param is not None:
        try:
            n = int(request.param)
        except ValueError:
            raise V.ArgumentError("agents", f"{V.name('agents')}: e2d-nN (or e2d@N) needs an integer horizon N >= 2, got "
                             f"{request.name}@{request.param}") from None
    if n < 2:
        raise V.ArgumentError("agents", f"{V.name('agents')}: e2d needs a tuning horizon >= 2, got {n}")
    default = e2d_linear.E2D_SOLVER if request.family == "linear" else e2d_finite.E2D_SOLVER
    kwargs = _e2d_kwargs(request, default)
    build = e2d_linear.fixed_horizon_e2d if request.family == "linear" else e2d_finite.fixed_horizon_e2d
    build(horizon=n, **kwargs)  # checks the static options now, with the family's own message
    if request.family == "linear":
        # lambda_N is a number: E2D tuned for several horizons is one program, one lambda a cell.
        key = ("e2d", "linear", tuple(sorted(kwargs.items())))
        return AgentProgram(key=key, factory=functools.partial(fixed_horizon_e2d, **kwargs),
                            numbers=(("lam", e2d_linear.horizon_lambda(n)),),
                            defaults=_numeric_defaults(e2d_linear.fixed_horizon_e2d))
    return functools.partial(fixed_horizon_e2d, horizon=n, **kwargs)


@_builtin("ucb", ("linear", "finite"), ("delta",),
          "OFUL / LinUCB on all observations, ||f*|| bound from the class (finite: its linear view); delta = 0.01, "
          "ucb@anytime (option delta = \"anytime\"): delta_s = 1/(s log s) as in the authors' code", takes_param=True)
def _ucb(request: AgentRequest):
    bad = [v for v in (request.param, request.options.get("delta")) if v not in (None, "anytime")]
    if bad:
        raise V.ArgumentError("delta", f"{V.name('agents')}[{request.label}]: option {V.name('delta')} takes "
                                       f"'anytime' (ucb@anytime) or a number, got {bad[0]!r}")
    if request.param is None and "delta" not in request.options:
        return ucb

    def anytime_ucb(**hyperparameters):
        if "delta" in hyperparameters:
            raise V.ArgumentError("delta", f"{V.name('agents')}[{request.label}]: {V.name('delta')} is 'anytime'; "
                                           "a grid over delta needs plain ucb")
        return ucb(delta="anytime", **hyperparameters)

    return anytime_ucb


@_builtin("ts", ("linear", "finite"), (), "Thompson sampling with the ridge Gaussian posterior (finite: linear view)")
def _ts(request: AgentRequest):
    return thompson_sampling


@_builtin("ts-finite", ("finite",), (), "Thompson sampling on the finite class (EWA posterior, eta = 1)")
def _posterior_sampling(request: AgentRequest):
    return posterior_sampling


_IDS_OPTIONS = {
    "directed": ("info_gain", "directed"), "worst-case": ("info_gain", "worst-case"),
    "variance": ("info_gain", "variance"), "difference": ("gap_estimate", "difference"),
    "value": ("gap_estimate", "value"), "full": ("sampling", "full"), "fast": ("sampling", "fast"),
}


@_builtin("ids", ("linear", "finite"), ("info_gain", "gap_estimate", "sampling"),
          "information-directed sampling: directed information gain and difference gaps on linear models, "
          "Bayesian (EWA posterior, variance gain) on finite classes (linear: @worst-case, @value, @fast joined "
          "by '+')", takes_param=True)
def _ids(request: AgentRequest):
    kwargs = dict(request.options)
    if request.param:
        for token in request.param.split("+"):
            if token not in _IDS_OPTIONS:
                raise V.ArgumentError("agents", f"{V.name('agents')}: {request.label}: unknown option {token!r} "
                                 f"(choose from {', '.join(_IDS_OPTIONS)}, joined by '+')")
            field, value = _IDS_OPTIONS[token]
            kwargs[field] = value
    if request.family == "finite" and kwargs.get("info_gain", "variance") != "variance":
        raise V.ArgumentError("agents", f"{V.name('agents')}[{request.label}]: on finite classes ids uses the variance information gain")
    if request.family == "finite":
        kwargs.pop("gap_estimate", None)
    ids(**kwargs)  # checks the options now
    return functools.partial(ids, **kwargs)


#: Every static option of the registered agents (a front end offers these; each agent's own are
#: in its entry's ``options``).
AGENT_OPTIONS = tuple(sorted({o for entry in AGENTS.values() for o in (entry.options or ())}))
