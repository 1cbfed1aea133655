"""Frank-Wolfe and the DEC solvers' throughput: solves per second and certified gaps, per
solver, budget and batch size.

What it measures. Random revealing semi-bandits of the paper's two shapes (Exp. 1: d = 3,
K = 10; Exp. 2: d = 30, K = 10; ``e2d_jax.semi_bandit``), float32, with a reference model
f_hat = f* + N(0, 0.3^2 I), a radius eps^2 log-uniform in [d/2000, d/5] (the ac-DEC) and a
multiplier lambda log-uniform in [0.1, 10] (the offset DEC). Each solver value of
:mod:`e2d_jax.dec.solvers` solves them through ``solver.solve(problem)`` on a
:class:`~e2d_jax.dec.linear.LinearAcdec` / :class:`~e2d_jax.dec.linear.LinearOffset`, batched
as ``jax.jit(jax.vmap(...))`` over problems, on ``jax.devices()[0]``:

* ``fw-grid``: :class:`FrankWolfeGrid` on the ac-DEC (gaps Delta_f) at the paper's budget
  (``SOLVERS["paper"]``: 100 Frank-Wolfe steps on each of 50 lambdas, no early stop) and at
  its default (``FrankWolfeGrid()``: up to 1,000 steps to a relative gap of 1e-3 on 50 lambdas
  and two refinements of 12);
* ``fw-offset``: plain smoothed Frank-Wolfe on the offset DEC, 100 steps (no early stop) and
  its default (up to 1,000 steps, 1e-3);
* ``saddle-offset`` / ``saddle-acdec``: :class:`Saddle` (mirror-prox) on the offset DEC and on
  the exact ac-DEC form, at its default (up to 4,000 iterations, 1e-3) and capped at 500;
* ``lambda-search``: :class:`LambdaSearch` on the ac-DEC with gaps Delta (the default there),
  with its default inner budget (up to 4,000) and capped at 500.

Every batch size b solves the same problems: the first max(b, m) of one random set, in calls of
b (m: as many as the smallest batch solves within ``--max-seconds``, at most ``--problems``),
so a batch's rate and the rate one at a time count the same work. Per row: compile seconds
(ahead of time, ``lower().compile()``), solves/s (problems / the median over ``--repeats`` of
the wall time of all calls), the iterations (mean per problem, and mean over calls of the
slowest problem of the call: under ``vmap`` a ``lax.while_loop`` runs until its slowest
problem stops, so a batch executes that many), microseconds per executed lane-iteration (wall
time / sum over calls of b x the call's iterations), the certified relative gap
(``gap / |value|``, median and 90th percentile) and the fraction with status OK. For the grid
and search solvers the iterations are summed over their lambdas. Every batch size is compiled
and run once, then timed ``--repeats`` times, the batch sizes taking turns. A batch whose pass
would take longer than ``--max-seconds`` is skipped, with a line that says so (predicted from
the previous batch size: a call's time in proportion to the batch on a CPU, to its square root
on an accelerator).

Reference oracles (``tests/helpers/reference.py``: cvxpy with Clarabel, and scipy; both come
with the ``test`` extra) check each answer on the first ``--reference-problems`` problems when
they are importable: the relative excess of its exact objective over the reference optimum,
and whether its certified lower bound is below that optimum. Without them a line says they
were skipped. A plain NumPy smoothed Frank-Wolfe (100 steps; on the ac-DEC on a 50-point
lambda grid, as the authors' code) is timed one problem at a time either way (none of this
with ``--reference-problems 0``).

Run::

    PYTHONPATH=. python benchmarks/fw_throughput.py [--shapes exp1,exp2] [--batches 1,10,100,1000]
        [--solvers fw-grid,fw-offset,...] [--budgets all|default] [--problems 100]
        [--max-seconds 10] [--repeats 3] [--reference-problems 5] [--json out.json]
    PYTHONPATH=. python benchmarks/fw_throughput.py --quick    # Exp. 1, batches 1 and 10, default budgets

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, e2d_jax 0.3.0, ``--shapes exp1``;
all the rows: ``benchmarks/results/cpu-2core/fw_throughput.json``)::

    device cpu: TFRT_CPU_0  Linux-6.18.44-x86_64-with-glibc2.36  2 CPUs  jax 0.10.2  e2d_jax 0.3.0
    reference oracles: cvxpy 1.9.3 (Clarabel) and scipy 1.17.1, on the first 5 problems

    == exp1: semi-bandit d=3, K=10 ==
    solver         budget        batch problems compile_s   solves/s  it mean it batch us/lane-it gap p50  gap p90   OK
    ...
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

SHAPES = {"exp1": (3, 10), "exp2": (30, 10)}
OPTIONAL = ("cvxpy", "scipy")
MISSING_HINT = "they come with the test extra: pip install 'e2d_jax[test]'"


def solver_table():
    """``{name: (program, gap_type, {budget: solver value})}``; each name's first budget is its
    ``"default"``, the one ``--budgets default`` and ``--quick`` run."""
    from e2d_jax.dec.solvers import SOLVERS, FrankWolfeGrid, LambdaSearch, Saddle

    return {
        "fw-grid": ("acdec", "delta_f", {"default": FrankWolfeGrid(), "paper": SOLVERS["paper"]}),
        "fw-offset": ("offset", "delta_f", {"default": FrankWolfeGrid(),
                                            "100 steps": FrankWolfeGrid(maxiter=100, rtol=0.0, check_every=100)}),
        "saddle-offset": ("offset", "delta_f", {"default": Saddle(), "maxiter=500": Saddle(maxiter=500)}),
        "saddle-acdec": ("acdec", "delta_f", {"default": Saddle(), "maxiter=500": Saddle(maxiter=500)}),
        "lambda-search": ("acdec", "delta", {"default": LambdaSearch(),
                                             "inner maxiter=500": LambdaSearch(inner=Saddle(maxiter=500))}),
    }


# --- problems -----------------------------------------------------------------------------

class Problems:
    """``n`` random problems of a shape: the solvers' inputs (float32, on the device) and the
    same numbers in float64 NumPy for the references."""

    def __init__(self, shape: str, n: int, seed: int = 0):
        from e2d_jax.envs import linear as envs

        d, k = SHAPES[shape]
        self.d, self.k, self.n = d, k, n
        keys = jax.random.split(jax.random.key(seed), n)
        params = jax.vmap(lambda key: envs.semi_bandit(key, d, k, dtype=jnp.float32))(keys)
        rng = np.random.default_rng(seed)
        f_hat = (np.asarray(params.theta, np.float64) + 0.3 * rng.normal(size=(n, d))).astype(np.float32)
        self.eps2 = (d * np.exp(rng.uniform(np.log(1 / 2000), np.log(1 / 5), n))).astype(np.float32)
        self.lam = np.exp(rng.uniform(np.log(0.1), np.log(10), n)).astype(np.float32)
        self.span = params.model.span
        self.f_hat_span = jnp.einsum("nd,ndr->nr", jnp.asarray(f_hat), self.span.basis)
        # References: G_pi = M_pi^T M_pi from the float32 observation matrices, in float64
        # (exactly positive semi-definite).
        obs = np.asarray(params.model.obs_matrices, np.float64)
        self.ref_features = np.asarray(params.model.features, np.float64)
        self.ref_grams = np.einsum("nkmi,nkmj->nkij", obs, obs)
        self.ref_f_hat = f_hat.astype(np.float64)

    def radius(self, program):
        """The per-problem argument: eps^2 (ac-DEC) or lambda (offset DEC)."""
        return self.eps2 if program == "acdec" else self.lam

    def calls(self, program, batch, count):
        """The first ``count`` problems (a multiple of ``batch``) as device-resident calls."""
        x = jnp.asarray(self.radius(program))
        out = []
        for start in range(0, count, batch):
            cut = lambda a: a[start:start + batch]
            out.append(jax.device_put((jax.tree_util.tree_map(cut, self.span), cut(self.f_hat_span), cut(x))))
        return out


def batched_solver(program, gap_type, solver):
    """``jit(vmap(solve one problem))`` with a solver value."""
    from e2d_jax.dec.linear import LinearAcdec, LinearOffset

    make = LinearAcdec if program == "acdec" else LinearOffset

    def one(span, f_hat, x):
        return solver.solve(make(span, f_hat, x, gap_type))[0]

    return jax.jit(jax.vmap(one))


# --- one row: a solver, a budget, a batch size --------------------------------------------

def run_calls(compiled, calls):
    """One call after another, each waited for: with several in flight, XLA's CPU runtime can
    run two at once, and two batched LAPACK calls (the Exp. 2 shape's solves) can then hold
    every thread of its pool and never finish."""
    t0 = time.perf_counter()
    outs = [jax.block_until_ready(compiled(*c)) for c in calls]
    return time.perf_counter() - t0, outs


def summarise(outs, batch, seconds):
    """The row's statistics from the outputs of one pass (a list of batched DecResults)."""
    value = np.concatenate([np.asarray(o.value, np.float64) for o in outs])
    gap = np.concatenate([np.asarray(o.gap, np.float64) for o in outs])
    status = np.concatenate([np.asarray(o.status) for o in outs])
    iters = [np.asarray(o.iterations, np.int64) for o in outs]
    per_call_max = np.array([i.max() for i in iters])
    it = np.concatenate(iters)
    rel = gap / np.maximum(np.abs(value), np.finfo(np.float32).tiny)
    rel = np.where(np.isfinite(rel), rel, np.inf)
    return dict(
        it_mean=float(it.mean()), it_p50=float(np.median(it)), it_p90=float(np.quantile(it, 0.9)),
        it_max=int(it.max()), it_batch=float(per_call_max.mean()),
        us_per_lane_iteration=1e6 * seconds / max(float(batch * per_call_max.sum()), 1.0),
        gap_p50=float(np.median(rel)), gap_p90=float(np.quantile(rel, 0.9)),
        ok=float(np.mean(status == 0)), nonfinite=int(np.sum(status == 2)),
    )


HEADER = (f"{'solver':14s} {'budget':17s} {'batch':>5s} {'problems':>8s} {'compile_s':>9s} {'solves/s':>10s} "
          f"{'it mean':>8s} {'it batch':>8s} {'us/lane-it':>10s} {'gap p50':>8s} {'gap p90':>8s} {'OK':>5s}")


def print_row(r):
    print(f"{r['solver']:14s} {r['budget']:17s} {r['batch']:5d} {r['problems']:8d} {r['compile_s']:9.2f} "
          f"{r['solves_per_s']:10,.1f} {r['it_mean']:8.0f} {r['it_batch']:8.0f} {r['us_per_lane_iteration']:10.3f} "
          f"{r['gap_p50']:8.1e} {r['gap_p90']:8.1e} {r['ok']:5.2f}", flush=True)


def measure_solver(probs: Problems, name, program, gap_type, budget, solver, batches, args, report, save):
    """The rows of one solver and budget. Every batch size is compiled and run once first, then
    timed ``--repeats`` times, the batch sizes taking turns (a shared machine's load then
    weighs on all of them alike). Returns the first problems' answers (value, lower bound,
    mu) for the reference checks."""
    fn = batched_solver(program, gap_type, solver)
    # A call's time grows in proportion to its batch on a CPU, far slower on an accelerator.
    growth = 1.0 if jax.devices()[0].platform == "cpu" else 0.5
    count = None  # problems of the smallest batch (the m of the module docstring)
    last = None  # (batch, seconds per call) of the last batch's first pass
    plan, lines = [], {}
    for b in batches:
        n_b = b if count is None else max(b, count) - max(b, count) % b
        predicted = None if last is None else (n_b // b) * last[1] * (b / last[0]) ** growth
        if predicted is not None and predicted > args.max_seconds:
            lines[b] = (f"{name:14s} {budget:17s} {b:5d}   skipped: a pass of {n_b} problems would take about "
                        f"{predicted:.0f} s (--max-seconds {args.max_seconds:g})")
            continue
        if n_b > probs.n:
            lines[b] = f"{name:14s} {budget:17s} {b:5d}   skipped: needs {n_b} problems (--problems {probs.n})"
            continue
        calls = probs.calls(program, b, n_b)
        t0 = time.perf_counter()
        compiled = fn.lower(*calls[0]).compile()
        compile_s = time.perf_counter() - t0
        if count is None:
            # As many problems as a pass fits in --max-seconds, up to --problems, a multiple of b.
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(*calls[0]))
            fit = int(args.max_seconds / max((time.perf_counter() - t0) / b, 1e-9))
            count = max(b, min(args.problems, fit, probs.n))
            n_b = count - count % b
            calls = probs.calls(program, b, n_b)
        seconds, _ = run_calls(compiled, calls)  # the first pass (allocations), not reported
        last = (b, seconds / len(calls))
        plan.append(dict(batch=b, problems=n_b, compiled=compiled, calls=calls, compile_s=compile_s, times=[]))
    first = None
    for _ in range(args.repeats):
        for p in plan:
            seconds, outs = run_calls(p["compiled"], p["calls"])
            p["times"].append(seconds)
            p.setdefault("outs", outs)
    for b in batches:
        if b in lines:
            print(lines[b], flush=True)
            continue
        p = next(p for p in plan if p["batch"] == b)
        seconds = float(np.median(p["times"]))
        row = dict(shape=args.current_shape, solver=name, program=program, gap_type=gap_type, budget=budget,
                   solver_value=repr(solver), batch=b, problems=p["problems"], calls=len(p["calls"]),
                   compile_s=p["compile_s"], seconds=seconds, seconds_all=p["times"],
                   solves_per_s=p["problems"] / seconds, **summarise(p["outs"], b, seconds))
        report["rows"].append(row)
        print_row(row)
        if first is None:
            outs = p["outs"]
            first = dict(value=np.concatenate([np.asarray(o.value, np.float64) for o in outs]),
                         lower=np.concatenate([np.asarray(o.lower_bound, np.float64) for o in outs]),
                         mu=np.concatenate([np.asarray(o.mu, np.float64) for o in outs]))
    save()
    return first


# --- the plain NumPy smoothed Frank-Wolfe (a NumPy research code's baseline) ----------------

def numpy_fw_offset(feats, grams, f_hat, lam, steps=100):
    """Smoothed FW for min_mu max_b a_b + c_b / (4 lam), one problem, pseudo-inverses."""
    k = feats.shape[0]
    r = feats @ f_hat
    mu = np.full(k, 1.0 / k)
    tau0 = None
    for it in range(steps):
        v = np.einsum("k,kij->ij", mu, grams)
        w = np.linalg.pinv(v) @ feats.T
        c = np.einsum("ik,ki->k", w, feats)
        h = r - mu @ r + c / (4 * lam)
        if tau0 is None:
            tau0 = max(0.1 * (h.max() - h.min()), 1e-6)
        tau = tau0 / np.sqrt(it + 1)
        p = np.exp((h - h.max()) / tau)
        p /= p.sum()
        b = (w * p) @ w.T
        g = -r - np.einsum("kij,ij->k", grams, b) / (4 * lam)
        gamma = 2.0 / (it + 3)
        mu = (1 - gamma) * mu
        mu[np.argmin(g)] += gamma
    return offset_objective(mu, feats, grams, f_hat, lam), mu


def numpy_fw_acdec(feats, grams, f_hat, eps2, steps=100, grid=50):
    """The authors' approach in NumPy: FW per lambda on a geometric grid, the best lambda."""
    best = (np.inf, None)
    for lam in np.geomspace(1e-3, 1e3, grid):
        val, mu = numpy_fw_offset(feats, grams, f_hat, lam, steps)
        if val + lam * eps2 < best[0]:
            best = (val + lam * eps2, mu)
    return best


def offset_objective(mu, feats, grams, f_hat, lam, gap_type="delta_f"):
    """max_b <phi_b - phi_mu, f_hat> + ||x_b||^2_{V(mu)^+} / (4 lam), in float64."""
    r = feats @ f_hat
    x = feats if gap_type == "delta_f" else feats - mu @ feats
    c = np.einsum("ki,ij,kj->k", x, np.linalg.pinv(np.einsum("k,kij->ij", mu, grams)), x)
    return float(np.max(r - mu @ r + c / (4 * lam)))


def time_numpy(probs: Problems, n):
    """Seconds per solve of the NumPy Frank-Wolfe, one problem at a time (medians)."""
    F, G, FH = probs.ref_features, probs.ref_grams, probs.ref_f_hat
    rows = []
    for program, what, fn in (
        ("offset", "NumPy FW, 100 steps", lambda i: numpy_fw_offset(F[i], G[i], FH[i], float(probs.lam[i]))),
        ("acdec", "NumPy FW, 100 steps x 50 lambdas", lambda i: numpy_fw_acdec(F[i], G[i], FH[i], float(probs.eps2[i]))),
    ):
        times = []
        for i in range(n):
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
        rows.append(dict(program=program, method=what, problems=n, seconds_per_solve=float(np.median(times))))
    return rows


# --- reference oracles (optional) -----------------------------------------------------------

def reference_modules():
    """``(reference module, versions)`` or ``(None, why)`` when cvxpy or scipy is missing."""
    versions = {}
    for mod in OPTIONAL:
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            return None, f"{mod} is not installed"
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "helpers"))
    import reference

    return reference, versions


def check_references(ref, probs: Problems, n, answers, table):
    """Relative excess of each solver's answer over the reference optimum, and whether its
    certified lower bound lies below it, on the first ``n`` problems."""
    F, G, FH = probs.ref_features, probs.ref_grams, probs.ref_f_hat
    optimum, times = {}, {}
    for program, gap_type in sorted({table[name][:2] for name, _ in answers}):
        vals, secs = [], []
        for i in range(n):
            t0 = time.perf_counter()
            if program == "acdec":
                vals.append(ref.linear_acdec_reference(F[i], G[i], FH[i], float(probs.eps2[i]), gap_type=gap_type)[0])
            else:
                vals.append(ref.linear_offset_cvx(F[i], G[i], FH[i], float(probs.lam[i]), gap_type=gap_type)[0])
            secs.append(time.perf_counter() - t0)
        optimum[program, gap_type] = np.asarray(vals)
        times[program, gap_type] = float(np.median(secs))
    rows = []
    for (name, budget), ans in answers.items():
        program, gap_type, _ = table[name]
        best = optimum[program, gap_type]
        objective = []
        for i in range(n):
            mu = np.clip(ans["mu"][i], 0.0, None)
            mu = mu / mu.sum()
            if program == "acdec":
                objective.append(ref.linear_exact_objective(mu, F[i], G[i], FH[i], float(probs.eps2[i]), gap_type))
            else:
                objective.append(offset_objective(mu, F[i], G[i], FH[i], float(probs.lam[i]), gap_type))
        excess = (np.asarray(objective) - best) / np.abs(best)
        # float32 answers checked in float64: a bound may exceed the optimum by rounding
        valid = ans["lower"][:n] <= best + 1e-4 * np.abs(best)
        rows.append(dict(solver=name, budget=budget, problems=n, excess_p50=float(np.median(excess)),
                         excess_max=float(excess.max()), lower_bound_valid=int(valid.sum())))
    return rows, {f"{p}/{g}": s for (p, g), s in times.items()}


# --- main -----------------------------------------------------------------------------------

def machine():
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return name


#: What the columns of a row mean (``--help`` and the printout's legend).
COLUMNS = """columns: compile_s = seconds to compile the batched solver (ahead of time); solves/s = problems /
median wall time of all calls; it mean = iterations per problem (mean); it batch = mean over calls of
the slowest problem's iterations (a vmapped while loop executes that many for the whole batch);
us/lane-it = microseconds per executed lane-iteration (wall time / sum over calls of batch x it batch);
gap p50, gap p90 = median and 90th percentile of the certified RELATIVE gap gap / |value|; OK = fraction
of problems with status OK (certified gap <= rtol |value| + atol, the solver's own tolerance: 1e-3
relative at the defaults, 0 for the fixed budgets "paper" and "100 steps", which therefore report MAX_ITER)"""


def main(argv=None):
    description = " ".join(__doc__.split("\n\n")[0].split())
    ap = argparse.ArgumentParser(description=description, epilog=COLUMNS,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated subset of " + ", ".join(SHAPES))
    ap.add_argument("--batches", default="1,10,100,1000", help="batch sizes, comma-separated")
    ap.add_argument("--solvers", default=None, help="comma-separated subset of the solver names (default: all)")
    ap.add_argument("--budgets", default="all", choices=("all", "default"),
                    help="every budget of each solver, or only its default (the first in its rows)")
    ap.add_argument("--problems", type=int, default=100, help="problems the small batches solve (at most)")
    ap.add_argument("--max-seconds", type=float, default=10.0, help="skip a batch whose pass would take longer")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference-problems", type=int, default=5, help="problems checked by the reference oracles")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: Exp. 1 shape, batches 1 and 10, 10 problems, default budgets, one repeat")
    ap.add_argument("--json", default=None, help="write the rows as JSON (rewritten after every row)")
    args = ap.parse_args(argv)
    if args.quick:
        args.shapes, args.batches, args.budgets = "exp1", "1,10", "default"
        args.problems, args.repeats, args.reference_problems, args.max_seconds = 10, 1, 1, 2.0
    table = solver_table()
    shapes = args.shapes.split(",")
    if not set(shapes) <= set(SHAPES):
        ap.error(f"--shapes must be a subset of {sorted(SHAPES)}, got {args.shapes!r}")
    names = list(table) if args.solvers is None else args.solvers.split(",")
    if not set(names) <= set(table):
        ap.error(f"--solvers must be a subset of {', '.join(table)}, got {args.solvers!r}")
    batches = sorted({int(b) for b in args.batches.split(",")})
    if batches[0] < 1:
        ap.error(f"--batches must be positive, got {args.batches!r}")

    import e2d_jax

    device = jax.devices()[0]
    ref, versions = reference_modules()
    report = dict(meta=dict(date=time.strftime("%Y-%m-%d"), device=str(device), platform_name=device.platform,
                            device_kind=device.device_kind, machine=machine(), os=platform.platform(),
                            cpus=os.cpu_count(), jax=jax.__version__, e2d_jax=e2d_jax.__version__,
                            argv=sys.argv[1:] if argv is None else list(argv),
                            references=versions if ref else None),
                  rows=[], numpy=[], references=[], reference_seconds={})

    def save():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)

    print(f"device {device.platform}: {device} ({device.device_kind})  {platform.platform()}  {os.cpu_count()} CPUs  "
          f"jax {jax.__version__}  e2d_jax {e2d_jax.__version__}", flush=True)
    if ref is None:
        print(f"reference oracles: skipped ({versions}; {MISSING_HINT})", flush=True)
    else:
        print(f"reference oracles: cvxpy {versions['cvxpy']} (Clarabel) and scipy {versions['scipy']}, "
              f"on the first {args.reference_problems} problems", flush=True)
    print(COLUMNS, flush=True)
    for shape in shapes:
        args.current_shape = shape
        probs = Problems(shape, max(args.problems, batches[-1], args.reference_problems), args.seed)
        print(f"\n== {shape}: semi-bandit d={probs.d}, K={probs.k} ==", flush=True)
        print(HEADER, flush=True)
        answers = {}
        for name in names:
            program, gap_type, budgets = table[name]
            chosen = list(budgets.items())[:1] if args.budgets == "default" else list(budgets.items())
            for budget, solver in chosen:
                first = measure_solver(probs, name, program, gap_type, budget, solver, batches, args, report, save)
                if first is not None and len(first["value"]) >= args.reference_problems:
                    answers[name, budget] = first

        n_ref = args.reference_problems
        if n_ref == 0:
            save()
            continue
        numpy_rows = time_numpy(probs, n_ref)
        print(f"\n{'one problem at a time':40s} {'s/solve':>9s} {'solves/s':>9s}", flush=True)
        for r in numpy_rows:
            report["numpy"].append(dict(shape=shape, **r))
            print(f"{r['program'] + ' ' + r['method']:40s} {r['seconds_per_solve']:9.4f} "
                  f"{1 / r['seconds_per_solve']:9.1f}", flush=True)
        if ref is None:
            print(f"reference checks: skipped ({versions}; {MISSING_HINT})", flush=True)
        elif answers and n_ref > 0:
            rows, seconds = check_references(ref, probs, n_ref, answers, table)
            report["reference_seconds"][shape] = seconds
            print(f"\nagainst the reference optimum (the first {n_ref} problems; reference s/solve "
                  + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()) + ")", flush=True)
            print(f"{'solver':14s} {'budget':17s} {'excess p50':>10s} {'excess max':>10s} {'lower <= opt':>12s}")
            for r in rows:
                report["references"].append(dict(shape=shape, **r))
                print(f"{r['solver']:14s} {r['budget']:17s} {r['excess_p50']:10.1e} {r['excess_max']:10.1e} "
                      f"{r['lower_bound_valid']:>8d}/{r['problems']}", flush=True)
        save()
    return report


if __name__ == "__main__":
    main()
