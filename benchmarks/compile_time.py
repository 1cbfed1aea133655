"""Compile time and program size of the Anytime-E2D rollout, per case, in fresh processes.

What: for Anytime-E2D with the command line's options (``registry`` agent ``anytime-e2d``;
on linear models ``divergence`` as ``--divergence``, default ``squared``) on

    exp1              semi-bandit d=3, K=10 (the paper's Experiment 1 shape)
    exp2              semi-bandit d=30, K=10 (Experiment 2 shape)
    finite-mab        finite-mab K=5, M=30
    finite-revealing  finite-revealing K=10, M=30

it builds the rollout that ``simulate`` compiles (``rollout_program``: the seeds vmapped,
``--lanes`` = 64 per call, the CPU default; one device, float32, instance seed 0, horizon
``--horizon`` recorded every ``--record-every`` rounds) and times, in a fresh Python process
per case and repeat (so no in-memory cache is shared):

  lower_s        tracing and lowering to StableHLO (``jax.jit(...).lower``);
  compile_s      XLA's compile of the lowered program (``.compile()``);
  first_s        lower_s + compile_s: the wait before the first round runs;
  run_s          the first call of the compiled program (``--horizon`` rounds, 64 seeds).

and counts the program's operations (static counts: a loop's body is counted once):

  stablehlo_ops  operations in ``lower(...).as_text()`` (StableHLO; function definitions,
                 returns and the mesh declaration left out);
  hlo_ops        instructions of the optimized HLO (``compile().as_text()``), fused ones
                 included, parameters left out;
  fusions        fusion instructions in the optimized HLO (each one kernel);
  kernels        instructions that run as their own kernel or thunk: those of the
                 computations XLA runs as control flow (the entry, while bodies and
                 conditions, conditional branches, calls), without parameters, constants,
                 tuples, get-tuple-element, bitcasts and the control-flow instructions
                 themselves; a fusion counts once;
  round_*        the same three counts for one round: the body of the rollout's round loop
                 (the while loop of known trip count ``--record-every`` with the largest body)
                 and everything it calls; what runs once per round (a loop inside a round,
                 e.g. the solver's, is counted once).

JAX's persistent compilation cache is off in the workers (``E2D_JAX_CACHE_DIR=off``,
``JAX_COMPILATION_CACHE_DIR`` removed, ``enable_compilation_cache`` never called) and
``XLA_FLAGS`` is cleared, so every case compiles from nothing on one CPU device (or the
first accelerator).

Versions: ``--root`` puts a checkout first on PYTHONPATH (the workers run from it), so an
older checkout can be measured with the same script. The worker uses the package layout it
finds: ``e2d_jax.sim`` and ``e2d_jax.experiments.registry`` (0.3) or ``e2d_jax.simulate`` and
``e2d_jax.registry`` (0.2); both build the same instance and the same agent as their ``e2d-jax
run``. Pass ``--python`` for a checkout that needs another interpreter. (Timing the CLI
instead, whose summary.json records each unit's ``compile_seconds`` in every version, would
need no branch but gives neither the lowering apart nor the programs to count.)

Run:  python benchmarks/compile_time.py [--root PATH] [--cases exp1,exp2,finite-mab,finite-revealing]
          [--repeats 3] [--horizon 100] [--record-every 25] [--lanes 64] [--json OUT]

Typical printout (2-core shared x86-64 CPU, loaded by other jobs, jax 0.10.2, e2d_jax 0.3.0, one
repeat; ``results/cpu-2core/compile_time_v0.3.0.json``, and ``compile_time_v0.2.0.json`` for
a 0.2.0 checkout measured right after with ``--root``)::

    # /path/to/e2d_jax (e8df781+uncommitted), x86_64, 2 CPUs; 64 lanes, horizon 100 recorded every 25; median of 1 fresh process(es)
    case              lower_s compile_s  first_s  run_s stablehlo_ops hlo_ops fusions kernels | round: hlo_ops fusions kernels
    exp1                  1.5      11.0     12.5    0.1         2,389   4,018     346     477 |          3,599     282     383
    exp2                  3.5      17.9     21.4    1.0         6,869  19,194     676     812 |         18,775     612     718
    finite-mab            3.5      16.2     19.6    1.6         4,195   5,509     435     606 |          5,004     363     502
    finite-revealing      4.7      14.3     19.0    2.7         6,338   7,968     560     736 |          7,461     488     632
    # e2d_jax 0.3.0 (source 80129e2b4754cbcf) from /path/to/e2d_jax, jax 0.10.2, device cpu:0

On that machine the times of one case vary up to 2x between runs (other jobs share the two
cores); the operation counts do not vary. Use ``--repeats 3`` or more for times.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

CASES = {
    # name: (registry environment, options)
    "exp1": ("semi-bandit", {"d": 3, "arms": 10}),
    "exp2": ("semi-bandit", {"d": 30, "arms": 10}),
    "finite-mab": ("finite-mab", {"arms": 5, "models": 30}),
    "finite-revealing": ("finite-revealing", {"arms": 10, "models": 30}),
}
LINEAR_ENVS = ("semi-bandit",)


# --------------------------------------------------------------------------------------
# Counting operations in program text


_MLIR_OP = re.compile(r'^\s*(?:%[\w#:]+(?:\s*,\s*%[\w#:]+)*\s*=\s*)?"?([a-z_]+\.[a-z_][\w.]*)')
_MLIR_SKIP = {"func.func", "func.return", "stablehlo.return", "sdy.mesh", "sdy.return"}


def count_stablehlo(text: str) -> int:
    """Operations in StableHLO (MLIR) text, one per line that starts with ``dialect.op``."""
    n = 0
    for line in text.splitlines():
        m = _MLIR_OP.match(line)
        if m and m.group(1) not in _MLIR_SKIP:
            n += 1
    return n


_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_INSTR = re.compile(r"^\s+(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"(?:^|[\s)])([a-z][a-z0-9\-]*)\(")
_ONE_CALL = re.compile(r"\b(calls|to_apply|condition|body|true_computation|false_computation)=%?([\w.\-]+)")
_MANY_CALLS = re.compile(r"\b(branch_computations|called_computations)=\{([^}]*)\}")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_CONTROL_OPS = {"while", "conditional", "call"}
_FREE_OPS = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "partition-id",
             "replica-id"}


def parse_hlo(text: str):
    """{computation: [(opcode, [called computations], line)]} and the entry's name."""
    comps, entry, current = {}, None, None
    for line in text.splitlines():
        if not line.startswith((" ", "\t")):
            m = _HEADER.match(line)
            if m and not line.startswith("HloModule"):
                current = m.group(2)
                comps[current] = []
                if m.group(1):
                    entry = current
            elif line.startswith("}"):
                current = None
            continue
        if current is None:
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        rest = m.group(2)
        op = _OPCODE.search(rest)
        if not op:
            continue
        called = [c for _, c in _ONE_CALL.findall(rest)]
        for _, group in _MANY_CALLS.findall(rest):
            called += [c.strip().lstrip("%") for c in group.split(",") if c.strip()]
        comps[current].append((op.group(1), called, rest))
    return comps, entry


def _walk(comps, roots):
    """(control computations, all computations) reachable from ``roots`` (control)."""
    control, every, todo = set(), set(), list(roots)
    while todo:
        name = todo.pop()
        if name in control or name not in comps:
            continue
        control.add(name)
        every.add(name)
        for op, called, _ in comps[name]:
            if op in _CONTROL_OPS:
                todo.extend(called)
            else:  # fused or applied: not run as control flow
                stack = list(called)
                while stack:
                    c = stack.pop()
                    if c in every or c not in comps:
                        continue
                    every.add(c)
                    for _, inner, _ in comps[c]:
                        stack.extend(inner)
    return control, every


def _counts(comps, roots):
    control, every = _walk(comps, roots)
    hlo_ops = sum(1 for c in every for op, _, _ in comps[c] if op != "parameter")
    fusions = sum(1 for c in control for op, _, _ in comps[c] if op == "fusion")
    kernels = sum(1 for c in control for op, _, _ in comps[c] if op not in _FREE_OPS | _CONTROL_OPS)
    return dict(hlo_ops=hlo_ops, fusions=fusions, kernels=kernels)


def count_hlo(text: str, round_trip: int | None = None) -> dict:
    """Counts of the whole optimized program and (``round_*``) of the body of its round loop:
    the while loop of known trip count ``round_trip`` whose body has the most kernels."""
    comps, entry = parse_hlo(text)
    out = _counts(comps, [entry])
    best = None
    control, _ = _walk(comps, [entry])
    for c in control:
        for op, called, rest in comps[c]:
            trip = _TRIP.search(rest)
            if op != "while" or not trip or (round_trip is not None and int(trip.group(1)) != round_trip):
                continue
            counts = _counts(comps, called)
            if best is None or counts["kernels"] > best["kernels"]:
                best = counts
    for key in ("hlo_ops", "fusions", "kernels"):
        out[f"round_{key}"] = best[key] if best else None
    return out


# --------------------------------------------------------------------------------------
# The worker: one case in this process


def _build(case: str, horizon: int, divergence: str):
    """(env, params, agent, make, version) with the package layout this checkout has; ``make(env,
    agent, params, horizon, record_every, lanes, device) -> (jitted, args)`` builds what
    ``simulate`` compiles."""
    import importlib.util

    import jax

    import e2d_jax

    env_name, options = CASES[case]
    opts = {"divergence": divergence} if env_name in LINEAR_ENVS else {}
    if importlib.util.find_spec("e2d_jax.sim.program") is not None:  # 0.5 layout
        from e2d_jax.experiments import registry
        from e2d_jax.sim.simulate import rollout_program

        def make(env, agent, params, horizon, record_every, lanes, device):
            return rollout_program(params, agent, horizon=horizon, record_every=record_every, lanes=lanes, env=env)

        env, params, family = registry.build_instance(env_name, 0, options, dtype="float32")
        agent = registry.agent_factory("anytime-e2d", horizon=horizon, options=opts, family=family)()
        return env, params, agent, make, e2d_jax.__version__
    if importlib.util.find_spec("e2d_jax.sim") is not None:  # 0.3 layout
        from e2d_jax.experiments import registry
        from e2d_jax.sim.rollout import run_keys
        from e2d_jax.sim.simulate import make_batched_rollout

        env, params, family = registry.build_instance(env_name, 0, options, dtype="float32")
        agent = registry.agent_factory("anytime-e2d", horizon=horizon, options=opts, family=family)()
    else:  # 0.2 layout
        from e2d_jax import registry
        from e2d_jax.simulate import make_batched_rollout, run_keys

        spec = registry.EnvSpec(env_name, dtype="float32", **options)
        env, params = registry.build_instances(spec, [0])
        params = jax.tree_util.tree_map(lambda x: x[0], params)
        agent = registry.build_agent_factory(registry.parse_agent("anytime-e2d", horizon, opts), env.model(params))()

    def make(env, agent, params, horizon, record_every, lanes, device):
        import numpy as np

        fn = make_batched_rollout(env, agent, horizon, record_every, lanes, devices=[device])
        return fn, (run_keys(0, np.arange(lanes)), params, {})

    return env, params, agent, make, e2d_jax.__version__


def _source_digest() -> str | None:
    """The library's source digest as its results record it (``versions()['e2d_jax_source']``)."""
    for module in ("e2d_jax.experiments.provenance", "e2d_jax.experiments.runner"):
        try:
            return __import__(module, fromlist=["source_digest"]).source_digest()
        except (ImportError, AttributeError):
            continue
    return None


def worker(cfg: dict) -> dict:
    import jax

    import e2d_jax

    t0 = time.perf_counter()
    env, params, agent, make, version = _build(cfg["case"], cfg["horizon"], cfg["divergence"])
    setup_s = time.perf_counter() - t0
    device = jax.devices()[0]
    fn, args = make(env, agent, params, cfg["horizon"], cfg["record_every"], cfg["lanes"], device)
    t0 = time.perf_counter()
    lowered = fn.lower(*args)
    lower_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    run_s = time.perf_counter() - t0
    out = dict(cfg, setup_s=setup_s, lower_s=lower_s, compile_s=compile_s, first_s=lower_s + compile_s, run_s=run_s,
               device=str(device), jax=jax.__version__, e2d_jax=version, e2d_jax_source=_source_digest(),
               e2d_jax_file=os.path.relpath(e2d_jax.__file__, os.path.dirname(os.path.dirname(e2d_jax.__file__))))
    if cfg.get("count", True):
        out["stablehlo_ops"] = count_stablehlo(lowered.as_text())
        out.update(count_hlo(compiled.as_text(), cfg["record_every"]))
    return out


# --------------------------------------------------------------------------------------
# The driver


def _git(root: str) -> str | None:
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def run_case(cfg: dict, root: str, python: str) -> dict:
    env = dict(os.environ, PYTHONPATH=root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH")
                                             else ""),
               E2D_JAX_CACHE_DIR="off")
    for name in ("XLA_FLAGS", "JAX_COMPILATION_CACHE_DIR"):
        env.pop(name, None)
    proc = subprocess.run([python, os.path.abspath(__file__), "--worker", json.dumps(cfg)], env=env, cwd=root,
                          capture_output=True, text=True)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{cfg['case']} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def _fmt(x, width, spec=",d"):
    return f"{'-':>{width}s}" if x is None else f"{x:>{width}{spec}}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the checkout to measure (put first on PYTHONPATH; default: this script's checkout)")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the workers (default: this one)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per case (median of the times)")
    ap.add_argument("--horizon", type=int, default=100)
    ap.add_argument("--record-every", type=int, default=25)
    ap.add_argument("--lanes", type=int, default=64, help="seeds per compiled call (simulate's CPU default: 64)")
    ap.add_argument("--divergence", default="squared", choices=["squared", "kl"],
                    help="the linear cases' divergence (0.3's default: squared; 0.2's: kl)")
    ap.add_argument("--json", default=None, help="report path (written after every case)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"--cases: unknown {unknown}; known: {list(CASES)}")
    root = os.path.abspath(args.root)
    report = {"commit": _git(root), "python": args.python, "platform": platform.platform(),
              "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
              "horizon": args.horizon, "record_every": args.record_every, "lanes": args.lanes,
              "divergence": args.divergence, "cases": []}
    print(f"# {root} ({report['commit']}), {report['processor']}, {report['cpus']} CPUs; {args.lanes} lanes, "
          f"horizon {args.horizon} recorded every {args.record_every}; median of {args.repeats} fresh process(es)",
          flush=True)
    print(f"{'case':17s} {'lower_s':>7s} {'compile_s':>9s} {'first_s':>8s} {'run_s':>6s} {'stablehlo_ops':>13s} "
          f"{'hlo_ops':>7s} {'fusions':>7s} {'kernels':>7s} | round: {'hlo_ops':>7s} {'fusions':>7s} {'kernels':>7s}",
          flush=True)
    for case in cases:
        runs = []
        for rep in range(args.repeats):
            cfg = dict(case=case, horizon=args.horizon, record_every=args.record_every, lanes=args.lanes,
                       divergence=args.divergence, count=rep == 0)
            runs.append(run_case(cfg, root, args.python))
        row = dict(runs[0])
        for key in ("setup_s", "lower_s", "compile_s", "first_s", "run_s"):
            row[key] = statistics.median(r[key] for r in runs)
            row[key + "_all"] = [r[key] for r in runs]
        report.setdefault("jax", row["jax"])
        report.setdefault("e2d_jax", row["e2d_jax"])
        report.setdefault("e2d_jax_source", row.get("e2d_jax_source"))
        report.setdefault("device", row["device"])
        report["cases"].append(row)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        print(f"{case:17s} {row['lower_s']:7.1f} {row['compile_s']:9.1f} {row['first_s']:8.1f} {row['run_s']:6.1f} "
              f"{_fmt(row.get('stablehlo_ops'), 13)} {_fmt(row.get('hlo_ops'), 7)} {_fmt(row.get('fusions'), 7)} "
              f"{_fmt(row.get('kernels'), 7)} |        {_fmt(row.get('round_hlo_ops'), 7)} "
              f"{_fmt(row.get('round_fusions'), 7)} {_fmt(row.get('round_kernels'), 7)}", flush=True)
    print(f"# e2d_jax {report.get('e2d_jax')} (source {report.get('e2d_jax_source')}) from {root}, "
          f"jax {report.get('jax')}, device {report.get('device')}")


if __name__ == "__main__":
    main()
