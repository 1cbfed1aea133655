"""The ``e2d-jax`` command line: one storage and resume path for every command::

    e2d-jax run --env semi-bandit --d 3 --arms 10 --horizon 2000 --seeds 1000 \\
                --agents anytime-e2d,e2d-n200,ucb,ts --out runs/demo
    e2d-jax reproduce exp1|exp2|all [--seeds 100] [--conventions implementation|paper-text] --out runs/paper
    e2d-jax reproduce sensitivity|candidates|linear-bounds [--instances N] [--seeds S] --out runs/claims
    e2d-jax reproduce horizons [--horizon N] [--seeds S] --out runs/horizons
    e2d-jax reproduce preferences [--families dueling,preference] [--horizon N] --out runs/preferences
    e2d-jax reproduce contexts [--families digits,iris] [--horizon N] --out runs/contexts
    e2d-jax sweep sweeps/eps_constant.toml [--out DIR]
    e2d-jax plot DIR [--hparam eps2_scale]

Any of run, reproduce and sweep: ``--executor ray`` with ``--address HOST:PORT`` or
``--workers N`` (Ray tasks on a cluster or a local instance), ``--part I/N`` (the I-th of N
parts, for job arrays), ``--resume`` (continue from the chunk files, whichever executor wrote
them).

Every command turns its arguments into a sweep (:mod:`e2d_jax.experiments`) and writes,
under its output directory: ``manifest.json``; one atomic chunk file per finished work unit;
``results.parquet`` (one row per agent, hyperparameter cell, instance and seed);
``curves.npz`` (regret at the recorded rounds, row-aligned with the table); ``summary.json``
(per cell: the pooled mean and its 95% CI, per-instance means, the median, IQR and CI over
instances, solver statistics, configuration, versions, device, time); and figures as PDF and
PNG.

Exit status: 0 on success; 2 for bad input (one line naming the flag); 3 when a run finished
but some seeds were invalid (non-finite decisions or actions outside [0, K)): those seeds are
left out of the means and figures (``seeds_invalid`` in ``summary.json``) and reported on
stderr, per cell and reason; a cell without any valid seed has no mean (``null``) and the
figures name it instead of drawing it; 130 when interrupted (Ctrl-C), with every finished
chunk kept.

This module is the only one that knows command-line flags: the library's errors name its
Python arguments and :func:`to_flags` translates them.
"""
from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import os
import re
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import jax
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.agents.schedules import LINEAR_SCHEDULES
from e2d_jax.dec.solvers import SOLVERS
from e2d_jax.experiments import registry, storage
from e2d_jax.experiments.executors import EXECUTORS, make_executor
from e2d_jax.experiments.figures import draw as draw_figures
from e2d_jax.experiments.runner import collect_stored, run_sweep
from e2d_jax.experiments.spec import CONVENTIONS, SweepAgent, SweepError, SweepSpec, load_toml
from e2d_jax.experiments.work import INTERRUPTED, Interrupted
from e2d_jax.paper import contexts, horizons, linear_bounds, preferences, presets, zoo
from e2d_jax.paper.figures import plot_figure1, plot_sensitivity
from e2d_jax.plotting import plot_hyperparameter, save
from e2d_jax.sim.results import FlaggedRoundsWarning, flagged_agents, flagged_message
from e2d_jax.sim.execute import MATMUL_PRECISION
from e2d_jax.sim.simulate import enable_compilation_cache
from e2d_jax.types import DIVERGENCES, GAP_TYPES
from e2d_jax.version import __version__

#: ``e2d-jax run``'s agents when --agents is not given: Anytime-E2D with the baselines.
DEFAULT_AGENTS = "anytime-e2d,e2d,ucb,ts"
#: Where reproduce and sweep write without --out: RUNS/reproduce and RUNS/<the sweep's name>.
RUNS = "runs"

# --------------------------------------------------------------------------------------
# Library argument names -> flags

#: Python arguments (of the library's functions and sweep fields) and the flags that set them.
FLAGS = {
    "out": "--out", "resume": "--resume", "overwrite": "--overwrite", "part": "--part", "env": "--env",
    "agents": "--agents", "horizon": "--horizon", "seeds": "--seeds", "seed": "--seed", "d": "--d",
    "arms": "--arms", "models": "--models", "sigma": "--sigma", "record_every": "--record-every",
    "chunk_size": "--batch-size", "executor": "--executor", "address": "--address", "workers": "--workers",
    "gpus_per_task": "--gpus-per-task", "hparam": "--hparam", "conventions": "--conventions",
    "solver": "--solver", "solver_iters": "--solver-iters", "divergence": "--divergence",
    "gap_type": "--gap-type", "eps2_schedule": "--eps2-schedule", "instances": "--instances",
    "instance_seeds": "--instance-seed", "families": "--families",
}
#: Which names come from flags in each command (the others come from a sweep file).
_COMMAND_NAMES = {
    "run": set(FLAGS),
    "reproduce": {"out", "resume", "overwrite", "part", "seeds", "instances", "conventions", "solver", "executor",
                  "address", "workers", "gpus_per_task", "families", "horizon"},
    "sweep": {"out", "resume", "overwrite", "part", "executor", "address", "workers", "gpus_per_task"},
    "plot": {"hparam"},
}


def to_flags(error, command: str = "run") -> str:
    """A library error in the command line's terms: every argument its message names that
    ``command`` sets by a flag written as that flag (``resume=True`` -> ``--resume``,
    ``out: ...`` -> ``--out: ...``). The library's errors carry the names as data
    (:class:`e2d_jax._checks.ArgumentError`); any other error is its message."""
    if not isinstance(error, V.ArgumentError):
        return str(error)
    names = _COMMAND_NAMES.get(command, set(FLAGS))
    return error.render(lambda argument, python: FLAGS[argument] if argument in names else python)


# --------------------------------------------------------------------------------------
# Argument types


def _positive_int(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0, got {value}")
        return value

    return parse


def _nonneg_int(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{name} must be >= 0, got {value}")
        return value

    return parse


def _positive_float(name):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not np.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0, got {value}")
        return value

    return parse


def parse_host_devices(text):
    """``--host-devices``: a positive integer or ``auto``."""
    if str(text).strip().lower() == "auto":
        return "auto"
    return _positive_int("--host-devices")(text)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, e.g. a batch job's share)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def host_device_count(args) -> int:
    """How many XLA host devices ``--host-devices`` asks for: ``auto`` is one per usable core
    with the local executor and 1 with ray (each Ray task is one process on its own core)."""
    value = getattr(args, "host_devices", None)
    if value in (None, "auto"):
        return 1 if getattr(args, "executor", "local") == "ray" else usable_cores()
    return int(value)


# --------------------------------------------------------------------------------------
# The parser


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in --help, descriptions as written. An option whose default is
    None is decided at run time (from the environment, the horizon, the sweep file): its help
    text says how, and no "(default: None)" is added."""

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def _common(p, out_default=None):
    """The options of every command that runs a sweep; ``out_default``: what --out is when not
    given (a phrase for the help text), or None when --out is required."""
    p.add_argument("--out", required=out_default is None, default=None,
                   help="output directory" + (f" (default: {out_default})" if out_default else ""))
    p.add_argument("--resume", action="store_true", help="continue an unfinished run in --out")
    p.add_argument("--overwrite", action="store_true", help="delete what --out holds and start over")
    p.add_argument("--x64", action="store_true", help="run in float64")
    p.add_argument("--host-devices", type=parse_host_devices, default="auto",
                   help="on CPU, split the host into N XLA devices and spread the seeds over them (auto: one per "
                        "core this process may use with the local executor, 1 with ray, whose tasks already "
                        "spread over the cores; per-seed results are the same bits for any N)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--diagnostics", action="store_true",
                   help="also keep every agent's per-round info at the recorded rounds (diagnostics.npz); by "
                        "default only per-seed summaries and regret curves are stored")
    p.add_argument("--executor", choices=list(EXECUTORS), default="local",
                   help="where the work units run: this machine's devices, or Ray tasks (a local Ray instance "
                        "unless --address; pip install 'e2d_jax[ray]')")
    p.add_argument("--address", default=None,
                   help="ray: HOST:PORT of a running Ray head (--out must then be a path every node sees; "
                        "default: a local Ray instance)")
    p.add_argument("--workers", type=_positive_int("--workers"), default=None,
                   help="ray: tasks at once on a local Ray instance (default: the machine's cores)")
    p.add_argument("--gpus-per-task", type=_nonneg_int("--gpus-per-task"), default=None,
                   help="ray: GPUs each task asks for (default 0)")
    p.add_argument("--part", default=None, metavar="I/N",
                   help="run only the I-th of N disjoint parts of the work units into --out (job arrays); "
                        "the last part to finish writes the tables, or --resume / e2d-jax plot does (default: "
                        "every unit)")


#: The agent options ``e2d-jax run`` sets by flags (each given to the agents that read it).
AGENT_FLAGS = ("solver", "solver_iters", "divergence", "gap_type", "eps2_schedule")


def _agent_flags(p):
    """The E2D agents' static options (on linear models unless said); the choices are the
    library's own tables."""
    p.add_argument("--solver", choices=list(SOLVERS), default=None,
                   help="DEC solver of the E2D agents (a preset of e2d_jax.dec.solvers): tracking (warm-started "
                        "mirror-prox with a per-round budget; the linear agents' default), saddle (mirror-prox to "
                        "1e-3), fw-grid (Frank-Wolfe on a lambda grid), saddle-grid, paper (100 Frank-Wolfe steps "
                        "on a 50-point grid), lambda-search (the certified lambda search; the finite Anytime-E2D's), "
                        "ipm (interior point; finite E2D's games), interior-point (linear E2D's); default: each "
                        "agent's own")
    p.add_argument("--solver-iters", type=_positive_int("--solver-iters"), default=None,
                   help="per-round solver iteration budget (the inner games' of a lambda search; default: the solver's)")
    p.add_argument("--divergence", choices=list(DIVERGENCES), default=None,
                   help="E2D's information on linear models: squared (||M(g-f)||^2; the default) or kl (the "
                        "Gaussian KL, half of it at sigma = 1, as the paper's text writes)")
    p.add_argument("--gap-type", choices=list(GAP_TYPES), default=None,
                   help="E2D's gaps, both families (default delta_f)")
    p.add_argument("--eps2-schedule", choices=list(LINEAR_SCHEDULES), default=None,
                   help="Anytime-E2D's eps_t^2 on linear models: rank (r/t, r the dimension of the observable "
                        "span; the default), dim (d/t, the paper's experiments) or rank-log (r(1+log t)/t)")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line naming the flag (``e2d-jax run: error:
    argument --horizon: ...``) and the way to the help, without the usage block first."""

    #: Every flag of the command line, for the suggestions on an unrecognised one (the top-level
    #: parser reports those, and knows only its own flags).
    known_flags: tuple = ()

    def error(self, message):
        message = re.sub(r"^argument (--[\w-]+): \1 ", r"\1 ", message)  # a flag's own message names it
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            message += registry.did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
        if message.startswith("unrecognized arguments:"):
            flags = self.known_flags or tuple(o for a in self._actions for o in a.option_strings)
            for word in message.split(":", 1)[1].split():
                if word.startswith("--") and word.split("=", 1)[0] not in flags:
                    message += registry.did_you_mean(word.split("=", 1)[0], flags)
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


#: What ``e2d-jax --help`` says first.
DESCRIPTION = ("Anytime-E2D, E2D, IDS, UCB and Thompson sampling over many seeds: every command writes per-seed "
               "tables, curves, a summary and figures into its output directory, resumable chunk by chunk.")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="e2d-jax", description=DESCRIPTION, formatter_class=_Formatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="simulate agents over many seeds on one instance", formatter_class=_Formatter)
    envs = "; ".join(f"{k} ({v.help})" for k, v in sorted(registry.ENVIRONMENTS.items()))
    agents = "; ".join(f"{k} ({v.help})" for k, v in sorted(registry.AGENTS.items()))
    run.add_argument("--env", default="semi-bandit",
                     help=f"environment: {envs}; or module:attribute of an instance builder of your own")
    run.add_argument("--d", type=_positive_int("--d"), default=None,
                     help="feature dimension (linear environments; default: the environment's)")
    run.add_argument("--arms", type=int, default=None, help="number of actions K >= 2 (default: the environment's)")
    run.add_argument("--models", type=int, default=None,
                     help="size of a finite model class, >= 2 (default: the environment's)")
    run.add_argument("--sigma", type=_positive_float("--sigma"), default=None,
                     help="noise standard deviation (default: the environment's, 1)")
    run.add_argument("--instance-seed", type=_nonneg_int("--instance-seed"), default=0, help="seed of the random instance")
    run.add_argument("--horizon", type=_positive_int("--horizon"), required=True, help="rounds n")
    run.add_argument("--seeds", type=_positive_int("--seeds"), default=100, help="number of runs")
    run.add_argument("--seed", type=_nonneg_int("--seed"), default=0,
                     help="master seed: run i of the seeds uses a key folded from it and i (e2d_jax.sim.rollout.run_keys)")
    run.add_argument("--agents", default=DEFAULT_AGENTS,
                     help=f"comma-separated; name[@param], e2d-nN or module:attribute of an agent factory: {agents}")
    run.add_argument("--record-every", type=_positive_int("--record-every"), default=None,
                     help="record every k-th round (default: horizon/200)")
    run.add_argument("--batch-size", type=_positive_int("--batch-size"), default=None,
                     help="seeds per work unit (default: chosen from the configuration, at most 1000)")
    _agent_flags(run)
    _common(run)

    rep = sub.add_parser("reproduce", help="the paper's experiments (Appendix E), Figure 1 and the claims",
                         formatter_class=_Formatter)
    rep.add_argument("experiment", choices=["exp1", "exp2", "all", "sensitivity", "candidates", "linear-bounds",
                                            "zoo", "horizons", "preferences", "contexts"],
                     help="exp1, exp2 or all (Figure 1); sensitivity: final regret against each algorithm's "
                          "hyperparameter on both shapes over random instances; candidates: what decides "
                          "Experiment 2, on the paper's and the authors' instance distributions; linear-bounds: "
                          "Table 1's linear row and the linear bounds of Section 3.3 against certified DEC values; "
                          "zoo: Anytime-E2D, E2D, IDS, UCB and TS on the instances the paper argues from and on "
                          "partial-monitoring games; horizons: Anytime-E2D, E2D, IDS, UCB and TS up to long "
                          "horizons on end-of-optimism and the revealing semi-bandit, with each one's growth exponent; "
                          "preferences: the same agents on duelling and preference (Bradley-Terry) feedback, with "
                          "growth exponents and how often each plays an informative pair; contexts: the same agents "
                          "and SquareCB and epsilon-greedy on contextual bandits and classification datasets")
    rep.add_argument("--seeds", type=_positive_int("--seeds"), default=None,
                     help="seeds per instance (default 100, as in the paper; sensitivity: 500 on exp1, 200 on "
                          "exp2; candidates: 20; zoo: 200; horizons: 1024 on an accelerator, 128 on a CPU; preferences: "
                          f"{preferences.SEEDS}; contexts: {contexts.SEEDS})")
    rep.add_argument("--conventions", choices=list(CONVENTIONS), default="implementation",
                     help="information without the 1/2 of the Gaussian KL, as in the authors' code and the "
                          "library's default, or with it, as in the paper's text")
    rep.add_argument("--instances", type=_positive_int("--instances"), default=None,
                     help="instances (seeds 0..N-1; default 1: one instance kept fixed, as in the paper; "
                          "sensitivity: 20; candidates: 100; linear-bounds: 100; zoo: 10 of each random family; horizons: "
                          "1, of the semi-bandit, end-of-optimism being one fixed instance; preferences: 1 of each "
                          "random family; contexts: instance 0 of each family)")
    rep.add_argument("--solver", choices=list(presets.REPRODUCE_SOLVERS), default=None,
                     help="the E2D agents' DEC solver, exp1/exp2/all only (default: each agent's own; paper: 100 "
                          "Frank-Wolfe steps on a 50-point grid; fast: 10 mirror-prox steps a round)")
    rep.add_argument("--horizon", type=_positive_int("--horizon"), default=None,
                     help=f"horizons, preferences and contexts only: rounds n (default: "
                          f"{horizons.ACCELERATOR_HORIZON:,} on an accelerator, {horizons.CPU_HORIZON:,} on a CPU; "
                          f"preferences: {preferences.ACCELERATOR_HORIZON:,} and {preferences.CPU_HORIZON:,}; contexts: "
                          f"{contexts.ACCELERATOR_HORIZON:,} and {contexts.CPU_HORIZON:,})")
    rep.add_argument("--families", default=None,
                     help=f"zoo, preferences and contexts only: comma-separated families to run (default: all of "
                          f"{', '.join(zoo.FAMILIES)}; preferences: {', '.join(preferences.FAMILIES)}; contexts: "
                          f"{', '.join(contexts.FAMILIES)})")
    _common(rep, out_default=f"{RUNS}/reproduce")

    sw = sub.add_parser("sweep", help="run a sweep described by a TOML file", formatter_class=_Formatter)
    sw.add_argument("spec", help="the sweep's TOML file (example: sweeps/eps_constant.toml)")
    _common(sw, out_default=f"{RUNS}/NAME, NAME the sweep file's name, 'sweep' if it has none")

    pl = sub.add_parser("plot", help="redraw the figures of stored results", formatter_class=_Formatter)
    pl.add_argument("dir", help="a results directory (or a 'reproduce all' directory)")
    pl.add_argument("--hparam", default=None, help="also draw final regret against this hyperparameter")
    parser.known_flags = tuple(dict.fromkeys(o for p in (parser, run, rep, sw, pl) for a in p._actions
                                             for o in a.option_strings if o.startswith("--")))
    return parser


# --------------------------------------------------------------------------------------
# Commands


def _run_spec(args) -> SweepSpec:
    """The sweep of ``e2d-jax run``: each agent name parsed once, each agent flag given to the
    agents that read it."""
    options = {k: getattr(args, k) for k in AGENT_FLAGS if getattr(args, k, None) is not None}
    if args.arms is not None and args.arms < 2:
        raise V.ArgumentError("arms", f"{V.name('arms')} must be >= 2, got {args.arms}")
    if args.models is not None and args.models < 2:
        raise V.ArgumentError("models", f"{V.name('models')} must be >= 2, got {args.models}")
    names = [a.strip() for a in args.agents.split(",") if a.strip()]
    if not names:
        raise V.ArgumentError("agents", "give at least one agent")
    refs = [registry.parse_agent(a) for a in names]
    for key in options:
        if not any(key in (ref.entry.options() or (key,)) for ref in refs):
            allowed = sorted(n for n, e in registry.AGENTS.items() if key in (e.options() or ()))
            raise V.ArgumentError(key, f"option {V.name(key)} applies to {', '.join(allowed)} only; none of "
                                       f"{V.name('agents')} {args.agents} reads it")
    labels = [ref.label for ref in refs]
    if len(set(labels)) != len(labels):
        raise V.ArgumentError("agents", f"an agent is listed twice: {args.agents!r}")
    agents = []
    for ref in refs:
        accepted = ref.entry.options()
        read = options if accepted is None else {k: v for k, v in options.items() if k in accepted}
        agents.append(SweepAgent.make(ref, read))
    return SweepSpec(env=args.env, d=args.d, arms=args.arms, models=args.models, sigma=args.sigma,
                     instance_seeds=(args.instance_seed,), horizon=args.horizon, seeds=args.seeds, seed=args.seed,
                     agents=tuple(agents), record_every=args.record_every, chunk_size=args.batch_size,
                     x64=args.x64, name="run")


#: Why a seed is invalid: ``invalid_reasons`` of summary.json, in words.
INVALID_REASONS = {"nonfinite": "non-finite decisions", "invalid_action": "actions outside [0, K)"}


def _number(x, width: int) -> str:
    """``x`` with two decimals, right-aligned, or a dash for a statistic over no valid seed (None)."""
    return f"{'-' if x is None else format(x, '.2f'):>{width}s}"


def _interval(lo, hi) -> str:
    return f"{'-':>20s}" if lo is None or hi is None else f"[{lo:8.2f}, {hi:8.2f}]"


def invalid_seeds_message(cells: dict) -> str | None:
    """The stderr message on a summary's invalid seeds (``cells``: its ``agents``), or None
    when every seed is valid: per cell how many seeds and why, and the cells without any valid
    seed (no mean; the figures name them instead of drawing them)."""
    invalid = {k: c for k, c in cells.items() if c["seeds_invalid"]}
    if not invalid:
        return None
    detail = "; ".join(
        f"{k}: {c['seeds_invalid']} of {c['seeds'] + c['seeds_invalid']} ("
        + ", ".join(f"{INVALID_REASONS.get(r, r)}: {n}" for r, n in c["invalid_reasons"].items() if n) + ")"
        for k, c in invalid.items())
    message = (f"e2d-jax: INVALID SEEDS (non-finite decisions or actions outside [0, K)) in {detail}. These "
               "seeds are left out of the means and figures (summary.json 'seeds_invalid').")
    empty = [k for k, c in invalid.items() if not c["seeds"]]
    if empty:
        message += (f" No valid seed in {', '.join(empty)}: no mean; the figures name these cells instead of "
                    "drawing them.")
    return message


#: The header of the printed table's speed column: one rate per compiled call, over all its
#: cells (those of an agent's grid, and of agents that differ only in numbers).
RATE_HEADER = "seed-rounds/s (per call)"


#: How each command can certify more rounds (only options it takes); none for reproduce, whose
#: presets fix the agents' solvers (summary.json has the certified gaps).
FLAGGED_ADVICE = {"run": "a larger budget (--solver-iters) certifies more of them",
                  "sweep": "a larger budget (solver_iters in the agent's [[agents]] table) certifies more of them"}


def _report(summary: dict, out: Path, command: str = "run") -> int:
    """Prints the summary table (and a warning line per agent whose solver flagged more than
    ``FLAGGED_WARNING`` of its rounds); returns 3 if a cell has invalid seeds."""
    conv = summary.get("conventions")
    print(f"\n{summary['name']}" + (f" ({conv} conventions)" if conv else "") + f" -> {out}")
    cells = summary["agents"]
    width = max(max(len(k) for k in cells), 4)
    multi = any(c["instances"] > 1 for c in cells.values())
    solver = any((c.get("solver") or {}).get("rel_gap_p50") is not None for c in cells.values())
    rows = []
    for label, c in cells.items():
        count = f"{c['seeds_per_instance']}" + (f" x {c['instances']}" if c["instances"] > 1 else "")
        rows.append((label, c, f"{c['seeds']} valid of {count}" if c["seeds_invalid"] else count))
    seeds_width = max(15, *(len(count) for *_, count in rows))
    head = f"  {'cell':{width}s}  {'final regret':>12s}  {'95% CI':>20s}  {'seeds':>{seeds_width}s}"
    if multi:
        head += f"  {'median over inst.':>17s}  {'IQR over instances':>20s}"
    if solver:
        head += f"  {'flagged':>7s}  {'rel. gap p50/p90':>17s}"
    print(head + f"  {RATE_HEADER}")
    seen = set()
    for label, c, count in rows:
        lo, hi = c["final_regret_ci95"]
        rate = c.get("seed_rounds_per_second") or 0
        # A program's cells run in one compiled call: its rate is printed once, on its first cell.
        program = c.get("program") or c["agent"]
        rate_text = "" if program in seen else f"{rate:,.0f}"
        seen.add(program)
        line = (f"  {label:{width}s}  {_number(c['final_regret_mean'], 12)}  {_interval(lo, hi)}  "
                f"{count:>{seeds_width}s}")
        if multi:
            line += f"  {_number(c['over_instances']['median'], 17)}  {_interval(*c['over_instances']['iqr'])}"
        if solver:
            st = c.get("solver") or {}
            gaps = (f"{st['rel_gap_p50']:.0e} / {st['rel_gap_p90']:.0e}"
                    if st.get("rel_gap_p50") is not None and st.get("rel_gap_p90") is not None else "-")
            line += f"  {_percent(st.get('flagged_fraction'), 7)}  {gaps:>17s}"
        print((line + f"  {rate_text:>{len(RATE_HEADER)}s}").rstrip())
    if multi:
        print("  (final regret and CI pooled over seeds x instances; median and IQR over the instances' means)")
    if solver:
        print("  (flagged: rounds whose certified relative gap exceeded the agent's solver tolerance; rel. gap: "
              "certified gap / value over all rounds)")
    if len(seen) < len(cells):
        print("  (seed-rounds/s per compiled call, on its first cell: the cells of an agent's grid, and agents that "
              "differ only in numbers, run in one call; the rate counts the seed-rounds of all of them)")
    for agent, fraction in flagged_agents(cells).items():
        print(f"e2d-jax: warning: {flagged_message(agent, fraction, FLAGGED_ADVICE.get(command))}", file=sys.stderr,
              flush=True)
    message = invalid_seeds_message(cells)
    if message:
        print(message + " Exit status 3.", file=sys.stderr, flush=True)
        return 3
    return 0


def _percent(x, width: int) -> str:
    return f"{'-' if x is None else f'{100 * x:.1f}%':>{width}s}"


def _executor(args):
    return make_executor(args.executor, address=args.address, workers=args.workers, gpus_per_task=args.gpus_per_task)


def _execute(spec, out: Path, args, executor=None) -> tuple[dict, int]:
    command = args.command
    if args.diagnostics and not spec.diagnostics:
        spec = dataclasses.replace(spec, diagnostics=True)
    summary = run_sweep(spec, out, resume=args.resume, overwrite=args.overwrite,
                        progress=False if args.quiet else None, executor=executor or _executor(args), part=args.part)
    if not summary.get("complete", True):
        i, n = summary["part"]
        print(f"{spec.name}: part {i}/{n} ran {summary['ran']} units; {summary['units_done']} of {summary['units']} "
              f"units of the sweep are done in {out}. The tables and figures are written by the part that "
              f"finishes last, or by `e2d-jax plot {out}` once all parts are done.")
        return summary, 0
    return summary, _report(summary, out, command)


def _reproduce_specs(args) -> list:
    families = None
    if args.families is not None:
        families = [f.strip() for f in args.families.split(",") if f.strip()]
        known = {"preferences": preferences.FAMILIES, "contexts": contexts.FAMILIES}.get(args.experiment, zoo.FAMILIES)
        unknown = [f for f in families if f not in known]
        if unknown or not families:
            raise V.ArgumentError("families", f"{V.name('families')} must be a comma-separated list of {', '.join(known)}; "
                             f"got {args.families!r}")
    specs = presets.reproduce_specs(args.experiment, seeds=args.seeds, instances=args.instances,
                                    conventions=args.conventions, solver=args.solver, families=families,
                                    horizon=args.horizon)
    return [dataclasses.replace(s, x64=True) for s in specs] if args.x64 else specs


def _figure1(base: Path, conventions: str) -> None:
    dirs = {f"Experiment 1: d=3, n=2000 ({conventions})": base / "exp1",
            f"Experiment 2: d=30, n=1000 ({conventions})": base / "exp2"}
    save(plot_figure1(dirs), base / "figure1", write=storage.atomic_write)
    print(f"wrote {base / 'figure1.png'} and {base / 'figure1.pdf'}")


def _sensitivity_figure(base: Path) -> None:
    dirs = {"Experiment 1's shape: d=3, K=10, n=2000": base / "sensitivity-exp1",
            "Experiment 2's shape: d=30, K=10, n=1000": base / "sensitivity-exp2"}
    save(plot_sensitivity(dirs), base / "sensitivity", write=storage.atomic_write)
    print(f"wrote {base / 'sensitivity.png'} and {base / 'sensitivity.pdf'}")


def _linear_bounds(args, base: Path) -> int:
    if args.seeds or args.solver or args.conventions != "implementation" or args.horizon:
        raise V.ArgumentError(None, f"{V.name('seeds')}, {V.name('solver')}, {V.name('conventions')} and "
                                    f"{V.name('horizon')} do not apply to reproduce linear-bounds")
    jax.config.update("jax_enable_x64", True)
    base.mkdir(parents=True, exist_ok=True)
    tables = linear_bounds.report(args.instances or 100)
    lines = linear_bounds.summarize(tables)
    storage.atomic_write(base / "linear_bounds.txt", lambda f: f.write(("\n".join(lines) + "\n").encode()))
    save(linear_bounds.plot(tables), base / "linear_bounds", write=storage.atomic_write)
    print("\n".join(lines))
    print(f"wrote {base / 'linear_bounds.txt'}, {base / 'linear_bounds.png'} and .pdf")
    return 0


def _plot(path: Path, hparam) -> int:
    if (path / "exp1" / storage.SUMMARY).exists() and (path / "exp2" / storage.SUMMARY).exists():
        conv = json.loads((path / "exp1" / storage.SUMMARY).read_text()).get("conventions") or ""
        _figure1(path, conv)
        for name in ("exp1", "exp2"):
            _plot(path / name, None)
        return 0
    summary_path = path / storage.SUMMARY
    if not summary_path.exists() and (path / storage.MANIFEST).exists():
        collect_stored(path)  # e.g. the parts of a job array have all finished
    if not summary_path.exists():
        raise ValueError(f"plot: {path} holds no results (no {storage.SUMMARY}; run, or continue with --resume, first)")
    draw_figures(path)
    message = invalid_seeds_message(json.loads(summary_path.read_text())["agents"])
    if message:
        print(message, file=sys.stderr, flush=True)
    if hparam:
        save(plot_hyperparameter(storage.read_table(path), hparam), path / f"regret_vs_{hparam}",
             write=storage.atomic_write)
    print(f"redrew the figures in {path}")
    return 0


def _dispatch(args) -> int:
    if args.command != "plot":
        if args.x64:
            jax.config.update("jax_enable_x64", True)
        # Full float32 products everywhere the command computes (instances, solvers, rollouts).
        jax.config.update("jax_default_matmul_precision", MATMUL_PRECISION)
        enable_compilation_cache()
    t0 = time.perf_counter()
    if args.command == "run":
        return _execute(_run_spec(args), Path(args.out), args)[1]
    if args.command == "sweep":
        spec = load_toml(args.spec)
        return _execute(spec, Path(args.out or Path(RUNS) / spec.name), args)[1]
    if args.command == "reproduce":
        base = Path(args.out or Path(RUNS) / "reproduce")
        if args.experiment == "linear-bounds":
            return _linear_bounds(args, base)
        status, executor, complete = 0, _executor(args), True
        specs = _reproduce_specs(args)
        if any(spec.x64 for spec in specs):  # --x64, or a reproduction that computes in float64
            jax.config.update("jax_enable_x64", True)
        for spec in specs:
            summary, code = _execute(spec, base / spec.name, args, executor)
            status, complete = max(status, code), complete and summary.get("complete", True)
        if args.experiment == "all" and complete:
            _figure1(base, args.conventions)
        if args.experiment == "sensitivity" and complete:
            _sensitivity_figure(base)
        if args.experiment == "zoo" and complete:
            print(f"wrote {zoo.write_report(base)}")
        if args.experiment == "horizons" and complete:
            path = horizons.write_report(base)
            print("\n" + path.read_text())
            print(f"wrote {path}, {path.with_suffix('.json')} and {base / 'horizons.png'} (.pdf)")
        if args.experiment == "contexts" and complete:
            path = contexts.write_report(base)
            print("\n" + path.read_text())
            print(f"wrote {path}, {path.with_suffix('.json')} and {base / 'contexts.png'} (.pdf)")
        if args.experiment == "preferences" and complete:
            path = preferences.write_report(base)
            print("\n" + path.read_text())
            print(f"wrote {path}, {path.with_suffix('.json')} and {base / 'preferences.png'} (.pdf)")
        print(f"reproduce {args.experiment}: {time.perf_counter() - t0:.0f} s wall")
        return status
    return _plot(Path(args.dir), args.hparam)


_INTERRUPTED = ("\ne2d-jax: interrupted. Finished chunks are kept (each is written atomically); "
                "run the same command with --resume to continue.")


def _main(argv) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            # The command line says it in its own words, with the flags that apply.
            warnings.simplefilter("ignore", FlaggedRoundsWarning)
            return _dispatch(args)
    except (KeyboardInterrupt, Interrupted):
        print(_INTERRUPTED, file=sys.stderr, flush=True)
        return 130
    except (SweepError, ValueError) as err:
        parser.exit(2, f"{parser.prog}: error: {to_flags(err, args.command)}\n")
    except OSError as err:
        where = f" {err.filename}" if getattr(err, "filename", None) else ""
        if err.errno == errno.ENOSPC:
            parser.exit(1, f"{parser.prog}: error: no space left on the device while writing{where}. Nothing "
                           "half-written was kept; finished chunks are; free space and rerun with --resume.\n")
        parser.exit(2, f"{parser.prog}: error: cannot write the results:{where}: {err.strerror or err}\n")
    return 2


def main(argv=None) -> int:
    """The command line; returns the exit status (for ``sys.exit``).

    Ctrl-C (SIGINT) sets :data:`e2d_jax.experiments.work.INTERRUPTED` as well as raising
    KeyboardInterrupt, so the run stops at the next unit and ends with status 130 and the
    resume hint even when the KeyboardInterrupt was swallowed on the way; a second Ctrl-C
    ends the process at once (status 130), finished chunks kept.

    Called in a process whose JAX has already started (a notebook, a test), the run uses the
    devices that exist; ``--host-devices`` takes effect through :func:`entry`, the console
    script, which sets it before JAX starts.
    """
    INTERRUPTED.clear()
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)

    def on_sigint(signum, frame):
        if INTERRUPTED.is_set():
            print(_INTERRUPTED, file=sys.stderr, flush=True)
            os._exit(130)
        INTERRUPTED.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        status = _main(argv)
    except KeyboardInterrupt:  # landed outside the handlers above (e.g. while printing)
        print(_INTERRUPTED, file=sys.stderr, flush=True)
        status = 130
    finally:
        signal.signal(signal.SIGINT, previous)
    if INTERRUPTED.is_set() and status != 130:
        print(_INTERRUPTED, file=sys.stderr, flush=True)
        return 130
    return status
