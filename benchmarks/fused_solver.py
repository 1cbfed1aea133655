"""The agents' DEC solve: the fused Pallas kernel against XLA's vmapped solver.

What: the time of one batched solve of N problems of the paper's Experiment-1 shape (revealing
semi-bandit, d = 3, K = 10, one random instance per seed, float32), each from a warm start (the
answer to the previous round's estimate, as the agents solve), by ``jax.jit(jax.vmap(...))`` of
``e2d_jax.dec.linear.solve_acdec`` / ``solve_offset`` (XLA) and of
``e2d_jax.dec.fused.solve_acdec`` / ``solve_offset`` (one ``pallas_call``); with the agents'
budget (10 mirror-prox steps and one certificate) and, with ``--budgets agent,long``, the
solver's default (up to 1,000 steps, a certificate every 25). Compile time apart (AOT); run
time the median of ``--repeats`` calls; solves per second = N / run time. Agreement of the
two answers: the share of equal statuses and the median and 90th percentile of
|value_fused - value_xla| / |value_xla|, beside the same for XLA against itself with f_hat moved
by one ulp (the float32 noise floor of the problem; see ``tests/unit/test_fused.py``).

On a CPU the kernel runs in Pallas' interpret mode (plain JAX operations), which checks the
script and the agreement but says nothing of the GPU's speed; the default seeds are then 256.

Run:  PYTHONPATH=. python benchmarks/fused_solver.py [--seeds 1024,131072] [--forms acdec,offset]
      [--budgets agent,long] [--repeats 5] [--json out.json]

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, interpret mode, ``--budgets agent,long
--repeats 3``; no GPU has run it yet)::

    jax 0.10.2 cpu [CpuDevice(id=0)] interpret=True
    form    budget   seeds  path   compile_s    run_ms      solves/s  status_eq  dvalue_p50  dvalue_p90
    acdec   agent      256  xla         4.51     1.624       157,656
    acdec   agent      256  fused       7.63     3.913        65,416      1.000     2.6e-07     3.2e-06
    acdec   agent      256  (xla with f_hat + 1 ulp)                      1.000     3.9e-07     4.8e-06
    acdec   long       256  xla         4.56   212.647         1,204
    acdec   long       256  fused       6.48   258.211           991      0.988     6.4e-07     4.3e-05
    acdec   long       256  (xla with f_hat + 1 ulp)                      0.988     5.8e-07     2.4e-05
    offset  agent      256  xla         3.57     1.235       207,258
    offset  agent      256  fused       5.31     4.549        56,272      1.000     1.0e-07     2.0e-06
    offset  agent      256  (xla with f_hat + 1 ulp)                      1.000     4.3e-07     2.1e-06
    ...
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax.dec import fused
from e2d_jax.dec import linear as dec_linear
from e2d_jax.dec import solvers as S
from e2d_jax.envs import linear
from e2d_jax.types import WarmStart

BUDGETS = {
    "agent": S.Saddle(maxiter=10, rtol=1e-3, check_every=10, kernel="xla"),
    "long": S.Saddle(maxiter=1000, rtol=1e-3, check_every=25, kernel="xla"),
}
SOLVERS = {"acdec": (dec_linear.solve_acdec, fused.solve_acdec), "offset": (dec_linear.solve_offset, fused.solve_offset)}


def problems(n: int, form: str, seed: int = 0):
    """Random Exp. 1 instances, estimates around their truth at random rounds t, and the
    warm start of the previous round's estimate (by XLA's solver)."""
    dtype = jnp.float32
    params = jax.jit(jax.vmap(lambda k: linear.semi_bandit(k, 3, 10, dtype=dtype)))(
        jax.random.split(jax.random.key(seed), n))
    rng = np.random.default_rng(seed)
    theta = np.asarray(params.theta, np.float64)
    f_prev = theta + 0.3 * rng.normal(size=theta.shape)
    f_hat = f_prev + 0.05 * rng.normal(size=theta.shape)
    t = rng.integers(2, 2000, size=n)
    param = 3.0 / t if form == "acdec" else np.sqrt(t / (4 * np.log(t)))
    basis = np.asarray(params.model.span.basis, np.float64)
    to_span = lambda f: jnp.asarray(np.einsum("nd,ndr->nr", f, basis), dtype)  # noqa: E731
    return params.model.span, to_span(f_hat), to_span(f_prev), jnp.asarray(param, dtype)


def batched(form: str, config, use_fused: bool, interpret: bool):
    xla, fast = SOLVERS[form]
    if use_fused:
        one = lambda s, f, p, w: fast(s, f, p, config, w, interpret=interpret)  # noqa: E731
    else:
        one = lambda s, f, p, w: xla(s, f, p, config, w)  # noqa: E731
    return jax.jit(jax.vmap(one))


def compile_timed(fn, args):
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    return compiled, time.perf_counter() - start


def run_timed(compiled, args, repeats: int):
    out = jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    return out, float(np.median(times))


def agreement(a, b):
    value = np.abs(np.asarray(a.value, np.float64)) + 1e-6
    rel = np.abs(np.asarray(a.value, np.float64) - np.asarray(b.value, np.float64)) / value
    return {"status_eq": float(np.mean(np.asarray(a.status) == np.asarray(b.status))),
            "dvalue_p50": float(np.quantile(rel, 0.5)), "dvalue_p90": float(np.quantile(rel, 0.9))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default=None, help="comma-separated batch sizes (default 1024,131072; "
                        "256 in interpret mode)")
    parser.add_argument("--forms", default="acdec,offset")
    parser.add_argument("--budgets", default="agent")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--interpret", choices=("auto", "yes", "no"), default="auto",
                        help="run the kernel in interpret mode (auto: when the backend is not a GPU)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    interpret = jax.default_backend() != "gpu" if args.interpret == "auto" else args.interpret == "yes"
    seeds = [int(x) for x in (args.seeds or ("256" if interpret else "1024,131072")).split(",")]
    print("jax", jax.__version__, jax.default_backend(), jax.devices(), f"interpret={interpret}", flush=True)
    header = (f"{'form':7} {'budget':6} {'seeds':>7}  {'path':5} {'compile_s':>10} {'run_ms':>9} {'solves/s':>13} "
              f"{'status_eq':>10} {'dvalue_p50':>11} {'dvalue_p90':>11}")
    print(header, flush=True)
    rows = []
    for form in args.forms.split(","):
        for budget in args.budgets.split(","):
            config = BUDGETS[budget]
            for n in seeds:
                span, f_hat, f_prev, param = problems(n, form)
                cold = jax.vmap(lambda _: WarmStart.cold(10, dtype=jnp.float32))(param)
                compiled = {path: compile_timed(batched(form, config, path == "fused", interpret),
                                                (span, f_prev, param, cold)) for path in ("xla", "fused")}
                warm = compiled["xla"][0](span, f_prev, param, cold)[1]  # the previous round's answer
                inputs = (span, f_hat, param, warm)
                results = {}
                for path in ("xla", "fused"):
                    fn, compile_s = compiled[path]
                    (res, _), run_s = run_timed(fn, inputs, args.repeats)
                    results[path] = res
                    row = {"form": form, "budget": budget, "seeds": n, "path": path, "compile_s": compile_s,
                           "run_s": run_s, "solves_per_s": n / run_s, "interpret": interpret}
                    line = (f"{form:7} {budget:6} {n:7d}  {path:5} {compile_s:10.2f} {1e3 * run_s:9.3f} "
                            f"{n / run_s:13,.0f}")
                    if path == "fused":
                        row.update(agreement(results["xla"], res))
                        line += f" {row['status_eq']:10.3f} {row['dvalue_p50']:11.1e} {row['dvalue_p90']:11.1e}"
                    rows.append(row)
                    print(line, flush=True)
                moved = compiled["xla"][0](span, jnp.nextafter(f_hat, jnp.inf), param, warm)[0]
                own = agreement(results["xla"], moved)
                rows.append({"form": form, "budget": budget, "seeds": n, "path": "xla_ulp", **own})
                print(f"{form:7} {budget:6} {n:7d}  {'(xla with f_hat + 1 ulp)':40} {own['status_eq']:10.3f} "
                      f"{own['dvalue_p50']:11.1e} {own['dvalue_p90']:11.1e}", flush=True)
                if args.json:  # after every row: a run stopped by its time limit keeps what it has
                    with open(args.json, "w") as f:
                        json.dump({"jax": jax.__version__, "backend": jax.default_backend(),
                                   "devices": [str(d) for d in jax.devices()], "python": platform.python_version(),
                                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
