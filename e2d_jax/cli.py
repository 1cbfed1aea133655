"""The ``e2d-jax`` command line: one storage and resume path for every command.

    e2d-jax run --env semi-bandit --d 3 --arms 10 --horizon 2000 --seeds 1000 \\
                --agents anytime-e2d,e2d-n200,ucb,ts --out runs/demo
    e2d-jax reproduce exp1|exp2|all [--seeds 100] [--conventions implementation|paper-text] --out runs/paper
    e2d-jax reproduce sensitivity|candidates [--instances N] [--seeds S] --out runs/claims
    e2d-jax sweep sweeps/eps_constant.toml [--out DIR]
    e2d-jax plot DIR [--hparam eps2_scale]

    Any of run / reproduce / sweep: --executor ray [--address HOST:PORT] [--workers N]
    (Ray tasks on a cluster or a local instance), --part I/N (the I-th of N parts, for job
    arrays), --resume (continue from the chunk files, whichever executor wrote them).

Every command turns its arguments into a sweep (``e2d_jax.experiments``) and writes, under
its output directory: ``manifest.json``; one atomic chunk file per finished work unit;
``results.parquet`` (one row per agent, hyperparameter cell, instance and seed: final regret,
action counts, solver status counts, non-finite rounds; ``pandas.read_parquet`` reads it);
``curves.npz`` (regret at the recorded rounds, row-aligned with the table); ``summary.json``
(mean and 95% CI per cell, the per-round solver statistics, the configuration and its
conventions, versions, device, wall time); and figures (``regret`` and ``final_regret`` as PNG and PDF;
``figure1.png``/``.pdf`` for ``reproduce all``; regret against a hyperparameter for grids).

A killed command continues with ``--resume`` (finished units are kept, nothing is repeated);
an output directory that holds another configuration (or results of other code: the digest
covers the library's version and source) is refused unless ``--overwrite``.

Exit status: 0 on success; 2 for bad input (one line naming the argument); 3 when a run
finished but some seeds had non-finite decisions: those seeds are *invalid*, left out of the
means (``seeds_invalid`` in ``summary.json``) and reported on stderr.

On CPU the seeds are spread over one XLA device per usable core (``--host-devices auto``, the
default; per-seed results are the same bits for any device count).

Compiled rollouts are cached on disk (JAX's persistent compilation cache, in
``$E2D_JAX_CACHE_DIR`` or ``~/.cache/e2d_jax/jax``; ``E2D_JAX_CACHE_DIR=off`` turns it off), so
a repeated command compiles less.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np


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


def _host_devices(text):
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


def _common(p, out_required=True):
    p.add_argument("--out", required=out_required, default=None, help="output directory")
    p.add_argument("--resume", action="store_true", help="continue an unfinished run in --out")
    p.add_argument("--overwrite", action="store_true", help="delete what --out holds and start over")
    p.add_argument("--x64", action="store_true", help="run in float64")
    p.add_argument("--host-devices", type=_host_devices, default="auto",
                   help="on CPU, split the host into N XLA devices and spread the seeds over them (default auto: "
                        "one per core this process may use with the local executor, 1 with ray, whose tasks "
                        "already spread over the cores; measured 1.9x faster with 2 on 2 cores for Anytime-E2D; "
                        "per-seed results are the same bits for any N; programs with a LAPACK call, e.g. TS at "
                        "d > 12, run one device at a time)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="where the work units run: local (this machine's devices, default) or ray (Ray tasks; "
                        "a local Ray instance unless --address; pip install 'e2d_jax[ray]')")
    p.add_argument("--address", default=None,
                   help="ray: HOST:PORT of a running Ray head (--out must then be a path every node sees)")
    p.add_argument("--workers", type=_positive_int("--workers"), default=None,
                   help="ray: tasks at once on a local Ray instance (default: the machine's cores)")
    p.add_argument("--gpus-per-task", type=_nonneg_int("--gpus-per-task"), default=None,
                   help="ray: GPUs each task asks for (default 0)")
    p.add_argument("--part", default=None, metavar="I/N",
                   help="run only the I-th of N disjoint parts of the work units into --out (job arrays); "
                        "the last part to finish writes the tables, or --resume / e2d-jax plot does")


def build_parser() -> argparse.ArgumentParser:
    from e2d_jax import registry

    parser = argparse.ArgumentParser(prog="e2d-jax", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate agents over many seeds on one instance")
    envs = ", ".join(f"{k} ({v[1]})" for k, v in sorted(registry.ENVIRONMENTS.items()))
    agents = ", ".join(f"{k} ({v[1]})" for k, v in sorted(registry.AGENTS.items()))
    run.add_argument("--env", default="semi-bandit", help=f"environment: {envs}")
    run.add_argument("--d", type=_positive_int("--d"), default=None, help="feature dimension (linear environments)")
    run.add_argument("--arms", type=int, default=None, help="number of actions K (>= 2)")
    run.add_argument("--models", type=int, default=None, help="size of a finite model class (>= 2)")
    run.add_argument("--sigma", type=_positive_float("--sigma"), default=1.0, help="noise std")
    run.add_argument("--instance-seed", type=_nonneg_int("--instance-seed"), default=0, help="seed of the random instance")
    run.add_argument("--horizon", type=_positive_int("--horizon"), required=True, help="rounds n")
    run.add_argument("--seeds", type=_positive_int("--seeds"), default=100, help="number of runs")
    run.add_argument("--seed", type=_nonneg_int("--seed"), default=0, help="master seed (see e2d_jax.run_keys)")
    run.add_argument("--agents", default="ucb,ts", help=f"comma-separated; name[@param] or e2d-nN: {agents}")
    run.add_argument("--record-every", type=_positive_int("--record-every"), default=None,
                     help="record every k-th round (default: horizon/200)")
    run.add_argument("--batch-size", type=_positive_int("--batch-size"), default=None,
                     help="seeds per work unit (chunk; default: chosen from the configuration, at most 1000)")
    for flag, kwargs in registry.AGENT_FLAGS:
        run.add_argument(flag, **kwargs)
    _common(run)

    rep = sub.add_parser("reproduce", help="the paper's experiments (Appendix 'Experiments') and Figure 1")
    rep.add_argument("experiment", choices=["exp1", "exp2", "all", "sensitivity", "candidates"],
                     help="exp1, exp2 or all (Figure 1); sensitivity: final regret against each algorithm's "
                          "hyperparameter on both shapes over random instances; candidates: what decides "
                          "Experiment 2, on the paper's and the authors' instance distributions")
    rep.add_argument("--seeds", type=_positive_int("--seeds"), default=None,
                     help="seeds per instance (default 100, as in the paper; sensitivity: 500 on exp1, 200 on "
                          "exp2; candidates: 20)")
    rep.add_argument("--conventions", choices=["implementation", "paper-text"], default="implementation",
                     help="information without the 1/2 as in the authors' implementation (default) or with it "
                          "as in the paper's text")
    rep.add_argument("--instances", type=_positive_int("--instances"), default=None,
                     help="instances (seeds 0..N-1; default 1: one instance kept fixed, as in the paper; "
                          "sensitivity: 20; candidates: 100)")
    rep.add_argument("--solver", choices=["saddle", "paper"], default=None,
                     help="E2D's DEC solver (default saddle: exact; paper: 100 FW steps on a 50-point grid)")
    _common(rep, out_required=False)

    sw = sub.add_parser("sweep", help="run a sweep described by a TOML file")
    sw.add_argument("spec", help="the sweep's TOML file (example: sweeps/eps_constant.toml)")
    _common(sw, out_required=False)

    pl = sub.add_parser("plot", help="redraw the figures of stored results")
    pl.add_argument("dir", help="a results directory (or a 'reproduce all' directory)")
    pl.add_argument("--hparam", default=None, help="draw final regret against this hyperparameter")
    return parser


def _setup_jax(args) -> None:
    host_devices = host_device_count(args)
    xla_flags = os.environ.get("XLA_FLAGS", "")
    if (host_devices > 1 and "xla_force_host_platform_device_count" not in xla_flags
            and not _backends_initialised()):
        # Must happen before JAX initialises its CPU backend. If a caller (a notebook, a test)
        # already initialised JAX in this process the flag would have no effect: the run uses
        # the devices that exist and the environment is left alone. It does not touch GPUs.
        os.environ["XLA_FLAGS"] = (xla_flags + f" --xla_force_host_platform_device_count={host_devices}").strip()
    import jax

    if getattr(args, "x64", False):
        jax.config.update("jax_enable_x64", True)
    _enable_compilation_cache()


def _backends_initialised() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # another JAX: assume not, as before
        return False


def _enable_compilation_cache() -> None:
    """Point JAX's persistent compilation cache at ``$E2D_JAX_CACHE_DIR`` (default
    ``~/.cache/e2d_jax/jax``); ``E2D_JAX_CACHE_DIR=off`` leaves it disabled."""
    import jax

    path = os.environ.get("E2D_JAX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "e2d_jax", "jax")
    if path.strip().lower() == "off":
        return
    try:
        os.makedirs(path, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    except OSError:
        pass  # an unwritable home only costs the cache


def _run_spec(args):
    from e2d_jax import registry
    from e2d_jax.experiments.spec import AgentEntry, SweepSpec

    options = {flag.lstrip("-").replace("-", "_"): getattr(args, flag.lstrip("-").replace("-", "_"))
               for flag, _ in registry.AGENT_FLAGS}
    options = {k: v for k, v in options.items() if v is not None}
    if args.arms is not None and args.arms < 2:
        raise ValueError(f"--arms must be >= 2, got {args.arms}")
    if args.models is not None and args.models < 2:
        raise ValueError(f"--models must be >= 2, got {args.models}")
    names = [a.strip() for a in args.agents.split(",") if a.strip()]
    if not names:
        raise ValueError("--agents: give at least one agent")
    parsed = [registry.parse_agent(a, args.horizon, options) for a in names]
    registry.check_flags_apply(options, parsed)
    labels = [a.label for a in parsed]
    if len(set(labels)) != len(labels):
        raise ValueError(f"--agents: an agent is listed twice: {args.agents!r}")
    agents = tuple(AgentEntry.make(label, options) for label in labels)
    return SweepSpec(env=args.env, d=args.d, arms=args.arms, models=args.models, sigma=args.sigma,
                     instance_seeds=(args.instance_seed,), horizon=args.horizon, seeds=args.seeds, seed=args.seed,
                     agents=agents, record_every=args.record_every, chunk_size=args.batch_size, x64=args.x64,
                     name="run")


def _figures(out: Path, summary: dict, title: str) -> None:
    from e2d_jax.experiments import storage
    from e2d_jax.plotting import plot_final_distribution, plot_hyperparameter, plot_results

    for suffix in ("png", "pdf"):
        storage.atomic_write(out / f"regret.{suffix}",
                             lambda f, s=suffix: plot_results(out, title=title).savefig(f, format=s))
        storage.atomic_write(out / f"final_regret.{suffix}",
                             lambda f, s=suffix: plot_final_distribution(out, title=title).savefig(f, format=s))
    hps = sorted({k for c in summary["agents"].values() for k in c["hyperparameters"]})
    for hp in hps:
        storage.atomic_write(out / f"regret_vs_{hp}.png", lambda f, hp=hp: plot_hyperparameter(out, hp, f, title=title))


def _title(spec, summary) -> str:
    dims = ", ".join(f"{k}={v}" for k, v in (("d", spec.d), ("K", spec.arms), ("M", spec.models)) if v is not None)
    conv = f", {spec.conventions} conventions" if spec.conventions else ""
    inst = f", {len(spec.instance_seeds)} instances" if len(spec.instance_seeds) > 1 else ""
    return f"{spec.name}: {spec.env}{', ' + dims if dims else ''}, n={spec.horizon}, {spec.seeds} seeds{inst}{conv}"


def _report(summary: dict, out: Path) -> int:
    """Prints the summary table; returns 3 if a cell has invalid seeds."""
    conv = summary.get("conventions")
    print(f"\n{summary['name']}" + (f" ({conv} conventions)" if conv else "") + f" -> {out}")
    width = max(len(k) for k in summary["agents"])
    print(f"  {'cell':{width}s}  {'final regret':>12s}  {'95% CI':>19s}  {'seeds':>6s}  {'seed-rounds/s':>13s}")
    invalid = {}
    for label, c in summary["agents"].items():
        lo, hi = c["final_regret_ci95"]
        rate = c["seed_rounds_per_second"]
        print(f"  {label:{width}s}  {c['final_regret_mean']:12.2f}  [{lo:8.2f}, {hi:8.2f}]  {c['seeds']:6d}  "
              f"{rate or 0:13,.0f}")
        if c["seeds_invalid"]:
            invalid[label] = c["seeds_invalid"]
    if invalid:
        detail = ", ".join(f"{k}: {v}" for k, v in invalid.items())
        print(f"e2d-jax: INVALID SEEDS: non-finite decisions in {detail}; these seeds are left out of the "
              "means (summary.json 'seeds_invalid'). Exit status 3.", file=sys.stderr, flush=True)
        return 3
    return 0


def _executor(args):
    from e2d_jax.experiments.executors import make_executor

    return make_executor(args.executor, address=args.address, workers=args.workers,
                         gpus_per_task=args.gpus_per_task)


def _execute(spec, out: Path, args, executor=None) -> tuple[dict, int]:
    from e2d_jax.experiments import run_sweep

    summary = run_sweep(spec, out, resume=args.resume, overwrite=args.overwrite,
                        progress=False if args.quiet else None, executor=executor or _executor(args),
                        part=args.part)
    if not summary.get("complete", True):
        i, n = summary["part"]
        print(f"{spec.name}: part {i}/{n} ran {summary['ran']} units; {summary['units_done']} of {summary['units']} "
              f"units of the sweep are done in {out}. The tables and figures are written by the part that "
              f"finishes last, or by `e2d-jax plot {out}` once all parts are done.")
        return summary, 0
    _figures(out, summary, _title(spec, summary))
    return summary, _report(summary, out)


def _fail(parser, err) -> None:
    parser.exit(2, f"{parser.prog}: error: {err}\n")


_INTERRUPTED = ("\ne2d-jax: interrupted. Finished chunks are kept (each is written atomically); "
                "run the same command with --resume to continue.")


def main(argv=None) -> int:
    """The command line (``e2d-jax``); returns the exit status.

    Ctrl-C (SIGINT) sets ``runner.INTERRUPTED`` as well as raising KeyboardInterrupt, so the
    run stops at the next unit and ends with status 130 and the resume hint even when the
    KeyboardInterrupt was swallowed on the way (it can be, if it lands while a finalizer or
    callback runs)."""
    import signal
    import threading

    from e2d_jax.experiments import runner

    runner.INTERRUPTED.clear()
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)

    def on_sigint(signum, frame):
        runner.INTERRUPTED.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        status = _main(argv)
    finally:
        signal.signal(signal.SIGINT, previous)
    if runner.INTERRUPTED.is_set() and status != 130:
        print(_INTERRUPTED, file=sys.stderr, flush=True)
        return 130
    return status


def _main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "plot":
        _setup_jax(args)
    from e2d_jax.experiments import SweepError, load_toml

    t0 = time.perf_counter()
    try:
        if args.command == "run":
            spec = _run_spec(args)
            return _execute(spec, Path(args.out), args)[1]
        if args.command == "sweep":
            spec = load_toml(args.spec)
            out = Path(args.out or Path("runs") / spec.name)
            return _execute(spec, out, args)[1]
        if args.command == "reproduce":
            base = Path(args.out or "runs/reproduce")
            status, executor, complete = 0, _executor(args), True
            for spec in _reproduce_specs(args):
                summary, code = _execute(spec, base / spec.name, args, executor)
                status, complete = max(status, code), complete and summary.get("complete", True)
            if args.experiment == "all" and complete:
                _figure1(base, args.conventions)
            print(f"reproduce {args.experiment}: {time.perf_counter() - t0:.0f} s wall")
            return status
        return _plot(Path(args.dir), args.hparam)
    except SweepError as err:
        _fail(parser, err)
    except ValueError as err:
        _fail(parser, err)
    except KeyboardInterrupt:
        print(_INTERRUPTED, file=sys.stderr, flush=True)
        return 130
    except OSError as err:
        import errno

        where = f" {err.filename}" if getattr(err, "filename", None) else ""
        if err.errno == errno.ENOSPC:
            parser.exit(1, f"{parser.prog}: error: no space left on the device while writing{where}. Nothing "
                           "half-written was kept; finished chunks are; free space and rerun with --resume.\n")
        _fail(parser, f"cannot write the results:{where}: {err.strerror or err}")
    return 2


def _reproduce_specs(args) -> list:
    from e2d_jax.experiments import presets

    if args.experiment in ("sensitivity", "candidates"):
        if args.conventions != "implementation" or args.solver is not None:
            raise ValueError(f"reproduce {args.experiment}: --conventions and --solver do not apply (the sweep "
                             "measures both conventions and both solvers itself)")
        if args.experiment == "sensitivity":
            return [presets.sensitivity(name, seeds=args.seeds, instances=args.instances or 20)
                    for name in ("exp1", "exp2")]
        specs = [presets.exp2_candidates(env, seeds=args.seeds or 20, instances=args.instances or 100)
                 for env in presets.DISTRIBUTIONS]
        return specs + [presets.exp2_solver(env, seeds=args.seeds or 20, instances=min(args.instances or 20, 20))
                        for env in presets.DISTRIBUTIONS]
    names = ["exp1", "exp2"] if args.experiment == "all" else [args.experiment]
    return [presets.experiment(name, seeds=args.seeds or 100, conventions=args.conventions,
                               instances=args.instances or 1, solver=args.solver) for name in names]


def _figure1(base: Path, conventions: str) -> None:
    from e2d_jax.experiments import storage
    from e2d_jax.plotting import plot_figure1

    dirs = {f"Experiment 1: d=3, n=2000 ({conventions})": base / "exp1",
            f"Experiment 2: d=30, n=1000 ({conventions})": base / "exp2"}
    for suffix in ("png", "pdf"):
        storage.atomic_write(base / f"figure1.{suffix}", lambda f, s=suffix: plot_figure1(dirs).savefig(f, format=s))
    print(f"wrote {base / 'figure1.png'} and {base / 'figure1.pdf'}")


def _plot(path: Path, hparam) -> int:
    import json

    from e2d_jax.experiments import SweepSpec
    from e2d_jax.experiments import storage
    from e2d_jax.plotting import plot_hyperparameter

    if (path / "exp1" / storage.SUMMARY).exists() and (path / "exp2" / storage.SUMMARY).exists():
        conv = json.loads((path / "exp1" / storage.SUMMARY).read_text()).get("conventions") or ""
        _figure1(path, conv)
        for name in ("exp1", "exp2"):
            _plot(path / name, None)
        return 0
    summary_path = path / storage.SUMMARY
    if not summary_path.exists() and (path / storage.MANIFEST).exists():
        from e2d_jax.experiments.runner import collect_stored

        collect_stored(path)  # e.g. the parts of a job array have all finished
    if not summary_path.exists():
        raise ValueError(f"plot: {path} holds no results (no {storage.SUMMARY}; run or --resume first)")
    summary = json.loads(summary_path.read_text())
    spec = SweepSpec.from_dict(summary["config"])
    _figures(path, summary, _title(spec, summary))
    if hparam:
        storage.atomic_write(path / f"regret_vs_{hparam}.png", lambda f: plot_hyperparameter(path, hparam, f))
    print(f"redrew the figures in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
