"""Names of environments and agents: registering them, looking them up, ``module:attribute``.

Wherever a sweep takes an environment or an agent by name, it takes one of

* a registered name (the library's own are registered by :mod:`e2d_jax.experiments.catalogue`;
  add yours with :func:`register_env` / :func:`register_agent`), or
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

An agent's name is parsed once, where it enters (:func:`parse_agent`, into an
:class:`AgentRef`); the sweep resolves it for the environment's model family once
(:meth:`AgentRef.factory`) and nothing downstream reads the name again. Names may carry one
parameter after ``@``: fixed-horizon E2D tuned for n = 500 is ``e2d@500``, also written
``e2d-n500`` (the name used in every output); other agents read ``@`` options joined by ``+``
(``anytime-e2d@track+mixture``, ``ucb@anytime``).
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import inspect
import os
import re
import sys
from typing import Callable

import jax

from e2d_jax import _checks as V
from e2d_jax.dec import solvers as S
from e2d_jax.envs.family import FAMILIES, environment_of, params_family
from e2d_jax.sim.rollout import instance_key, instance_keys
from e2d_jax.types import Agent

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def did_you_mean(word: str, choices) -> str:
    """`` (did you mean 'x'?)`` for a close match among ``choices``, else an empty string."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def keywords(fn, skip: int = 0) -> tuple[str, ...] | None:
    """The keyword arguments ``fn`` takes (after its first ``skip`` parameters); None when it
    takes ``**kwargs`` or has no readable signature."""
    try:
        params = list(inspect.signature(fn).parameters.values())[skip:]
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


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
        return keywords(self.builder, skip=1)


ENVIRONMENTS: dict[str, RegisteredEnv] = {}


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
    if not re.fullmatch(_NAME, name):
        raise V.ArgumentError("name", f"{V.name('name')} must be letters, digits and - . _, got {name!r}")
    if not callable(builder):
        raise ValueError(f"builder must be callable (key, **options) -> params, got {type(builder).__name__}")
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES} or None, got {family!r}")
    ENVIRONMENTS[name] = RegisteredEnv(name, builder, family, help)
    return builder


def resolve_env(name: str) -> RegisteredEnv:
    """The registered environment ``name``, or ``module:attribute`` loaded as one."""
    if ":" in name:
        return RegisteredEnv(name, load_attribute(name, "env"), None, f"instance builder {name}")
    if name not in ENVIRONMENTS:
        raise V.ArgumentError("env", f"{V.name('env')}: unknown environment {name!r}{did_you_mean(name, ENVIRONMENTS)} "
                                     f"(choose from {', '.join(sorted(ENVIRONMENTS))}, or give module:attribute of "
                                     "an instance builder of your own)")
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
            valid = [a for a in accepted if a != "dtype"]
            raise V.ArgumentError(unknown[0], f"{V.name('env')}: {entry.name} takes no option "
                                              f"{', '.join(V.name(u) for u in unknown)}"
                                              f"{did_you_mean(unknown[0], valid)} (its options: "
                                              f"{', '.join(valid) or 'none'})")
    return opts


def _check_built(entry: RegisteredEnv, params):
    family = params_family(params)
    if family is None:
        raise V.ArgumentError("env", f"{V.name('env')}: {entry.name} returned a {type(params).__name__}; an instance "
                                     "builder must return LinearEnvParams or FiniteEnvParams, as the library's "
                                     "builders do (e.g. e2d_jax.envs.linear.linear_side_observation or "
                                     "e2d_jax.envs.finite.finite_class), or a contextual instance "
                                     "(e2d_jax.envs.contextual.from_contexts or from_draw)")
    if entry.family is not None and family != entry.family:
        raise V.ArgumentError("env", f"{V.name('env')}: {entry.name} is registered as {entry.family} but built a "
                                     f"{family} instance")
    return family


def _call_builder(entry: RegisteredEnv, opts: dict, call):
    try:
        return call()
    except TypeError as err:
        raise V.ArgumentError("env", f"{V.name('env')}: calling {entry.name}(key, "
                                     f"{', '.join(f'{k}=...' for k in opts)}) failed: {err}") from None


def build_instances(name: str, instance_seeds, options: dict | None = None, dtype: str | None = None):
    """``(Environment, params, family)`` with a leading instance axis: the builder vmapped over
    the keys of ``instance_seeds`` (instance ``i`` equals the builder at ``instance_key(seed)``)."""
    entry = resolve_env(name)
    opts = env_options(entry, dict(options or {}), dtype)
    keys = instance_keys(instance_seeds)
    params = _call_builder(entry, opts, lambda: jax.vmap(lambda k: entry.builder(k, **opts))(keys))
    family = _check_built(entry, params)
    return environment_of(params), params, family


def build_instance(name: str, instance_seed: int = 0, options: dict | None = None, dtype: str | None = None):
    """``(Environment, params, family)`` of one instance, drawn from ``instance_key(instance_seed)``."""
    entry = resolve_env(name)
    opts = env_options(entry, dict(options or {}), dtype)
    params = _call_builder(entry, opts, lambda: entry.builder(instance_key(instance_seed), **opts))
    family = _check_built(entry, params)
    return environment_of(params), params, family


def instance_shapes(name: str, options: dict | None = None, dtype: str | None = None):
    """``(params, family)`` of one instance as abstract shapes (``jax.eval_shape``; nothing is
    computed)."""
    entry = resolve_env(name)
    opts = env_options(entry, dict(options or {}), dtype)
    params = _call_builder(entry, opts, lambda: jax.eval_shape(lambda k: entry.builder(k, **opts), instance_key(0)))
    return params, _check_built(entry, params)


# --------------------------------------------------------------------------------------
# Agents


def tokens(mapping: dict) -> Callable[[str], dict]:
    """An ``@`` parameter of options joined by ``+``: ``mapping`` is ``{token: (argument,
    value)}`` (``anytime-e2d@track+mixture``)."""
    def parse(text: str) -> dict:
        out = {}
        for token in text.split("+"):
            if token not in mapping:
                raise ValueError(f"unknown option {token!r}{did_you_mean(token, mapping)} (choose from "
                                 f"{', '.join(mapping)}, joined by '+')")
            argument, value = mapping[token]
            out[argument] = value
        return out

    parse.choices = tuple(mapping)
    return parse


@dataclasses.dataclass(frozen=True)
class RegisteredAgent:
    """An agent name.

    Attributes:
      name: the name.
      builders: ``{family: factory}``: the factory of each model family it runs on (one
        factory may serve several), or None for a factory of one's own that runs on any.
      factory: a factory of one's own (when ``builders`` is None).
      param: parses the text after ``@`` into the factory's keyword arguments (None: the
        agent takes no ``@`` parameter).
      help: one line for listings.
      front: the function a notebook calls for this agent on any family (e.g.
        ``e2d_jax.anytime_e2d``, which picks the family's factory by the model it meets); it
        builds the same program as ``builders`` (listings show it). None: the builders are it.
    """

    name: str
    builders: dict | None = None
    factory: Callable | None = None
    param: Callable[[str], dict] | None = None
    help: str = ""
    front: Callable | None = None

    def families(self) -> tuple | None:
        return None if self.builders is None else tuple(sorted(self.builders))

    def builder(self, family: str | None) -> Callable:
        return self.factory if self.builders is None else self.builders[family]

    def options(self, family: str | None = None) -> tuple | None:
        """The keyword options its factory takes on ``family`` (every family's when None);
        ``solver_iters`` wherever ``solver`` is. None: any (a factory taking ``**kwargs``)."""
        if self.builders is None:
            return keywords(self.factory)
        names: list = []
        for fam, build in sorted(self.builders.items()):
            if family is None or fam == family:
                names += [k for k in keywords(build) or () if k != "horizon"]
        if "solver" in names:
            names.append("solver_iters")
        return tuple(dict.fromkeys(names))

    def valid_options(self) -> str:
        """The options, for a message: ``valid on finite models: ...; on linear models: ...``
        (one list when they are the same on every family, or the agent runs on one)."""
        per = {fam: self.options(fam) for fam in (self.families() or ())}
        if len(set(per.values())) <= 1:
            return "valid: " + (", ".join(self.options() or ()) or "none")
        return "valid on " + "; on ".join(f"{fam} models: {', '.join(opts) or 'none'}" for fam, opts in per.items())


AGENTS: dict[str, RegisteredAgent] = {}


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
    if not re.fullmatch(_NAME, name):
        raise V.ArgumentError("name", f"{V.name('name')} must be letters, digits and - . _, got {name!r}")
    if not callable(factory):
        raise ValueError(f"factory must be callable (**kwargs) -> Agent, got {type(factory).__name__}")
    AGENTS[name] = RegisteredAgent(name, factory=factory, help=help)
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


@dataclasses.dataclass(frozen=True)
class AgentRef:
    """An agent as written (``"e2d-n500"``, ``"ids@worst-case"``, ``"my_agents:greedy"``),
    parsed once: the registered agent and its ``@`` parameter's arguments."""

    text: str
    entry: RegisteredAgent
    param: str | None = None
    arguments: tuple = ()  # sorted (name, value) pairs the '@' parameter sets

    @property
    def label(self) -> str:
        return agent_label(self.entry.name if ":" not in self.text else self.text, self.param)

    def kwargs(self, options: dict, family: str, horizon: int) -> dict:
        """The family's factory's keyword arguments for ``options`` (static options and fixed
        numbers): the ``@`` parameter's arguments, the options (each checked to apply on
        ``family``), the solver as a value with its budget, and ``horizon`` where the factory
        takes one and it is not set."""
        entry = self.entry
        families = entry.families()
        if families is not None and family not in families:
            raise V.ArgumentError("agents", f"{V.name('agents')}: {entry.name} does not run on {family} models (it "
                                            f"runs on {', '.join(families)})")
        for key in dict(self.arguments):
            if key not in (keywords(entry.builder(family)) or (key,)):
                raise V.ArgumentError("agents", f"{V.name('agents')}: {self.label}: the '@' option {key} applies "
                                                f"to other model families than {family} models")
        accepted = entry.options(family)
        if accepted is not None:
            for key in options:
                if key not in accepted:
                    everywhere = entry.options() or ()
                    if key in everywhere:
                        on = [f for f in families or () if key in (entry.options(f) or ())]
                        raise V.ArgumentError(key, f"{V.name('agents')}[{self.label}]: option {V.name(key)} applies "
                                                   f"to {' and '.join(on)} models only; the environment is a "
                                                   f"{family} model class")
                    raise V.ArgumentError(key, f"{V.name('agents')}[{self.label}]: unknown option {V.name(key)}"
                                               f"{did_you_mean(key, accepted)} (valid on {family} models: "
                                               f"{', '.join(accepted) or 'none'})")
        kwargs = {**dict(self.arguments), **{k: v for k, v in options.items() if k != "solver_iters"}}
        build = entry.builder(family)
        if "horizon" in (keywords(build) or ()) and "horizon" not in kwargs and "lam" not in kwargs:
            kwargs["horizon"] = horizon
        if "solver" in kwargs and kwargs["solver"] is not None:
            kwargs["solver"] = S.resolve(kwargs["solver"])
        if options.get("solver_iters") is not None:
            solver = kwargs.get("solver")
            if solver is None:  # the factory's own default, as it resolves it
                solver = build(**kwargs).config
                solver = dict(getattr(solver, "static", ())).get("solver") if solver is not None else None
            if solver is None:
                raise V.ArgumentError("solver_iters", f"{V.name('agents')}[{self.label}]: {V.name('solver_iters')} "
                                                      f"needs a {V.name('solver')} on {family} models")
            kwargs["solver"] = S.with_budget(solver, options["solver_iters"], family)
        return kwargs

    def factory(self, options: dict, family: str, horizon: int) -> Callable[..., Agent]:
        """``factory(**numbers) -> Agent`` of this entry with ``options`` on ``family``: the
        family's factory with its keyword arguments bound (:meth:`kwargs`). The factory is
        called once here, so that a bad option value is refused now with its own message."""
        kwargs = self.kwargs(options, family, horizon)
        build = functools.partial(self.entry.builder(family), **kwargs)
        if self.entry.builders is not None:
            try:
                build()  # the factory's own checks, before anything is traced
            except ValueError as err:
                argument = getattr(err, "argument", None) or V.leading_argument(str(err)) or "agents"
                raise V.ArgumentError(argument, f"{V.name('agents')}[{self.label}]: {err}") from None
        return build


def parse_agent(text: str) -> AgentRef:
    """``"name"``, ``"name@param"``, ``"e2d-nN"`` or ``"module:attribute"`` -> :class:`AgentRef`;
    a ValueError naming ``agents`` for an unknown name (with the closest known one) or a bad
    ``@`` parameter."""
    if not isinstance(text, str) or not text.strip():
        raise V.ArgumentError("agents", f"{V.name('agents')}: every agent needs a name (a string), got {text!r}")
    text = text.strip()
    if ":" in text:
        factory = load_attribute(text, f"agents[{text}]")
        return AgentRef(text, RegisteredAgent(agent_label(text), factory=factory, help=f"agent factory {text}"))
    name, _, param = text.partition("@")
    if "@" not in text and name.startswith("e2d-n"):
        name, param = "e2d", name[len("e2d-n"):]
    if name not in AGENTS:
        raise V.ArgumentError("agents", f"{V.name('agents')}: unknown agent {name!r}{did_you_mean(name, AGENTS)} "
                                        f"(choose from {', '.join(sorted(AGENTS))}, or give module:attribute of an "
                                        "agent factory of your own)")
    entry = AGENTS[name]
    if not param:
        return AgentRef(text, entry)
    if entry.param is None:
        raise V.ArgumentError("agents", f"{V.name('agents')}: {name} takes no '@' parameter, got "
                                        f"{agent_label(name, param)!r}")
    try:
        arguments = entry.param(param)
    except ValueError as err:
        raise V.ArgumentError("agents", f"{V.name('agents')}: {agent_label(name, param)}: {err}") from None
    return AgentRef(text, entry, param, tuple(sorted(arguments.items())))


def agent_factory(text: str, *, horizon: int, options: dict | None = None, family: str) -> Callable[..., Agent]:
    """The factory ``factory(**numbers) -> Agent`` of agent ``text`` with ``options``, for a
    sweep of ``horizon`` rounds on an environment of ``family`` (what a sweep compiles)."""
    return parse_agent(text).factory(dict(options or {}), family, horizon)


def agent_options() -> tuple:
    """Every option a registered agent reads (a front end offers these)."""
    return tuple(sorted({o for entry in AGENTS.values() for o in (entry.options() or ())}))
