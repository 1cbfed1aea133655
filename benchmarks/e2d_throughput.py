"""Anytime-E2D / E2D simulation throughput, and where a seed-round's time goes.

What: seed-rounds per second of Anytime-E2D and fixed-horizon E2D with the agents' default
solver (exact saddle-point form, warm-started, 10 mirror-prox iterations and one certificate
per round) and divergence ``--divergence`` (default ``squared``, the agents' default) on the
paper's Experiment-1 instance (revealing semi-bandit, d=3, K=10) and Experiment-2 instance
(d=30, K=10), float32, horizon ``--horizon`` recorded every 100 rounds, at 1, 100, 1,000 and
10,000 seeds in one jitted ``vmap`` (````rollout_program``, what ``simulate`` compiles).
Compile time apart (AOT); run time the median of ``--repeats`` calls. ``--agents
anytime-e2d-paper`` runs Anytime-E2D with the paper's solver (``dec.linear.PAPER_SOLVER``:
100 Frank-Wolfe steps x 50 lambdas); ``--agents ids,ids-worst-case`` runs IDS (the library's
defaults: difference gaps, the exact minimiser over distributions) with the directed and the
worst-case information gain, under the same protocol.

Breakdown (``--breakdown``, ``--breakdown-only``): where one Anytime-E2D seed-round goes, on
one device, ``sim.simulate.lanes_for(device)`` seeds per call (64 on a CPU): each part of a
round timed alone in a jitted loop on a batch of states taken from play (after 100 rounds for
the linear shapes, 300 for the finite classes), with XLA's FLOP count and the fraction of the
machine's float32 matrix-multiply rate (measured in the same run, ``matmul_rate``) that those
FLOPs in that time make; the round total is the rollout's, from the difference of two
horizons (rounds 200-400), and 'rest' is the total minus the parts (negative where the parts
alone, each with its own launches, cost more than inside the round).
  Linear shapes: ridge update; the mirror-prox steps; the certificate (three evaluations a
  check); the solver's set-up and loop control; sampling; environment.
  Finite classes (``--finite``): EWA update; the estimate (a sampled f and its gap and
  information matrices); the lambda search continued from the sampled model's memory with
  the refinement switched off (the memory's bounds, the exact value of the candidates), and
  the refinement chunks (the full search minus that; every seed waits for the batch's
  longest search); reading and writing back the per-model memory; sampling; environment.
``--shapes ""`` leaves the linear shapes out.

Comparability: the stored throughput tables (``results/h200/e2d_throughput.json``,
``results/h200/e2d_paper_solver.json``) ran the linear agents with the divergence ``kl``
(the default of versions up to 0.2): pass ``--divergence kl`` to compare with them. The
stored breakdowns (``results/*/e2d_breakdown*``) used ``squared``, the default here.

Run:  python benchmarks/e2d_throughput.py [--horizon 2000] [--seeds 1,100,1000,10000]
      [--agents anytime-e2d,e2d] [--divergence squared|kl] [--breakdown] [--json out.json]
  quick check:  python benchmarks/e2d_throughput.py --seeds 1,4 --horizon 20 --repeats 1
                python benchmarks/e2d_throughput.py --breakdown-only --breakdown-batch 4 \\
                    --shapes exp1 --finite finite-mab

Sharded over the cores: prefix the command with
``XLA_FLAGS=--xla_force_host_platform_device_count=2``; every batch of an even number of
seeds is then split over two XLA CPU devices (the device list is printed first).

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, ``--breakdown-only``; the whole run
is ``results/cpu-2core/e2d_breakdown.log``; on an NVIDIA H200 ``results/h200/e2d_breakdown*.json``
and ``results/h200/suite_throughput_baselines_cli.log``)::

    breakdown: 64 seeds in one call on one device; float32 matmul rate 175.9 GFLOP/s
      Anytime-E2D, exp1 shape (d=3, K=10)
        part                                                               us/seed-round FLOP/seed-round of matmul rate
        estimator update (ridge)                                                   0.188             796       2.41e-02
        solver iterations (10.0 mirror-prox steps)                                 4.483          33,790       4.29e-02
        certificate (1.0 checks x 3 evaluations)                                   1.766          12,276       3.95e-02
        solver set-up and loop control                                             1.558               0            nan
        sampling                                                                   0.013             584       2.56e-01
        environment                                                                0.614             959       8.88e-03
        rest (round total - parts; < 0: parts alone cost more)                     0.078               0            nan
        round total (rollout)                                                      8.700          48,404       3.16e-02
    ...

and the throughput table (one NVIDIA H200, jax 0.11.2, ``--shapes exp1,exp2 --agents anytime-e2d
--seeds 2048,32768 --horizon 200``, divergence ``kl``; ``results/h200/e2d_throughput.json``)::

    shape  agent         seeds compile_s     run_s  seed_rounds/s
    exp1   anytime-e2d    2048      3.43     0.170      2,403,887
    exp1   anytime-e2d   32768      4.66     0.247     26,488,008
    exp2   anytime-e2d    2048     12.03     0.202      2,031,214
    exp2   anytime-e2d   32768     12.67     1.509      4,344,288
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax.agents.e2d import anytime_e2d, fixed_horizon_e2d
from e2d_jax.agents.ids import ids
from e2d_jax.dec import linear as L
from e2d_jax.dec import saddle
from e2d_jax.envs import linear
from e2d_jax.sim.simulate import rollout_program
from e2d_jax.types import WarmStart

SHAPES = {"exp1": (3, 10), "exp2": (30, 10)}


def measure(agent, params, seeds, horizon, repeats):
    fn, args = rollout_program(params, agent, horizon=horizon, record_every=100, lanes=seeds)
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    run_s = float(np.median(times))
    return dict(seeds=seeds, compile_s=compile_s, run_s=run_s, seed_rounds_per_s=seeds * horizon / run_s,
                nonfinite=int(np.asarray(out.invalid_rounds).sum()))


# --------------------------------------------------------------------------------------
# The breakdown: where one seed-round's time goes, and how far each part is from the limit


def matmul_rate(n=None, repeats=5):
    """The machine's measured float32 matrix-multiply rate (FLOP/s): one n x n product
    (n = 2048 on a CPU, 8192 on an accelerator), full float32 precision (no TF32), median of
    ``repeats`` calls, all of the device's cores (XLA's own thread pool)."""
    n = n or (2048 if jax.devices()[0].platform == "cpu" else 8192)
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    f = jax.jit(lambda x, y: jnp.matmul(x, y, precision=lax.Precision.HIGHEST))
    jax.block_until_ready(f(a, a))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f(a, a))
        times.append(time.perf_counter() - t0)
    return 2.0 * n**3 / float(np.median(times))


def _flops(fn, args):
    """XLA's cost analysis of jit(fn) on ``args`` (counts a loop body once)."""
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost.get("flops", float("nan")))


def _time_part(fn, args, inner=20, repeats=5):
    """Seconds per call of ``fn`` on the batch ``args`` (already vmapped), amortised over
    ``inner`` calls in one ``fori_loop``. Each call's inputs depend on the previous call's
    outputs (through a zero-valued term on the first floating argument) and PRNG keys are
    folded with the loop index, so XLA can neither hoist the call, or its random numbers, out
    of the loop nor drop it."""
    def kind(a, dtype):  # pytree arguments (e.g. a WarmStart) count as neither
        return not isinstance(a, tuple) and jnp.issubdtype(jnp.asarray(a).dtype, dtype)

    first = next(i for i, a in enumerate(args) if kind(a, jnp.floating))
    is_key = [kind(a, jax.dtypes.prng_key) for a in args]

    def loop(*args):
        def body(i, carry):
            args, acc = carry
            call = [jax.vmap(jax.random.fold_in, in_axes=(0, None))(a, i) if key else a for a, key in zip(args, is_key)]
            out = fn(*call)
            total = sum(jnp.sum(jnp.where(jnp.isfinite(x), x, 0.0)).astype(jnp.float32)
                        for x in jax.tree_util.tree_leaves(out) if jnp.issubdtype(x.dtype, jnp.floating))
            acc = acc + total
            args = list(args)
            args[first] = args[first] + (acc * 0.0).astype(args[first].dtype)
            return tuple(args), acc
        return lax.fori_loop(0, inner, body, (tuple(args), jnp.zeros((), jnp.float32)))[1]

    f = jax.jit(loop)
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) / inner


def _states_after(env, params, agent, t0, batch):
    """A batch of agent states after ``t0`` rounds of play (what a round starts from)."""
    model = env.model(params)

    def one(key):
        state = agent.init(key, model)

        def step(state, k):
            k_act, k_obs = jax.random.split(k)
            action, state, _ = agent.act(k_act, state, model)
            return agent.update(state, action, env.observe(k_obs, params, action), model), None

        return lax.scan(step, state, jax.random.split(key, t0))[0]

    return jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(1), batch))


def _round_total(env, params, agent, batch, horizon=400, repeats=3):
    """Seconds per seed-round of the whole rollout, one device, ``batch`` seeds in one call:
    the difference of two horizons, so set-up and the final bookkeeping cancel."""
    out = []
    for n in (horizon // 2, horizon):
        fn, args = rollout_program(params, agent, horizon=n, record_every=n, lanes=batch, env=env)
        compiled = fn.lower(*args).compile()
        jax.block_until_ready(compiled(*args))
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            times.append(time.perf_counter() - t0)
        out.append(float(np.median(times)))
    return (out[1] - out[0]) / (batch * (horizon - horizon // 2))


def _row(name, seconds, flops, rate, batch, per_round=1.0):
    """One part: microseconds and FLOPs per seed-round, and the fraction of the matmul rate
    that the part's FLOPs in its time would be."""
    us = seconds / batch * per_round * 1e6
    fl = flops / batch * per_round
    return dict(part=name, us=us, flops=fl, fraction_of_matmul_rate=fl / (us * 1e-6) / rate if us > 0 and fl > 0 else float("nan"))


def breakdown_linear(shape, rate, batch, divergence="squared"):
    """Anytime-E2D (the agents' default solver) on the shape's instance: parts of a round."""
    from e2d_jax.agents.e2d_linear import AGENT_SOLVER
    from e2d_jax.estimators import ridge

    d, k = SHAPES[shape]
    env = linear.ENVIRONMENT
    params = linear.semi_bandit(jax.random.key(0), d, k, dtype=jnp.float32)
    model = env.model(params)
    agent = anytime_e2d(divergence=divergence)
    states = _states_after(env, params, agent, 100, batch)
    span = model.span
    f_r = states.estimate.f_hat @ span.basis
    eps2 = jnp.full((batch,), d / 101.0, jnp.float32)
    keys = jax.random.split(jax.random.key(2), batch)
    actions = jax.random.randint(jax.random.key(3), (batch,), 0, k)

    solve = jax.vmap(lambda fr, e, w: L.solve_acdec(span, fr, e, AGENT_SOLVER, w))
    res, _ = jax.jit(solve)(f_r, eps2, states.warm)
    iters = float(np.mean(np.asarray(res.iterations)))
    # The saddle-point solver's loop: a check after every block of check_every iterations (the last
    # block may be cut by maxiter), and each check (saddle._certify) evaluates the certificate
    # three times: at the last iterate, at the average, and at the best mu against the average
    # max player. (solve_acdec's final exact evaluation of the returned mu is in the rest.)
    checks = float(np.mean(np.ceil(np.asarray(res.iterations) / AGENT_SOLVER.check_every)))
    cert_calls = 3.0 * checks

    def step1(fr, e, mu, om):
        grads, cert, _ = L._exact_problem(span, span.features @ fr, e)
        return saddle.step(grads, saddle.init(grads, cert, mu, om)).log_mu

    def cert1(fr, e, mu, om):
        grads, cert, _ = L._exact_problem(span, span.features @ fr, e)
        return cert(mu, om)

    upd = jax.vmap(lambda y, st, a: ridge.update(st, model.obs_matrices[a], y))
    ys = jax.vmap(lambda kk, a: env.observe(kk, params, a))(keys, actions)
    # ridge.update scans over the observation rows: count the rank-one body once per row.
    rows_m = model.obs_matrices.shape[1]
    rank_one = jax.vmap(lambda v, row: ridge._rank_one((v, jnp.zeros((), v.dtype)), row)[0])
    upd_flops = (_flops(upd, (ys, states.estimate, actions))
                 + (rows_m - 1) * _flops(rank_one, (states.estimate.v_inv, model.obs_matrices[actions, 0])))
    sample = jax.vmap(lambda mu, kk: jax.random.categorical(kk, jnp.log(mu)))
    observe = jax.vmap(lambda kk, a: env.observe(kk, params, a))
    wm = states.warm
    step_s = _time_part(jax.vmap(step1), (f_r, eps2, wm.mu, wm.omega))
    cert_s = _time_part(jax.vmap(cert1), (f_r, eps2, wm.mu, wm.omega))
    solve_s = _time_part(solve, (f_r, eps2, wm))
    rows = [
        _row("estimator update (ridge)", _time_part(upd, (ys, states.estimate, actions)), upd_flops, rate, batch),
        _row(f"solver iterations ({iters:.1f} mirror-prox steps)", step_s, _flops(jax.vmap(step1), (f_r, eps2, wm.mu, wm.omega)),
             rate, batch, iters),
        _row(f"certificate ({checks:.1f} checks x 3 evaluations)", cert_s,
             _flops(jax.vmap(cert1), (f_r, eps2, wm.mu, wm.omega)), rate, batch, cert_calls),
    ]
    solver_rest = solve_s - step_s * iters - cert_s * cert_calls
    rows.append(_row("solver set-up and loop control", max(solver_rest, 0.0), 0.0, rate, batch))
    rows.append(_row("sampling", _time_part(sample, (wm.mu, keys)), _flops(sample, (wm.mu, keys)), rate, batch))
    rows.append(_row("environment", _time_part(lambda z, kk, a: observe(kk, a) + z[:, None], (jnp.zeros(batch), keys, actions)),
                     _flops(observe, (keys, actions)), rate, batch))
    total = _round_total(env, params, agent, batch)
    rows.append(_row("rest (round total - parts; < 0: parts alone cost more)",
                     total * batch - sum(r["us"] for r in rows) * 1e-6 * batch, 0.0, rate, batch))
    rows.append(_row("round total (rollout)", total * batch, sum(r["flops"] for r in rows) * batch, rate, batch))
    return rows


def breakdown_finite(env_name, rate, batch):
    """Finite-class Anytime-E2D (EWA, the agents' default search continued from each model's
    memory of solved games) on a CLI class."""
    from e2d_jax.agents import e2d_finite as AF
    from e2d_jax.experiments import registry
    from e2d_jax.agents import schedules
    from e2d_jax.dec import finite as DF
    from e2d_jax.dec import matrix_game as MG
    from e2d_jax.envs import finite as EF
    from e2d_jax.estimators import ewa

    env, params, _ = registry.build_instance(env_name, 0, dtype="float32")
    model = env.model(params)
    agent = AF.anytime_e2d()
    # States in the middle of the rounds the total is timed over (200-400), as for the linear
    # shapes: the memory search's cost depends on how many models have been seen.
    states = _states_after(env, params, agent, 300, batch)
    keys = jax.random.split(jax.random.key(2), batch)
    actions = jax.random.randint(jax.random.key(3), (batch,), 0, model.num_actions)
    ys = jax.vmap(lambda kk, a: env.observe(kk, params, a))(keys, actions)
    cfg = AF.AGENT_SOLVER

    upd = jax.vmap(lambda y, st, a: ewa.update(st.ewa, EF.log_likelihood(model, a, y)))
    est = jax.vmap(lambda z, kk, st: AF._matrices(kk, st._replace(ewa=st.ewa._replace(
        log_weights=st.ewa.log_weights + z)), model, "delta_f", "sample"))
    z = jnp.zeros((batch,), jnp.float32)
    g, info, index = jax.jit(est)(z, keys, states)
    eps2 = jax.vmap(lambda c: jnp.asarray(schedules.evaluate("log-models", 1.0, (c + 1).astype(jnp.float32), model),
                                          jnp.float32))(states.ewa.count)
    # The agent's search: continued from the sampled model's remembered games.
    mems = jax.vmap(lambda st, idx: jax.tree_util.tree_map(lambda x: x[idx], st.memory))(states, index)
    no_refine = dataclasses.replace(cfg, lam_rounds=0)

    def search(config):
        return jax.vmap(lambda e, g, i, st, mem: DF.solve_acdec_memory(g, i, e, mem, config,
                                                                        WarmStart(st.mu, st.omega, 0.0 * e)))

    res, _ = jax.jit(search(cfg))(eps2, g, info, states, mems)
    iters = float(np.mean(np.asarray(res.iterations)))
    lam = jnp.full((batch,), 1.0, jnp.float32)

    def ipm1(l, g, i):
        a = g - l * i
        b = MG._ipm_scaled(a)
        return MG._ipm_step(a, b, MG._ipm_start(a, b), MG._ipm_outer(b)).x

    def memory_io(z, st, idx, mem):
        # The per-model memory: the sampled model's games read, and the new ones written back.
        one = jax.tree_util.tree_map(lambda x: x[idx], st.memory)
        new = jax.tree_util.tree_map(lambda a, b: a + 0.0 * b + z, one, mem)
        return jax.tree_util.tree_map(lambda all_, x: all_.at[idx].set(x), st.memory, new)

    ipm = jax.vmap(ipm1)
    full_s = _time_part(search(cfg), (eps2, g, info, states, mems))
    bounds_s = _time_part(search(no_refine), (eps2, g, info, states, mems))
    mem_s = _time_part(jax.vmap(memory_io), (z, states, index, mems))
    sample = jax.vmap(lambda mu, kk: jax.random.categorical(kk, jnp.log(mu)))
    observe = jax.vmap(lambda kk, a: env.observe(kk, params, a))
    rows = [
        _row("estimator update (EWA)", _time_part(upd, (ys, states, actions)),
             _flops(upd, (ys, states, actions)), rate, batch),
        _row("estimate (sample f, gap and information matrices)", _time_part(est, (z, keys, states)),
             _flops(est, (z, keys, states)), rate, batch),
        _row("lambda search without refinement (memory's bounds, exact value)", bounds_s,
             _flops(search(no_refine), (eps2, g, info, states, mems)), rate, batch),
        # The refinement chunks (3 games each, <= 8 interior-point steps) under vmap: every
        # seed waits for the batch's longest search; the FLOPs are the steps actually made.
        _row(f"refinement games ({iters:.1f} interior-point steps a seed; lock-step)", max(full_s - bounds_s, 0.0),
             _flops(ipm, (lam, g, info)) * iters, rate, batch),
        _row("per-model memory: read, write back (timed with a sum over it)", mem_s, _flops(jax.vmap(memory_io), (z, states, index, mems)),
             rate, batch),
    ]
    rows.append(_row("sampling", _time_part(sample, (states.mu, keys)), _flops(sample, (states.mu, keys)), rate, batch))
    rows.append(_row("environment", _time_part(lambda z, kk, a: observe(kk, a) + z[:, None], (z, keys, actions)),
                     _flops(observe, (keys, actions)), rate, batch))
    total = _round_total(env, params, agent, batch)
    rows.append(_row("rest (round total - parts; < 0: parts alone cost more)",
                     total * batch - sum(r["us"] for r in rows) * 1e-6 * batch, 0.0, rate, batch))
    rows.append(_row("round total (rollout)", total * batch, sum(r["flops"] for r in rows) * batch, rate, batch))
    return rows


def print_breakdown(title, rows):
    print(f"  {title}")
    print(f"    {'part':66s} {'us/seed-round':>13s} {'FLOP/seed-round':>15s} {'of matmul rate':>14s}")
    for r in rows:
        print(f"    {r['part']:66s} {r['us']:13.3f} {r['flops']:15,.0f} {r['fraction_of_matmul_rate']:14.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--horizon", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", default="1,100,1000,10000")
    ap.add_argument("--shapes", default="exp1,exp2", help="linear shapes (empty: none)")
    ap.add_argument("--agents", default="anytime-e2d,e2d",
                    help="of anytime-e2d, e2d, anytime-e2d-paper (the paper's solver: 100 FW steps x 50 lambdas), "
                         "ids, ids-worst-case")
    ap.add_argument("--divergence", default="squared", choices=["squared", "kl"],
                    help="the linear E2D agents' divergence (default squared, the agents' default)")
    ap.add_argument("--breakdown", action="store_true", help="time and count every part of a round")
    ap.add_argument("--breakdown-only", action="store_true", help="skip the throughput table")
    ap.add_argument("--breakdown-batch", type=int, default=None, help="seeds per call (default: simulate.lanes_for(device): CPU_LANES or ACCELERATOR_LANES)")
    ap.add_argument("--finite", default="finite-mab,finite-revealing", help="finite classes in the breakdown")
    ap.add_argument("--json", default=None, help="written after every row (a stopped run keeps what it measured)")
    args = ap.parse_args()
    args.breakdown = args.breakdown or args.breakdown_only
    shapes = [s for s in args.shapes.split(",") if s]

    def dump():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)

    import e2d_jax

    report = {"device": str(jax.devices()), "platform": platform.platform(), "jax": jax.__version__,
              "e2d_jax": e2d_jax.__version__, "horizon": args.horizon, "divergence": args.divergence, "rows": [],
              "breakdown": {}}
    print(f"device {jax.devices()}  {platform.platform()}  jax {jax.__version__}  e2d_jax {e2d_jax.__version__}  "
          f"horizon {args.horizon}  divergence {args.divergence}")
    print(f"{'shape':6s} {'agent':12s} {'seeds':>6s} {'compile_s':>9s} {'run_s':>9s} {'seed_rounds/s':>14s}")
    for shape in ([] if args.breakdown_only else shapes):
        d, k = SHAPES[shape]
        params = linear.semi_bandit(jax.random.key(0), d, k, dtype=jnp.float32)
        div = args.divergence
        agents = {"anytime-e2d": lambda: anytime_e2d(divergence=div),
                  "e2d": lambda: fixed_horizon_e2d(horizon=args.horizon, divergence=div),
                  "anytime-e2d-paper": lambda: anytime_e2d(solver=L.PAPER_SOLVER, divergence=div),
                  "ids": lambda: ids(), "ids-worst-case": lambda: ids(info_gain="worst-case")}
        for name in args.agents.split(","):
            agent = agents[name]()
            for s in (int(x) for x in args.seeds.split(",")):
                r = measure(agent, params, s, args.horizon, args.repeats)
                r.update(shape=shape, agent=name)
                report["rows"].append(r)
                dump()
                print(f"{shape:6s} {name:12s} {s:6d} {r['compile_s']:9.2f} {r['run_s']:9.3f} "
                      f"{r['seed_rounds_per_s']:14,.0f}", flush=True)
    if args.breakdown:
        from e2d_jax.sim.simulate import lanes_for

        rate = matmul_rate()
        report["matmul_flops_per_s"] = rate
        batch = args.breakdown_batch or lanes_for(jax.devices()[0])
        print(f"breakdown: {batch} seeds in one call on one device; float32 matmul rate {rate / 1e9:.1f} GFLOP/s")
        for shape in shapes:
            rows = breakdown_linear(shape, rate, batch, args.divergence)
            report["breakdown"][f"anytime-e2d {shape}"] = rows
            dump()
            print_breakdown(f"Anytime-E2D, {shape} shape (d={SHAPES[shape][0]}, K={SHAPES[shape][1]})", rows)
        for env_name in args.finite.split(",") if args.finite else ():
            rows = breakdown_finite(env_name, rate, batch)
            report["breakdown"][f"anytime-e2d {env_name}"] = rows
            dump()
            print_breakdown(f"Anytime-E2D, {env_name} (EWA)", rows)
    dump()


if __name__ == "__main__":
    main()
