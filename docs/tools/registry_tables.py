"""mkdocs hook: the docs' tables of registered names come from the registry
(:data:`e2d_jax.experiments.registry.ENVIRONMENTS` and ``.AGENTS``) at build time, so a page
neither misses a name the code has nor names one it does not.

A page asks for a table with a placeholder on a line of its own::

    <!-- registry: environments -->   name, options, the Python builder, family, description
    <!-- registry: agents -->         name, the Python function, families, grid, description

The Python column is read off the registry: an agent's entry makes a factory (the library's
function, or a ``functools.partial`` of it); an environment's builder is the library's
function, or a small adapter of the registry that renames options and calls one (the function
it calls is read from its code). Importable without mkdocs, for the tests.
"""
from __future__ import annotations

import functools
import inspect
import pathlib
import re
import sys
import types

PLACEHOLDER = re.compile(r"^<!-- registry: (environments|agents) -->$", re.M)
#: The horizon the agents' factories are made for when the table is drawn: it shows as ``n``
#: (the run's horizon), and ``SENTINEL`` as ``N`` in a name that carries a horizon.
HORIZON, SENTINEL = 1000, 7919
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _registry():
    if str(ROOT) not in sys.path:  # the checkout's code, as mkdocstrings' `paths: [.]` reads it
        sys.path.insert(0, str(ROOT))
    from e2d_jax.experiments import registry

    return registry


def public_name(fn) -> str:
    """The shortest name ``fn`` is importable under: ``e2d_jax.X`` where the package exports
    it, else its module's."""
    import e2d_jax

    if getattr(e2d_jax, fn.__name__, None) is fn:
        return f"e2d_jax.{fn.__name__}"
    return f"{fn.__module__}.{fn.__qualname__}"


def _link(fn, call: str = "") -> str:
    # A cross-reference into the API reference (mkdocs-autorefs; --strict fails on a missing one).
    return f"[`{public_name(fn)}{call}`][{fn.__module__}.{fn.__qualname__}]"


def builder_function(entry):
    """The library function that builds an environment's instances: the entry's builder, or
    the one an adapter of the catalogue calls (``module.function`` read from its code)."""
    fn = entry.builder
    if getattr(fn, "__module__", "").startswith("e2d_jax.envs") or not \
            getattr(fn, "__module__", "").startswith("e2d_jax."):
        return fn
    names = fn.__code__.co_names
    called = [getattr(fn.__globals__.get(mod), attr, None) for mod, attr in zip(names, names[1:])
              if isinstance(fn.__globals__.get(mod), types.ModuleType)]
    called = [f for f in called if inspect.isfunction(f) and f.__module__.startswith("e2d_jax.envs")]
    if len(called) != 1:
        raise ValueError(f"environment {entry.name!r}: cannot tell which builder of e2d_jax.envs its adapter calls "
                         f"(found {[f.__name__ for f in called]})")
    return called[0]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def environments_table() -> str:
    """Markdown: one row per registered environment."""
    registry = _registry()
    rows = ["| name | options | Python builder | family | what it is |", "|---|---|---|---|---|"]
    for name, entry in registry.ENVIRONMENTS.items():
        options = entry.options()
        shown = "any" if options is None else ", ".join(f"`{o}`" for o in options if o != "dtype") or "none"
        rows.append(f"| `{name}` | {shown} | {_link(builder_function(entry))} | {entry.family or 'either'} | "
                    f"{_cell(entry.help)} |")
    return "\n".join(rows)


def _python(entry, factory) -> str:
    """The Python call of an agent: its front (the function that runs on every family) with
    the keyword arguments its name sets, e.g. ``e2d_jax.fixed_horizon_e2d(horizon=n)``."""
    fn, keywords = (factory.func, factory.keywords) if isinstance(factory, functools.partial) else (factory, {})
    fn = entry.front or fn
    shown = {HORIZON: "n", SENTINEL: "N"}
    call = f"(horizon={shown.get(keywords['horizon'], keywords['horizon'])})" if "horizon" in keywords else ""
    return _link(fn, call)


def _family(entry, families) -> str:
    # The finite family's factory where there is one: there E2D's tuning horizon stays a
    # keyword (on linear models it becomes the number lambda_N, a cell of one program).
    return "finite" if "finite" in families else families[0]


def agent_rows(registry) -> list[tuple[str, str, str, tuple, str]]:
    """``(name as written, registered name, Python, families, help)`` per registered agent, and
    one more row for a name that carries a horizon (``e2d-nN``)."""
    from e2d_jax.envs.family import FAMILIES

    rows = []
    for name, entry in registry.AGENTS.items():
        families = entry.families() or FAMILIES
        family = _family(entry, families)
        factory = registry.parse_agent(name).factory({}, family, HORIZON)
        rows.append((name, name, _python(entry, factory), families, entry.help))
        alias = registry.agent_label(name, str(SENTINEL))
        if entry.param is not None and alias != f"{name}@{SENTINEL}":
            factory = registry.parse_agent(alias).factory({}, family, HORIZON)
            rows.append((alias.replace(str(SENTINEL), "N"), name, _python(entry, factory), families,
                         f"`{name}@N`, named as every output names it"))
    return rows


def hyperparameters(registry, name: str, family: str) -> tuple:
    """The numeric hyperparameters a grid over agent ``name`` may vary on ``family``."""
    from e2d_jax.sim.program import factory_program

    program, _ = factory_program(registry.parse_agent(name).factory({}, family, HORIZON), family)
    return program.names


def agents_table() -> str:
    """Markdown: one row per registered agent (``n``: the run's horizon)."""
    registry = _registry()
    out = ["| name | Python | runs on | grid hyperparameters | what it is |", "|---|---|---|---|---|"]
    for name, base, python, families, help in agent_rows(registry):
        grids = {f: hyperparameters(registry, base, f) for f in families}
        if len(set(grids.values())) == 1:
            grid = ", ".join(f"`{h}`" for h in next(iter(grids.values()))) or "none"
        else:
            grid = "; ".join(f"{f}: " + (", ".join(f"`{h}`" for h in hs) or "none") for f, hs in grids.items())
        out.append(f"| `{name}` | {python} | {', '.join(families)} | {grid} | {_cell(help)} |")
    return "\n".join(out)


TABLES = {"environments": environments_table, "agents": agents_table}


def fill(markdown: str) -> str:
    """``markdown`` with every placeholder replaced by its table."""
    return PLACEHOLDER.sub(lambda m: TABLES[m.group(1)](), markdown)


def on_page_markdown(markdown, page, config, files):
    return fill(markdown) if PLACEHOLDER.search(markdown) else markdown
