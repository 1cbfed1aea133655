"""A sweep as data: what to run, expanded into a fixed, deterministic list of work units.

A :class:`SweepSpec` names an environment (a registered name or ``module:attribute``, with
its sizes and options), the instance seeds, the agents (names with static options and an
optional grid of numeric hyperparameters), the horizon, the number of seeds and the master
seed. It expands (:func:`plan`) into *programs* and work units. Agents that differ only in
numbers (the same agent and static options: E2D tuned for several horizons, a grid and a
fixed multiplier) are one program, whose cells are theirs one after the other, so they
compile once. A unit is one program's chunk of seeds: it runs *every* cell of the program on
*every* instance for its seeds in one compiled call (cells and instances are vmapped axes,
not Python loops). Each unit is a pure function of its description, so any executor may run
any unit in any order and get the same bits, and a resumed sweep runs only the units whose
files are missing.

Chunk size (seeds per unit): by default the largest multiple of the seeds one compiled call
runs (:func:`default_block`: 64 trajectories per CPU device, divided among the program's cells x
instances) that keeps a unit at most
``MAX_TRAJECTORIES`` trajectories (cells x instances x seeds) and at most ``MAX_SEEDS_PER_UNIT``
seeds (one block if even that is more), so memory stays bounded whatever the sweep's size and
a killed run loses at most one unit's work per agent; ``chunk_size`` overrides it. The layout
depends on the driver's block, so a sweep resumed on a machine with another device count
recomputes the units of the old layout (their files carry the old size in their digest);
per-seed results are the same bits either way. Every unit of a program has the same shape
(the last one is padded), so the program compiles once.

A sweep file (TOML, ``e2d-jax sweep FILE``; the repository's ``sweeps/`` folder has
examples)::

    name = "eps-constant"
    horizon = 2000
    seeds = 500
    instances = 20            # instance seeds 0..19, or a list of seeds
    [env]
    name = "semi-bandit"      # or module:attribute of an instance builder of one's own
    d = 3
    arms = 10
    [[agents]]
    name = "anytime-e2d"      # or module:attribute of an agent factory of one's own
    grid = { eps2_scale = [0.03, 0.1, 0.3, 1.0, 3.0] }
    [[agents]]
    name = "anytime-e2d"
    label = "anytime-e2d-kl"  # one name twice: each needs its own label
    divergence = "kl"
    [[agents]]
    name = "anytime-e2d"
    label = "anytime-e2d-c2"  # a fixed number: a cell of the first entry's program
    eps2_scale = 2.0

``env = "semi-bandit"`` with the sizes at the top level is the same as the ``[env]`` table.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from typing import NamedTuple

import jax
import numpy as np

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from e2d_jax import _checks as V
from e2d_jax.dec import solvers as S
from e2d_jax.experiments import registry
from e2d_jax.sim.layout import lanes_for
from e2d_jax.sim.program import Program, factory_program, lane_bytes


class SweepError(V.ArgumentError):
    """A sweep cannot start or continue (its message says why and what to do; ``argument``
    names the argument at fault, when one is)."""

    def __init__(self, message: str, argument: str | None = None):
        super().__init__(argument or V.leading_argument(message), message)


MAX_TRAJECTORIES = 4096
MAX_SEEDS_PER_UNIT = 1000

#: The conventions a spec may name (``conventions``): the information without the 1/2 of the
#: Gaussian KL, as in the authors' code (``"implementation"``), or with it, as in the paper's
#: text (``"paper-text"``).
CONVENTIONS = ("implementation", "paper-text")

_LABEL = r"[A-Za-z0-9][A-Za-z0-9._@+-]*"


def _frozen(options: dict) -> tuple:
    """Sorted (key, value) pairs of scalar options (hashable), a ``solver`` as a value of
    :mod:`e2d_jax.dec.solvers` (a name, a table of fields, or a value)."""
    out = []
    for key, value in sorted(options.items()):
        if key == "solver" and value is not None:
            value = S.resolve(value)
        elif isinstance(value, (list, tuple, dict)):
            raise ValueError(f"option {key} must be a string or a number, got {value!r}")
        out.append((key, value))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class SweepAgent:
    """One agent of a sweep, as the command line, a sweep file or Python gives it.

    Attributes:
      name: a registered name with its parameter (``"anytime-e2d"``, ``"e2d-n200"``) or
        ``module:attribute`` of an agent factory of one's own
        (:mod:`e2d_jax.experiments.registry`).
      options: static options given to the factory (e.g. ``divergence``, ``solver``,
        ``solver_iters``, ``gap_type``, ``eps2_schedule`` for the E2D agents) and numbers it
        fixes (``eps2_scale = 2.0``).
      grid: ``{hyperparameter: [values]}``; the cells are the Cartesian product (vmapped).
      tag: the agent's name in every output when one name appears more than once (e.g.
        ``"anytime-e2d-kl"`` for Anytime-E2D with other options); default :attr:`label`.
      ref: the name parsed (:class:`~e2d_jax.experiments.registry.AgentRef`), once, by
        :meth:`make`.
    """

    name: str
    options: tuple = ()  # sorted (key, value) pairs (hashable)
    grid: tuple = ()  # sorted (key, (values...)) pairs
    tag: str | None = None
    ref: registry.AgentRef | None = dataclasses.field(default=None, compare=False, repr=False)

    @staticmethod
    def make(name: str, options: dict | None = None, grid: dict | None = None, label: str | None = None) -> "SweepAgent":
        """A sweep agent from plain values (what a sweep file's ``[[agents]]`` table holds): the
        name parsed (unless given parsed, an :class:`~e2d_jax.experiments.registry.AgentRef`)
        and the option names checked against what the agent reads."""
        ref = name if isinstance(name, registry.AgentRef) else registry.parse_agent(name)
        name = ref.text
        if label is not None and not re.fullmatch(_LABEL, str(label)):
            raise V.ArgumentError("agents", f"{V.name('agents')}[{name}].label must be letters, digits and . _ @ + - "
                                            f"(it names files), got {label!r}")
        try:
            options = _frozen(dict(options or {}))
        except ValueError as err:
            raise V.ArgumentError("agents", f"{V.name('agents')}[{name}]: {err}; numeric hyperparameters to vary go "
                                            "in grid") from None
        accepted = ref.entry.options()
        if accepted is not None:
            for key, _ in options:
                if key not in accepted:
                    raise V.ArgumentError(key, f"{V.name('agents')}[{ref.label}]: unknown option {V.name(key)}"
                                               f"{registry.did_you_mean(key, accepted)} ({ref.entry.valid_options()})")
        cells = []
        for key, values in sorted(dict(grid or {}).items()):
            vals = np.asarray(values, np.float64).reshape(-1)
            if vals.size == 0 or not np.all(np.isfinite(vals)):
                raise V.ArgumentError("agents", f"{V.name('agents')}[{name}].grid.{key} must be a non-empty list of "
                                                f"finite numbers, got {values!r}")
            cells.append((key, tuple(float(v) for v in vals)))
        return SweepAgent(name=name, options=options, grid=tuple(cells), tag=label, ref=ref)

    @property
    def agent_ref(self) -> registry.AgentRef:
        return self.ref if self.ref is not None else registry.parse_agent(self.name)

    @property
    def label(self) -> str:
        """The agent's name in tables, files and figures."""
        return self.tag or self.agent_ref.label

    def cells(self) -> dict:
        """``{hyperparameter: values (H,)}`` of the Cartesian product; ``{}`` without a grid."""
        if not self.grid:
            return {}
        names = [k for k, _ in self.grid]
        mesh = np.meshgrid(*[np.asarray(v) for _, v in self.grid], indexing="ij")
        return {n: m.reshape(-1) for n, m in zip(names, mesh)}

    @property
    def num_cells(self) -> int:
        return int(np.prod([len(v) for _, v in self.grid])) if self.grid else 1

    def program(self, family: str, horizon: int) -> tuple[Program, np.ndarray]:
        """``(program, numbers)`` of this entry on a ``family`` model for ``horizon`` rounds
        (:func:`~e2d_jax.sim.program.factory_program`: one row per cell); errors name the
        entry."""
        factory = self.agent_ref.factory(dict(self.options), family, horizon)
        try:
            return factory_program(factory, family, self.cells())
        except ValueError as err:
            text = str(err)
            if text.startswith("hparams"):
                raise V.ArgumentError("agents", f"{V.name('agents')}[{self.label}].grid{text[len('hparams'):]}") \
                    from None
            if text.startswith("agent:"):
                raise V.ArgumentError("agents", f"{V.name('agents')}[{self.label}]:{text[len('agent:'):]}") from None
            raise

    def to_dict(self) -> dict:
        return {"name": self.name, "options": {k: _plain(v) for k, v in self.options},
                "grid": {k: list(v) for k, v in self.grid}, **({"label": self.tag} if self.tag else {})}


def _plain(value):
    """An option's value as JSON holds it (a solver value as its fields)."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """What a sweep runs (see the module docstring). Everything that changes a result is here,
    so the spec's digest identifies the results.

    Attributes:
      env: a registered environment name or ``module:attribute`` of an instance builder.
      agents: :class:`SweepAgent` entries.
      horizon: rounds n.
      seeds: seeds per instance and cell.
      seed: master seed.
      instance_seeds: the instances (seeds of ``instance_key``).
      d: the environment's sizes and noise (None: the builder's default).
      arms: see ``d``.
      models: see ``d``.
      sigma: see ``d``.
      env_options: further options of the environment's builder (sorted pairs).
      record_every: rounds between records (default: horizon / 200).
      chunk_size: seeds per work unit (default: chosen from the layout).
      x64: run in float64.
      conventions: the conventions the sweep stands for (a label of its results).
      name: the sweep's name.
      diagnostics: also keep every agent's per-round info at the recorded rounds (status,
        value, lambda, gap, iterations, eps^2 for the E2D agents) in ``diagnostics.npz``; by
        default only the per-seed summaries and the regret curves are stored.
    """

    env: str
    agents: tuple
    horizon: int
    seeds: int
    seed: int = 0
    instance_seeds: tuple = (0,)
    d: int | None = None
    arms: int | None = None
    models: int | None = None
    sigma: float | None = None
    env_options: tuple = ()
    record_every: int | None = None
    chunk_size: int | None = None
    x64: bool = False
    conventions: str | None = None
    name: str = "sweep"
    diagnostics: bool = False

    def __post_init__(self):
        V.check_int("horizon", self.horizon, minimum=1)
        V.check_int("seeds", self.seeds, minimum=1)
        V.check_int("seed", self.seed, minimum=0)
        if not isinstance(self.env, str) or not self.env:
            raise V.ArgumentError("env", f"{V.name('env')} must be an environment name or module:attribute, got {self.env!r}")
        if not self.agents:
            raise V.ArgumentError("agents", f"{V.name('agents')}: a sweep needs at least one agent")
        labels = [a.label for a in self.agents]
        if len(set(labels)) != len(labels):
            raise V.ArgumentError("agents", f"{V.name('agents')}: an agent is listed twice: {labels} (give each its own label)")
        if not self.instance_seeds:
            raise V.ArgumentError("instance_seeds", f"{V.name('instance_seeds')}: a sweep needs at least one instance seed")
        for s in self.instance_seeds:
            V.check_int("instance_seeds", s, minimum=0)
        for name in ("d", "arms", "models"):
            if getattr(self, name) is not None:
                V.check_int(name, getattr(self, name), minimum=1 if name == "d" else 2)
        if self.sigma is not None:
            V.check_positive("sigma", self.sigma)
        if self.record_every is not None:
            V.check_int("record_every", self.record_every, minimum=1)
        if self.chunk_size is not None:
            V.check_int("chunk_size", self.chunk_size, minimum=1)
        if self.conventions is not None and self.conventions not in CONVENTIONS:
            raise V.ArgumentError("conventions", f"{V.name('conventions')} must be one of {CONVENTIONS}, got {self.conventions!r}")
        if not re.fullmatch(_LABEL, self.name):
            raise V.ArgumentError("name", f"{V.name('name')} must be letters, digits and . _ @ + - (it names a directory), got {self.name!r}")

    @property
    def every(self) -> int:
        """Rounds between records (default: horizon / 200)."""
        return min(self.record_every or max(1, self.horizon // 200), self.horizon)

    def builder_options(self) -> dict:
        """The options the environment's builder gets (sizes and noise where given, and
        ``env_options``)."""
        sizes = {k: getattr(self, k) for k in ("d", "arms", "models", "sigma") if getattr(self, k) is not None}
        return {**sizes, **dict(self.env_options)}

    @property
    def dtype(self) -> str:
        return "float64" if self.x64 else "float32"

    def chunk(self, trajectories_per_seed: int, block: int) -> int:
        """Seeds per unit of a program with ``trajectories_per_seed`` runs per seed (its cells x
        the instances; see the module docstring): a multiple of the seeds that fill one
        ``block`` (lanes per call x devices), unless the sweep has fewer seeds or
        ``chunk_size`` says otherwise."""
        if self.chunk_size is not None:
            return min(self.chunk_size, self.seeds)
        per_call = max(1, block // trajectories_per_seed)
        size = max(1, min(MAX_SEEDS_PER_UNIT, MAX_TRAJECTORIES // trajectories_per_seed))
        return min(self.seeds, max(per_call, size // per_call * per_call))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["agents"] = [a.to_dict() for a in self.agents]
        d["instance_seeds"] = list(self.instance_seeds)
        d["env_options"] = dict(self.env_options)
        return d

    @staticmethod
    def from_dict(d: dict) -> "SweepSpec":
        """A spec from plain values (``to_dict``'s output, a manifest, a parsed sweep file)."""
        d = dict(d)
        fields = {f.name for f in dataclasses.fields(SweepSpec)}
        unknown = set(d) - fields
        if unknown:
            raise ValueError(f"unknown sweep field(s) {sorted(unknown)}; valid: {sorted(fields)}")
        if "agents" not in d:
            raise V.ArgumentError("agents", f"{V.name('agents')}: a sweep needs at least one agent")
        d["agents"] = tuple(a if isinstance(a, SweepAgent) else
                            SweepAgent.make(a.get("name"), a.get("options"), a.get("grid"), a.get("label"))
                            for a in d["agents"])
        d["instance_seeds"] = tuple(int(s) for s in d.get("instance_seeds", (0,)))
        d["env_options"] = _frozen(dict(d.get("env_options") or {}))
        missing = sorted(f.name for f in dataclasses.fields(SweepSpec)
                         if f.default is dataclasses.MISSING and f.name not in d)
        if missing:
            raise ValueError(f"missing sweep field(s) {missing}")
        return SweepSpec(**d)

    def digest(self, code: str) -> str:
        """Identifies the results: the spec plus the code that computes them."""
        text = json.dumps({"spec": self.to_dict(), "code": code}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class SweepProgram(NamedTuple):
    """Agents of a sweep that differ only in numbers, run as the cells of one compiled program.

    A sweep's agents whose programs are equal (:class:`~e2d_jax.sim.program.Program`: the
    same factory and static options; the library's agents have every numeric hyperparameter
    as an input) are one program: its cells are the members' cells one after the other, e.g.
    E2D tuned for n = 200, 500, 1000 and 2000 is one program of four cells (one lambda each).

    Attributes:
      label: the program's name in chunk files (the member's label, or the members' joined).
      members: the :class:`SweepAgent` entries, in the sweep's order.
      program: what is compiled.
      numbers: (H, n) every cell's numbers.
      owner: (H,) the member of each cell (an index into ``members``).
    """

    label: str
    members: tuple
    program: Program
    numbers: np.ndarray
    owner: np.ndarray

    @property
    def num_cells(self) -> int:
        return int(self.owner.size)

    def member_cells(self, m: int) -> list:
        """The cells of member ``m``: the positions of its cells in the program."""
        return [int(h) for h in np.flatnonzero(self.owner == m)]

    def __eq__(self, other):
        return isinstance(other, SweepProgram) and self.label == other.label

    def __hash__(self):
        return hash(self.label)

    def __repr__(self):
        return f"SweepProgram({self.label!r}, cells={self.num_cells})"


def _program_label(members) -> str:
    labels = [m.label for m in members]
    joined = "+".join(labels)
    return joined if len(joined) <= 96 else f"{labels[0]}+{len(labels) - 1}-more-{hashlib.sha256(joined.encode()).hexdigest()[:8]}"


class Unit(NamedTuple):
    """One work unit: every cell and instance of one program for seeds [first, first + count),
    run in compiled calls of ``width`` lanes."""

    program: SweepProgram
    index: int  # chunk index
    first: int  # first seed index
    count: int  # seeds in the unit
    size: int  # the program's chunk size
    width: int  # lanes per compiled call (the plan's, whichever process runs the unit)

    @property
    def uid(self) -> str:
        return f"{self.program.label}/chunk{self.index:05d}"


class Plan(NamedTuple):
    """A sweep's programs and work units, computed once per sweep (:func:`plan`)."""

    programs: tuple
    units: tuple
    family: str


def plan(spec: SweepSpec, family: str, width: int | None = None, devices: int | None = None,
         params=None) -> Plan:
    """The sweep's programs (agents that differ only in numbers, merged) and its fixed,
    deterministic list of work units, in calls of ``width`` lanes (default: ``lanes_for`` this
    process's first device, for each program's lanes on the instance ``params`` when given:
    :func:`e2d_jax.sim.program.lane_bytes`) on ``devices`` devices (default: this process's
    count). Each agent is resolved for ``family`` here, once."""
    device = jax.devices()[0]
    devices = len(jax.devices()) if devices is None else int(devices)
    groups: dict = {}  # program key -> [(agent, program, numbers)]
    for agent in spec.agents:
        program, numbers = agent.program(family, spec.horizon)
        groups.setdefault(program.key, []).append((agent, program, numbers))
    programs = []
    for members in groups.values():
        owner = np.concatenate([np.full(len(nums), m) for m, (_, _, nums) in enumerate(members)])
        programs.append(SweepProgram(label=_program_label([a for a, _, _ in members]),
                                     members=tuple(a for a, _, _ in members), program=members[0][1],
                                     numbers=np.concatenate([nums for _, _, nums in members], axis=0),
                                     owner=owner))
    out = []
    for program in programs:
        lanes = int(width) if width is not None else lanes_for(
            device, 0 if params is None else lambda: lane_bytes(program.program, program.numbers, params))
        size = spec.chunk(program.num_cells * len(spec.instance_seeds), lanes * devices)
        for i in range(math.ceil(spec.seeds / size)):
            first = i * size
            out.append(Unit(program, i, first, min(size, spec.seeds - first), size, lanes))
    return Plan(programs=tuple(programs), units=tuple(out), family=family)


def units(spec: SweepSpec, width: int | None = None, family: str | None = None) -> list:
    """The sweep's work units (:func:`plan`; ``family`` is the environment's, read from its
    shapes when not given)."""
    params, shape_family = registry.instance_shapes(spec.env, spec.builder_options(), spec.dtype)
    return list(plan(spec, family or shape_family, width, params=params).units)


#: The fields of a sweep file: those of :class:`SweepSpec`, with ``instances`` (a count N for
#: the instance seeds 0..N-1, or a list of seeds) for ``instance_seeds`` and an ``[env]``
#: table (``name`` and the builder's options) in place of ``env`` and ``env_options``.
FILE_FIELDS = tuple(sorted(({f.name for f in dataclasses.fields(SweepSpec)} - {"instance_seeds", "env_options"})
                           | {"instances"}))


def load_toml(path) -> SweepSpec:
    """A :class:`SweepSpec` from a TOML file (see the module docstring); errors name the field."""
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as err:
        raise ValueError(f"spec: cannot read {path}: {err.strerror or err}") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"spec: {path} is not valid TOML: {err}") from None
    raw = dict(raw)
    unknown = sorted(set(raw) - set(FILE_FIELDS))
    if unknown:
        raise ValueError(f"{path}: unknown field(s) {unknown}; valid: {list(FILE_FIELDS)}")
    if "instances" in raw:
        inst = raw.pop("instances")
        if isinstance(inst, int) and not isinstance(inst, bool):
            if inst < 1:
                raise ValueError(f"{path}: instances must be >= 1 or a list of instance seeds, got {inst}")
            raw["instance_seeds"] = list(range(inst))
        elif isinstance(inst, list):
            raw["instance_seeds"] = [int(s) for s in inst]
        else:
            raise ValueError(f"{path}: instances must be a count or a list of instance seeds, got {inst!r}")
    env = raw.get("env")
    if isinstance(env, dict):
        env = dict(env)
        if "name" not in env:
            raise ValueError(f"{path}: the [env] table needs a name (a registered environment or module:attribute)")
        raw["env"] = env.pop("name")
        for size in ("d", "arms", "models", "sigma"):
            if size in env:
                raw.setdefault(size, env.pop(size))
        raw["env_options"] = env
    agents = raw.pop("agents", None)
    if not agents:
        raise ValueError(f"{path}: no [[agents]] table")
    entries = []
    for a in agents:
        a = dict(a)
        if "name" not in a:
            raise ValueError(f"{path}: every [[agents]] entry needs a name")
        name, grid, label = a.pop("name"), a.pop("grid", None), a.pop("label", None)
        entries.append(SweepAgent.make(name, a, grid, label))
    raw["agents"] = tuple(entries)
    try:
        return SweepSpec.from_dict(raw)
    except TypeError as err:
        raise ValueError(f"{path}: {err}") from None
