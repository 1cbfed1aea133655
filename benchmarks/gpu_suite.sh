#!/usr/bin/env bash
# The GPU benchmark suite: the CPU benchmarks' measurements on one accelerator, in one short
# call (each step has its own time limit, so a slow or failing step spoils none of the others).
#
# Steps (STEPS=a,b runs only those; default: all):
#   info              the accelerator (nvidia-smi), jax and Python versions
#   cli_four          cli_two_horizon.py: Anytime-E2D through the CLI, four cases, two horizons each
#   breakdown_finite  e2d_throughput.py --breakdown-only on the finite classes
#   e2d_throughput    e2d_throughput.py: Anytime-E2D on the Exp. 1 and Exp. 2 shapes
#   e2d_fixed         e2d_throughput.py: fixed-horizon E2D (its default: interior point, certified to
#                     1e-3 each round) on the Exp. 1 shape
#   breakdown         e2d_throughput.py --breakdown-only on all shapes
#   baselines         simulate_throughput.py: UCB and TS
#   cli_linear        e2d-jax run on semi-bandit (Anytime-E2D, UCB, TS); its summary.json kept
#   cli_finite        e2d-jax run on finite-mab (Anytime-E2D); its summary.json kept
#   paper_solver      e2d_throughput.py with the paper's solver as the agent's
#   compile_time      compile_time.py: compile time and program size of the four cases, 64 lanes
#   zoo               e2d-jax reproduce zoo at full size (10 instances x 200 seeds per random family,
#                     n=2000), the families in five processes side by side (compiles are most of
#                     its time, and each process compiles on its own cores); its tables, figures and
#                     summaries (not the chunks) in OUT/zoo.tar.gz
#   full_width        e2d_throughput.py: Anytime-E2D and IDS on the Exp. 1 and Exp. 2 shapes at 2^15
#                     and 2^17 seeds per call
#   fused_solver      fused_solver.py: the agents' DEC solve (Exp. 1 shape, warm-started, 10 steps and a
#                     certificate) as one Pallas kernel against XLA's vmapped solver, 1,024 and 2^17
#                     seeds, both forms (ac-DEC and offset), with the two answers' agreement
#   fw_throughput     fw_throughput.py: the DEC solvers (Frank-Wolfe on the lambda grid and on the offset
#                     DEC, mirror-prox on both forms, the lambda search) at their default budgets, 1,
#                     1,000 and 10,000 problems per call, both shapes (its JSON is rewritten after every
#                     solver, so a run stopped at the limit keeps the solvers it has)
#   horizons          e2d-jax reproduce horizons (Anytime-E2D, E2D, IDS, UCB and TS on end-of-optimism and
#                     the revealing semi-bandit, float64) at n = HORIZONS_N (default 10^5) with 1,024 seeds,
#                     in five processes side by side (--part i/5: at these sizes each part is one agent on
#                     both environments). Sized from the suite's float32 throughputs at 32,768 lanes (about
#                     1.2 ms a round for Anytime-E2D and IDS on the semi-bandit, 0.35 ms for Anytime-E2D on
#                     end-of-optimism): about 2.5 minutes of rounds for the slowest part at 10^5, more
#                     where the five processes contend for the GPU; not yet timed on one.
#                     HORIZONS_N=1000000 with HORIZONS_LIMIT=3000 (seconds) is the command's own GPU size,
#                     about 26 minutes of rounds by the same estimate
#   action_scaling    action_scaling.py: a round's cost against the number of actions K (10 to 10,000) for
#                     Anytime-E2D, E2D, IDS, UCB and TS on the semi-bandit and the linear bandit, d = 3 and 10,
#                     at 1,024 seeds (its JSON and figure)
#   partial_monitoring action_scaling.py on the linear partial-monitoring families: duelling and preference
#                     feedback (10 and 30 base arms: 100 and 900 pair actions) and the localized duelling game,
#                     every agent at 1,024 seeds (its JSON)
#   partial_monitoring_laser  the same on the laser game, in float64
#   cli_many_actions  e2d-jax run on the linear bandit with d = 10, K = 10,000 (n = 1,000, 100 seeds; the
#                     run's agents at their defaults, 1,024 lanes a call); its summary.json kept. On one H200
#                     it ran past 300 s: it has a call of its own
#   horizons_report   the growth exponents' report and figure (horizons.md, .json, .png) with the sweeps'
#                     summaries and tables (not the curves) in OUT/horizons.tar.gz
#   contexts_speed    contexts_speed.py: a contextual round (contextual-linear, 10 contexts, and fresh features
#                     every round) against a round without contexts (linear-bandit), d = 3, K = 10, called
#                     alternately, every agent and the regression-oracle baselines, at 1,024 and 32,768 seeds
#   contexts          e2d-jax reproduce contexts at its accelerator default (n = 2,000, 100 seeds, every
#                     contextual family and dataset; needs scikit-learn: the data extra), its report, JSON and
#                     figure in OUT/contexts.tar.gz
#
# Run from the repository root on a machine whose python3 has jax with a CUDA plugin (nothing
# is installed: the package is used from the source tree):
#     OUT=benchmarks/results/h200 bash benchmarks/gpu_suite.sh
# The steps' limits add up to more than one call of a device session allows (10 minutes): pick
# them with STEPS, e.g. the E2D agents, the DEC solvers and the fused round in one call of at
# most 9 minutes,
#   STEPS=info,e2d_throughput,e2d_fixed,fused_solver,fw_throughput bash benchmarks/gpu_suite.sh
# and the long horizons in another (HORIZONS_N=100000: about 8 minutes),
#   STEPS=info,horizons,horizons_report bash benchmarks/gpu_suite.sh
# SMALL=1 runs every step at toy sizes (to check the script on a CPU); PY=... picks the
# interpreter. Writes OUT/*.json (the benchmarks' own reports) and OUT/suite.log; name OUT after
# the hardware and list the files in OUT/README.md.
#
# Typical printout (one NVIDIA H200, jax 0.11.2; benchmarks/results/h200/suite_*.log):
#     === info (limit 15s) 02:39:11
#     name, memory.total [MiB], driver_version
#     NVIDIA H200, 143771 MiB, 580.159.04
#     jax 0.11.2 python 3.12.3 [CudaDevice(id=0)]
#     === info: exit 0 after 3 s
#     === e2d_throughput (limit 170s) 02:39:14
#     ...
#     exp1   anytime-e2d   32768      4.66     0.247     26,488,008
#     ...
set -u
OUT=${OUT:-benchmarks/results/gpu}
RUNS=${TMPDIR:-/tmp}/e2d_gpu_runs
mkdir -p "$OUT" "$RUNS"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}
if [ "${SMALL:-0}" = 1 ]; then
    S_E2D=64,128; S_SIM=64; H=50; H_CLI=50; H_FIN=20; REP=1; CLI_SEEDS=128; FIN_SEEDS=16; BB=16
    TWO_SEEDS=16; TWO_HORIZONS=20,40; CT_HORIZON=20; CT_EVERY=5; S_WIDE=64,128; H_WIDE=20
    ZOO_SIZE="--instances 2 --seeds 4"; AS_ARMS=10,30; AS_DIMS=3; AS_AGENTS=ucb,ts; AS_SEEDS=8; PM_ARMS=10; MANY_K=30; MANY_N=20; S_FUSED=64; FW_SHAPES=exp1; FW_BATCHES=1,10; HORIZONS_SIZE="--horizon 200 --seeds 4"
    CTX_SEEDS=8; CTX_AGENTS=ucb,squarecb; CTX_SIZE="--horizon 20 --seeds 4 --families iris,contextual-authors"
else  # one call of 2,048 and of 32,768 seeds (the old and new ACCELERATOR_LANES), short horizons: compiles dominate
    S_E2D=2048,32768; S_SIM=2048,32768; H=200; H_CLI=500; H_FIN=200; REP=3; CLI_SEEDS=20000; FIN_SEEDS=2048; BB=2048
    TWO_SEEDS=1000; TWO_HORIZONS=; CT_HORIZON=100; CT_EVERY=25; S_WIDE=32768,131072; H_WIDE=100
    AS_ARMS=10,100,1000,10000; AS_DIMS=3,10; AS_AGENTS=anytime-e2d,e2d,ids,ucb,ts; AS_SEEDS=1024; PM_ARMS=10,30; MANY_K=10000; MANY_N=1000
    S_FUSED=1024,131072; FW_SHAPES=exp1,exp2; FW_BATCHES=1,1000,10000; HORIZONS_SIZE="--horizon ${HORIZONS_N:-100000} --seeds 1024"
    CTX_SEEDS=1024,32768; CTX_AGENTS=anytime-e2d,e2d,ids,ucb,ts,squarecb,epsilon-greedy; CTX_SIZE=
fi
step() {  # step SECONDS NAME COMMAND...
    local limit=$1 name=$2; shift 2
    [ -z "${STEPS:-}" ] || [[ ",$STEPS," == *",$name,"* ]] || return 0
    echo "=== $name (limit ${limit}s) $(date -u +%T)"
    local t0=$SECONDS
    timeout "$limit" "$@"
    echo "=== $name: exit $? after $((SECONDS - t0)) s"
}
{
step 15 info bash -c 'nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null;
    '"$PY"' -c "import jax, jaxlib, platform; print(\"jax\", jax.__version__, \"python\", platform.python_version(), jax.devices())"'
# Anytime-E2D through the CLI at 1,000 seeds, two horizons per case (the CLI's own device choice).
step 240 cli_four "$PY" benchmarks/cli_two_horizon.py "gpu=$PWD" --python "$PY" --repeats 1 --seeds "$TWO_SEEDS" \
    ${TWO_HORIZONS:+--horizons $TWO_HORIZONS} --workdir "$RUNS/cli_two_horizon" --json "$OUT/cli_1000seeds.json"
step 260 breakdown_finite "$PY" benchmarks/e2d_throughput.py --breakdown-only --shapes "" ${BB:+--breakdown-batch $BB} \
    --json "$OUT/e2d_breakdown_finite.json"
step 170 e2d_throughput "$PY" benchmarks/e2d_throughput.py --shapes exp1,exp2 --agents anytime-e2d \
    --seeds "$S_E2D" --horizon "$H" --repeats "$REP" --json "$OUT/e2d_throughput.json"
step 100 e2d_fixed "$PY" benchmarks/e2d_throughput.py --shapes exp1 --agents e2d \
    --seeds "$S_E2D" --horizon "$H" --repeats "$REP" --json "$OUT/e2d_fixed_throughput.json"
step 150 breakdown "$PY" benchmarks/e2d_throughput.py --breakdown-only ${BB:+--breakdown-batch $BB} \
    --json "$OUT/e2d_breakdown.json"
step 35 baselines "$PY" benchmarks/simulate_throughput.py --seeds "$S_SIM" --horizon "$H" --repeats "$REP" \
    --json "$OUT/simulate_throughput.json"
step 70 cli_linear "$PY" -m e2d_jax.cli run --env semi-bandit --agents anytime-e2d,ucb,ts --seeds "$CLI_SEEDS" \
    --horizon "$H_CLI" --out "$RUNS/linear" --overwrite --quiet
step 60 cli_finite "$PY" -m e2d_jax.cli run --env finite-mab --agents anytime-e2d --seeds "$FIN_SEEDS" \
    --horizon "$H_FIN" --out "$RUNS/finite" --overwrite --quiet
cp "$RUNS/linear/summary.json" "$OUT/cli_linear_summary.json" 2>/dev/null
cp "$RUNS/finite/summary.json" "$OUT/cli_finite_summary.json" 2>/dev/null
step 40 paper_solver "$PY" benchmarks/e2d_throughput.py --shapes exp1 --agents anytime-e2d-paper \
    --seeds "${S_E2D%%,*}" --horizon "$H" --repeats "$REP" --json "$OUT/e2d_paper_solver.json"
step 200 compile_time "$PY" benchmarks/compile_time.py --python "$PY" --repeats 1 --horizon "$CT_HORIZON" \
    --record-every "$CT_EVERY" --json "$OUT/compile_time.json"
zoo() {
    local base=$RUNS/zoo g pids=()
    for g in $ZOO_GROUPS; do
        XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" -m e2d_jax.cli reproduce zoo --families "$g" --out "$base" \
            ${ZOO_SIZE:-} --quiet > "$RUNS/zoo_${g%%,*}.log" 2>&1 &
        pids+=($!)
    done
    trap 'kill "${pids[@]}" 2>/dev/null' TERM
    wait "${pids[@]}"
    tail -n 3 "$RUNS"/zoo_*.log
}
zoo_report() {  # the report, and one archive per process (each under the 16 MiB a returned file may have)
    "$PY" -c "import sys; from e2d_jax.paper import zoo; print(zoo.write_report(sys.argv[1]))" "$RUNS/zoo"
    cat "$RUNS/zoo/zoo.md"
    local g f dirs
    for g in $ZOO_GROUPS; do
        dirs=(); for f in ${g//,/ }; do [ -d "$RUNS/zoo/zoo-$f" ] && dirs+=("zoo/zoo-$f"); done
        [ ${#dirs[@]} = 0 ] || tar -C "$RUNS" --exclude=chunks --exclude='*.pdf' --exclude='*.png' \
            -czf "$OUT/zoo_${g%%,*}.tar.gz" "${dirs[@]}" "zoo_${g%%,*}.log"
    done
    ls -l "$OUT"/zoo_*.tar.gz
}
export -f zoo zoo_report
export PY RUNS OUT ZOO_SIZE=${ZOO_SIZE:-} ZOO_GROUPS="end-of-optimism,hard-semi-bandit,large-gaps
    heteroscedastic,simple-bandit semi-bandit,semi-bandit-authors apple-tasting,label-efficient dynamic-pricing"
step "${ZOO_LIMIT:-300}" zoo bash -c zoo
step 40 zoo_report bash -c zoo_report
step 170 full_width "$PY" benchmarks/e2d_throughput.py --shapes exp1,exp2 --agents anytime-e2d,ids,ids-worst-case \
    --seeds "$S_WIDE" --horizon "$H_WIDE" --repeats 2 --json "$OUT/e2d_full_width.json"
# Its JSON is rewritten after every row, so a run stopped at the limit keeps the rows it has.
step 150 fused_solver "$PY" benchmarks/fused_solver.py --seeds "$S_FUSED" --budgets agent --repeats "$REP" \
    --json "$OUT/fused_solver.json"
step 120 fw_throughput "$PY" benchmarks/fw_throughput.py --shapes "$FW_SHAPES" --budgets default \
    --batches "$FW_BATCHES" --problems 20 --max-seconds 2 --repeats "$REP" --reference-problems 0 \
    --json "$OUT/fw_throughput.json"
step 300 action_scaling "$PY" benchmarks/action_scaling.py --dims "$AS_DIMS" --agents "$AS_AGENTS" --arms "$AS_ARMS" --seeds "$AS_SEEDS" \
    --repeats "$REP" --max-seconds 60 --json "$OUT/action_scaling.json" --figure "$OUT/action_scaling.png"
step 200 partial_monitoring "$PY" benchmarks/action_scaling.py --envs dueling,preference,dueling-localized --dims 3 \
    --arms "$PM_ARMS" --agents "$AS_AGENTS" --seeds "$AS_SEEDS" --repeats "$REP" --max-seconds 60 \
    --json "$OUT/partial_monitoring.json"
step 100 partial_monitoring_laser "$PY" benchmarks/action_scaling.py --envs laser --dtype float64 --agents "$AS_AGENTS" \
    --seeds "$AS_SEEDS" --repeats "$REP" --max-seconds 60 --json "$OUT/partial_monitoring_laser.json"
step 540 cli_many_actions "$PY" -m e2d_jax.cli run --env linear-bandit --d 10 --arms "$MANY_K" --horizon "$MANY_N" \
    --seeds 100 --out "$RUNS/many_actions" --overwrite --quiet
cp "$RUNS/many_actions/summary.json" "$OUT/cli_many_actions_summary.json" 2>/dev/null
horizons() {  # a fresh directory: the five parts write into one, and --overwrite in one would remove the others'
    local base=$RUNS/horizons i pids=()
    rm -rf "$base"
    for i in 1 2 3 4 5; do
        XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" -m e2d_jax.cli reproduce horizons --part "$i/5" --out "$base" \
            $HORIZONS_SIZE --quiet > "$RUNS/horizons_$i.log" 2>&1 &
        pids+=($!)
    done
    trap 'kill "${pids[@]}" 2>/dev/null' TERM
    wait "${pids[@]}"
    tail -n 3 "$RUNS"/horizons_*.log
}
horizons_report() {  # the tables of a sweep whose last parts finished together are written here if no part did
    "$PY" - "$RUNS/horizons" <<'PY'
import sys
from pathlib import Path
from e2d_jax.experiments.runner import collect_stored
from e2d_jax.paper import horizons
base = Path(sys.argv[1])
for env in horizons.ENVIRONMENTS:
    collect_stored(base / f"horizons-{env}")
print(horizons.write_report(base).read_text())
PY
    tar -C "$RUNS" --exclude=chunks --exclude='*.pdf' --exclude=curves.npz --exclude='regret.png' \
        --exclude='final_regret.png' -czf "$OUT/horizons.tar.gz" horizons horizons_1.log horizons_2.log \
        horizons_3.log horizons_4.log horizons_5.log
    ls -l "$OUT/horizons.tar.gz"
}
export -f horizons horizons_report
export HORIZONS_SIZE
step "${HORIZONS_LIMIT:-420}" horizons bash -c horizons
step 60 horizons_report bash -c horizons_report
contexts_speed() {
    local s
    for s in ${CTX_SEEDS//,/ }; do
        "$PY" benchmarks/contexts_speed.py --agents "$CTX_AGENTS" --fresh --seeds "$s" --horizon 20 \
            --repeats "$REP" --json "$OUT/contexts_speed_$s.json"
    done
}
contexts() {
    XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" -m e2d_jax.cli reproduce contexts --out "$RUNS/contexts" --overwrite \
        $CTX_SIZE --quiet | tail -n 40
    tar -C "$RUNS" --exclude=chunks --exclude='*.pdf' --exclude=curves.npz --exclude='regret.png' \
        --exclude='final_regret.png' -czf "$OUT/contexts.tar.gz" contexts
    ls -l "$OUT/contexts.tar.gz"
}
export -f contexts_speed contexts
export CTX_SEEDS CTX_AGENTS CTX_SIZE REP
step 200 contexts_speed bash -c contexts_speed
step 400 contexts bash -c contexts
} 2>&1 | tee "$OUT/suite.log"
