"""What the simulator compiles for an agent: one program, with the agent's numbers as inputs.

An agent reaches :func:`e2d_jax.simulate` as an :class:`~e2d_jax.types.Agent`, or as a factory
with a grid of hyperparameters; a sweep (:mod:`e2d_jax.experiments`) hands it the agents of its
file or command line. :func:`program_of` turns each into a :class:`Program` and a table of
numbers (one row per hyperparameter cell):

* an agent of the library (its ``config`` an :class:`~e2d_jax.types.AgentSpec`, or a
  :class:`~e2d_jax.types.ByFamily` of them) is compiled as ``spec.factory(**static,
  **numbers)`` with *every* numeric hyperparameter a traced input, whether it came as an agent
  object, a grid of one value, a grid of many, or a name on the command line. So the same
  agent is the same compiled program fed the same numbers, and gives the same bits, through
  every door; and agents that differ only in numbers (E2D tuned for several horizons, the
  cells of a grid) are one program;
* an agent of one's own without a spec is compiled as it is (its numbers are constants of the
  program); with a grid, its factory is called with the grid's values traced.

The interaction contract (:func:`e2d_jax.sim.rollout.check_agent`) is checked once per program
and instance shape (:func:`check_program`), before its first compile.
"""
from __future__ import annotations

import difflib
import functools
from collections.abc import Hashable
from typing import Callable, NamedTuple

import jax
import numpy as np

from e2d_jax.envs import linear
from e2d_jax.envs.family import environment_of
from e2d_jax.sim.rollout import check_agent
from e2d_jax.types import Agent, AgentSpec, ByFamily, Environment, PyTree


class Program(NamedTuple):
    """An agent as the simulator compiles it.

    Attributes:
      key: identifies the compiled code (equal keys: the same program).
      build: ``build(**numbers) -> Agent``, called inside the compiled function with each
        lane's numbers (traced scalars).
      names: the names of the numbers, in the order of the table's columns.
      label: the agent's default name in tables and figures.
      gap_type: the gaps of a library E2D agent's programs (None for other agents), checked
        against each concrete instance (:func:`check_instance`).
    """

    key: Hashable
    build: Callable[..., Agent]
    names: tuple
    label: str = "agent"
    gap_type: str | None = None


def spec_of(agent: Agent, family: str | None) -> AgentSpec | None:
    """The :class:`~e2d_jax.types.AgentSpec` of an agent on a model family (a ``ByFamily``
    config resolved for ``family``), or None for an agent without one."""
    config = agent.config
    if isinstance(config, ByFamily):
        config = config.for_family(family)
    return config if isinstance(config, AgentSpec) else None


def from_spec(spec: AgentSpec) -> Program:
    """The program of a library agent: its factory with the static arguments bound, the numbers
    traced."""
    return Program(key=("spec",) + spec.program, build=functools.partial(_build_spec, spec.factory, spec.static),
                   names=tuple(k for k, _ in spec.numbers), label=spec.name, gap_type=dict(spec.static).get("gap_type"))


def _build_spec(factory, static, **numbers) -> Agent:
    return factory(**dict(static), **numbers)


def _object_key(obj) -> Hashable:
    """What identifies an agent or factory without a spec: its ``config`` where it has one,
    a partial's function and arguments, else the object itself."""
    if isinstance(obj, Agent):
        return ("agent", obj.config) if obj.config is not None else ("object", id(obj), obj)
    if isinstance(obj, functools.partial):
        try:
            key = ("partial", obj.func, obj.args, tuple(sorted(obj.keywords.items())))
            hash(key)
            return key
        except TypeError:
            pass
    return ("object", id(obj), obj)


def _name_of(obj) -> str:
    func = getattr(obj, "func", obj)
    name = getattr(func, "__name__", None)
    return name if name and name != "<lambda>" else "agent"


def _grid(hparams: dict) -> tuple[dict, int]:
    """The grid as float64 NumPy columns of equal length; errors name ``hparams``."""
    out, size = {}, None
    for name, values in hparams.items():
        arr = np.asarray(values, np.float64).reshape(-1)
        if np.ndim(values) > 1 or arr.shape[0] == 0:
            raise ValueError(f"hparams[{name!r}] must be a non-empty 1-D sequence of values, got shape "
                             f"{np.shape(values)}")
        if size is not None and arr.shape[0] != size:
            raise ValueError(f"hparams: every axis needs the same number of cells (use hparam_grid for a "
                             f"product); {name!r} has {arr.shape[0]}, others {size}")
        size = arr.shape[0]
        out[name] = arr
    return out, size


def program_of(agent, family: str | None, hparams: dict | None = None) -> tuple[Program, np.ndarray]:
    """``(program, numbers)``: how :func:`e2d_jax.simulate` compiles ``agent`` on a model of
    ``family``, and the numbers of each cell, (H, len(program.names)) float64 (H = 1 without a
    grid).

    Args:
      agent: an :class:`~e2d_jax.types.Agent`; with ``hparams``, a factory called with them.
      family: the model family of the instance (``"linear"``, ``"finite"``, or None for a type
        of one's own).
      hparams: ``{name: values (H,)}``, the cells of a grid.
    """
    if not hparams:
        if not isinstance(agent, Agent):
            if callable(agent):
                name = _name_of(agent)
                raise ValueError(f"agent must be an Agent; got the factory {name!r} itself: call it, e.g. {name}()")
            raise ValueError(f"agent must be an e2d_jax.Agent (from a factory such as e2d_jax.ucb()), got "
                             f"{type(agent).__name__}")
        spec = spec_of(agent, family)
        if spec is not None:
            program = from_spec(spec)
            return program, np.asarray([[v for _, v in spec.numbers]], np.float64).reshape(1, len(program.names))
        return Program(key=_object_key(agent), build=lambda: agent, names=(), label=_name_of(agent)), np.zeros((1, 0))
    if isinstance(agent, Agent) or not callable(agent):
        raise ValueError("agent: with hparams, agent must be a factory called with the hyperparameters, "
                         "e.g. simulate(params, e2d_jax.anytime_e2d, hparams={'eps2_scale': [0.1, 1.0]})")
    return factory_program(agent, family, hparams)


def factory_program(factory, family: str | None, hparams: dict | None = None) -> tuple[Program, np.ndarray]:
    """``(program, numbers)`` of a factory with the cells ``hparams`` (``{}``: one cell of its
    defaults): a library factory's spec with the grid's columns replaced (a grid name that is
    not one of its numbers is refused, naming ``hparams``), else the factory itself called
    with the grid's values."""
    grid, size = _grid(hparams or {})
    probe = None
    if grid:
        # A library factory's spec, read from its defaults first (so that a grid over what is not
        # one of its numbers is named as such); a factory that needs arguments, with the grid's.
        try:
            probe = factory()
        except (TypeError, ValueError):
            probe = None
        if probe is not None and (not isinstance(probe, Agent) or spec_of(probe, family) is None):
            probe = None
    if probe is None:
        probe = factory(**{k: float(v[0]) for k, v in grid.items()})
    if not isinstance(probe, Agent):
        raise ValueError(f"agent: the factory {_name_of(factory)!r} must return an e2d_jax.Agent, got "
                         f"{type(probe).__name__}")
    spec = spec_of(probe, family)
    if spec is None:
        names = tuple(sorted(grid))
        program = Program(key=("factory", _object_key(factory), names), build=factory, names=names,
                          label=_name_of(factory))
        return program, np.stack([grid[k] for k in names], axis=1) if names else np.zeros((1, 0))
    program = from_spec(spec)
    unknown = sorted(set(grid) - set(program.names))
    static = dict(spec.static)
    if unknown and all(k in static and static[k] is None for k in unknown):
        # A number whose default is None (UCB's radius: the class's bound) is static in the
        # defaults' spec; given a value, it is one of the numbers.
        try:
            valued = spec_of(factory(**{k: float(grid[k][0]) for k in unknown}), family)
        except (TypeError, ValueError):
            valued = None
        if valued is not None and set(unknown) <= {k for k, _ in valued.numbers}:
            spec, program = valued, from_spec(valued)
            unknown = []
    if unknown:
        raise ValueError(f"hparams: {', '.join(repr(u) for u in unknown)} is not a numeric hyperparameter of "
                         f"{spec.name}{_suggest(unknown[0], program.names)} (its numbers: "
                         f"{', '.join(program.names) or 'none'})")
    if grid:
        factory(**{k: float(v[0]) for k, v in grid.items()})  # the first cell's values, checked by the factory
    base = dict(spec.numbers)
    size = size or 1
    table = np.stack([grid[k] if k in grid else np.full(size, base[k]) for k in program.names], axis=1) \
        if program.names else np.zeros((size, 0))
    return program, table.reshape(size, len(program.names))


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


_CHECKED: set = set()


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(np.shape(x)), str(jax.numpy.result_type(x))) for x in leaves)


def check_program(program: Program, numbers: np.ndarray, params: PyTree, env: Environment | None = None) -> None:
    """Checks the interaction contract of ``program`` on one abstract round of ``params`` (one
    instance, no leading axis) with its first cell's numbers
    (:func:`e2d_jax.sim.rollout.check_agent`; nothing is computed), once per program, instance
    shape and environment in a process."""
    check_instance(program, params)
    key = (program.key, _signature(params), env)
    try:
        if key in _CHECKED:
            return
    except TypeError:  # an unhashable environment of one's own: check every time
        key = None
    first = {name: np.float32(numbers[0, i]) for i, name in enumerate(program.names)}
    check_agent(program.build, params, env, first)
    if key is not None:
        _CHECKED.add(key)


def lane_bytes(program: Program, numbers: np.ndarray, params: PyTree, env: Environment | None = None) -> int:
    """Bytes one lane of a compiled call holds, from shapes only (``jax.eval_shape``): its copy
    of the instance ``params`` (one instance, no leading axis) and four times its agent's state
    (for the step's temporaries); an agent that needs concrete values counts its instance only.
    An order-of-magnitude measure, for sizing calls (:func:`e2d_jax.sim.layout.lanes_for`) and
    guarding memory; computed once per program, instance shape and environment in a process."""
    env = environment_of(params, env)
    key = (program.key, _signature(params), env)
    try:
        if key in _LANE_BYTES:
            return _LANE_BYTES[key]
    except TypeError:  # an unhashable environment of one's own: measure every time
        key = None
    first = {name: np.float32(numbers[0, i]) for i, name in enumerate(program.names)}
    try:
        state = jax.eval_shape(lambda k, p: program.build(**first).init(k, env.model(p)), jax.random.key(0), params)
    except Exception:  # noqa: BLE001 - an agent that needs concrete values
        state = ()
    size = tree_bytes(params) + 4 * tree_bytes(state)
    if key is not None:
        _LANE_BYTES[key] = size
    return size


_LANE_BYTES: dict = {}


def tree_bytes(tree: PyTree) -> int:
    """Bytes of the arrays (or abstract arrays) of ``tree``."""
    return int(sum(np.prod(np.shape(x)) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(tree)))


def check_instance(program: Program, params: PyTree) -> None:
    """Checks what an agent's programs need of the instance's values (every time: it depends on
    the values, not only the shapes): gaps Delta_f need a linear game whose reward level is
    observable (:func:`e2d_jax.envs.linear.check_gap_type`)."""
    if program.gap_type is not None and isinstance(params, linear.LinearEnvParams):
        linear.check_gap_type(params.model, program.gap_type)
