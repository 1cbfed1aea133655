"""A sweep as data: what to run, expanded into a fixed, deterministic list of work units.

A :class:`SweepSpec` names an environment (a registry name with its sizes), the instance
seeds, the agents (registry names with static options and an optional grid of numeric
hyperparameters), the horizon, the number of seeds and the master seed. It expands into work
units (:func:`units`): one per (agent, chunk of seeds). A unit runs *every* hyperparameter
cell of its agent on *every* instance for its seeds in one compiled call: cells and instances
are vmapped axes, not Python loops. Each unit is a pure function of its description, so any
executor may run any unit in any order and get the same bits, and a resumed sweep runs only
the units whose files are missing.

Chunk size (seeds per unit): by default the largest multiple of the seeds one compiled call
runs (:func:`default_block`: 64 trajectories per CPU device, divided among the agent's cells x
instances) that keeps a unit at most
``MAX_TRAJECTORIES`` trajectories (cells x instances x seeds) and at most ``MAX_SEEDS_PER_UNIT``
seeds (one block if even that is more), so memory stays bounded whatever the sweep's size and
a killed run loses at most one unit's work per agent; ``chunk_size`` overrides it. The layout
depends on the driver's block, so a sweep resumed on a machine with another device count
recomputes the units of the old layout (their files carry the old size in their digest);
per-seed results are the same bits either way. Every unit of an agent has the same shape
(the last one is padded), so the agent compiles once.

TOML (``e2d-jax sweep SPEC.toml``; see ``benchmarks``' neighbour ``sweeps/`` for an example)::

    name = "eps-constant"
    env = "semi-bandit"
    d = 3
    arms = 10
    horizon = 2000
    seeds = 500
    instances = 20            # instance seeds 0..19, or a list of seeds
    [[agents]]
    name = "anytime-e2d"
    divergence = "squared"
    grid = { eps2_scale = [0.03, 0.1, 0.3, 1.0, 3.0] }
    [[agents]]
    name = "anytime-e2d"
    label = "anytime-e2d-kl"  # one registry name twice: each needs its own label
    divergence = "kl"
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from typing import NamedTuple

import numpy as np

from e2d_jax import _validation as V

MAX_TRAJECTORIES = 4096
MAX_SEEDS_PER_UNIT = 1000

#: Static agent options a spec may give (the ``e2d-jax run`` flags) and the numeric
#: hyperparameters a grid may vary (traced; every agent factory accepts its own).
STATIC_OPTIONS = ("divergence", "solver", "solver_iters", "gaps", "eps2_schedule")
CONVENTIONS = ("implementation", "paper-text")


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    """One agent of a sweep.

    Attributes:
      name: registry name with its parameter, e.g. ``"anytime-e2d"``, ``"e2d-n200"``.
      options: static options (``divergence``, ``solver``, ``solver_iters``, ``gaps``).
      grid: ``{hyperparameter: [values]}``; the cells are the Cartesian product (vmapped).
      tag: the agent's name in every output when one registry name appears more than once
        (e.g. ``"anytime-e2d-kl"`` for Anytime-E2D with other options); default ``name``.
    """

    name: str
    options: tuple = ()  # sorted (key, value) pairs (hashable)
    grid: tuple = ()  # sorted (key, (values...)) pairs
    tag: str | None = None

    @staticmethod
    def make(name: str, options: dict | None = None, grid: dict | None = None, tag: str | None = None) -> "AgentEntry":
        if tag is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._@+-]*", str(tag)):
            raise ValueError(f"agents[{name}].label must be letters, digits and . _ @ + - (it names files), got {tag!r}")
        options = dict(options or {})
        unknown = set(options) - set(STATIC_OPTIONS)
        if unknown:
            raise ValueError(f"agents[{name}]: unknown option(s) {sorted(unknown)}; static options are "
                             f"{STATIC_OPTIONS}, numeric hyperparameters go in 'grid'")
        grid = dict(grid or {})
        cells = []
        for key, values in sorted(grid.items()):
            vals = np.asarray(values, np.float64).reshape(-1)
            if vals.size == 0 or not np.all(np.isfinite(vals)):
                raise ValueError(f"agents[{name}].grid.{key} must be a non-empty list of finite numbers, got {values!r}")
            cells.append((key, tuple(float(v) for v in vals)))
        return AgentEntry(name=name, options=tuple(sorted(options.items())), grid=tuple(cells), tag=tag)

    @property
    def label(self) -> str:
        return self.tag or self.name

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


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """What a sweep runs (see the module docstring). Everything that changes a result is here,
    so the spec's digest identifies the results."""

    env: str
    agents: tuple
    horizon: int
    seeds: int
    seed: int = 0
    instance_seeds: tuple = (0,)
    d: int | None = None
    arms: int | None = None
    models: int | None = None
    sigma: float = 1.0
    record_every: int | None = None
    chunk_size: int | None = None
    x64: bool = False
    conventions: str | None = None
    name: str = "sweep"

    def __post_init__(self):
        V.check_int("horizon", self.horizon, minimum=1)
        V.check_int("seeds", self.seeds, minimum=1)
        V.check_int("seed", self.seed, minimum=0)
        if not self.agents:
            raise ValueError("agents: a sweep needs at least one agent")
        labels = [a.label for a in self.agents]
        if len(set(labels)) != len(labels):
            raise ValueError(f"agents: an agent is listed twice: {labels}")
        if not self.instance_seeds:
            raise ValueError("instances: a sweep needs at least one instance seed")
        for s in self.instance_seeds:
            V.check_int("instance seed", s, minimum=0)
        if self.record_every is not None:
            V.check_int("record_every", self.record_every, minimum=1)
        if self.chunk_size is not None:
            V.check_int("chunk_size", self.chunk_size, minimum=1)
        if self.conventions is not None and self.conventions not in CONVENTIONS:
            raise ValueError(f"conventions must be one of {CONVENTIONS}, got {self.conventions!r}")

    @property
    def every(self) -> int:
        """Rounds between records (default: horizon / 200)."""
        return min(self.record_every or max(1, self.horizon // 200), self.horizon)

    def chunk(self, agent: AgentEntry, block: int | None = None) -> int:
        """Seeds per unit for ``agent`` (see the module docstring): a multiple of the seeds one
        compiled call runs, ``block`` (:func:`default_block`, in trajectories) divided among the
        agent's cells x instances, unless the sweep has fewer seeds or ``chunk_size`` says
        otherwise."""
        if self.chunk_size is not None:
            return min(self.chunk_size, self.seeds)
        block = default_block() if block is None else block
        per = agent.num_cells * len(self.instance_seeds)
        block = max(1, block // per)  # seeds per call: the block counts trajectories
        size = max(1, min(MAX_SEEDS_PER_UNIT, MAX_TRAJECTORIES // per))
        return min(self.seeds, max(block, size // block * block))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["agents"] = [{"name": a.name, "options": dict(a.options), "grid": {k: list(v) for k, v in a.grid},
                        **({"label": a.tag} if a.tag else {})} for a in self.agents]
        d["instance_seeds"] = list(self.instance_seeds)
        return d

    @staticmethod
    def from_dict(d: dict) -> "SweepSpec":
        d = dict(d)
        d["agents"] = tuple(AgentEntry.make(a["name"], a.get("options"), a.get("grid"), a.get("label"))
                            for a in d["agents"])
        d["instance_seeds"] = tuple(int(s) for s in d.get("instance_seeds", (0,)))
        fields = {f.name for f in dataclasses.fields(SweepSpec)}
        unknown = set(d) - fields
        if unknown:
            raise ValueError(f"unknown sweep field(s) {sorted(unknown)}; valid: {sorted(fields)}")
        return SweepSpec(**d)

    def digest(self, code: str) -> str:
        """Identifies the results: the spec plus the code that computes them."""
        text = json.dumps({"spec": self.to_dict(), "code": code}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class Unit(NamedTuple):
    """One work unit: every cell and instance of one agent for seeds [first, first + count)."""

    agent: AgentEntry
    index: int  # chunk index
    first: int  # first seed index
    count: int  # seeds in the unit
    size: int  # the agent's chunk size (the compiled batch; the last unit is padded to it)

    @property
    def uid(self) -> str:
        return f"{self.agent.label}/chunk{self.index:05d}"


def default_block() -> int:
    """Trajectories one compiled call runs on this machine: ``simulate.lanes_for`` its first
    device times its device count. Chunks are multiples of the seeds that stand for them, so no
    call runs mostly padding."""
    import jax

    from e2d_jax.simulate import lanes_for

    devices = jax.devices()
    return lanes_for(devices[0]) * len(devices)


def units(spec: SweepSpec, block: int | None = None) -> list:
    """The fixed, deterministic list of the sweep's work units (for seeds-per-call ``block``,
    default :func:`default_block`; every executor of a sweep uses the driver's)."""
    out = []
    block = default_block() if block is None else block
    for agent in spec.agents:
        size = spec.chunk(agent, block)
        for i in range(math.ceil(spec.seeds / size)):
            first = i * size
            out.append(Unit(agent, i, first, min(size, spec.seeds - first), size))
    return out


def load_toml(path) -> SweepSpec:
    """A :class:`SweepSpec` from a TOML file (see the module docstring); errors name the field."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    raw = dict(raw)
    if "instances" in raw:
        inst = raw.pop("instances")
        if isinstance(inst, int):
            if inst < 1:
                raise ValueError(f"instances must be >= 1 or a list of instance seeds, got {inst}")
            raw["instance_seeds"] = list(range(inst))
        else:
            raw["instance_seeds"] = [int(s) for s in inst]
    agents = raw.pop("agents", None)
    if not agents:
        raise ValueError(f"{path}: no [[agents]] table")
    entries = []
    for a in agents:
        a = dict(a)
        if "name" not in a:
            raise ValueError(f"{path}: every [[agents]] entry needs a name")
        name, grid, tag = a.pop("name"), a.pop("grid", None), a.pop("label", None)
        entries.append(AgentEntry.make(name, a, grid, tag))
    raw["agents"] = tuple(entries)
    try:
        return SweepSpec.from_dict({**raw, "agents": [{"name": e.name, "options": dict(e.options),
                                                       "grid": {k: list(v) for k, v in e.grid},
                                                       **({"label": e.tag} if e.tag else {})} for e in entries]})
    except TypeError as err:
        raise ValueError(f"{path}: {err}") from None
