#!/usr/bin/env bash
# The GPU benchmark suite: the CPU benchmarks' measurements on one accelerator, in one short
# call (each step has its own time limit, so a slow or failing step spoils none of the others).
#
# Run from the repository root on a machine whose python3 has jax with a CUDA plugin (nothing
# is installed: the package is used from the source tree):
#     OUT=results/gpu bash benchmarks/gpu_suite.sh
# SMALL=1 runs every step at toy sizes (to check the script on a CPU).
# STEPS=a,b runs only the named steps (default: all), e.g. STEPS=info,cli_four,breakdown_finite.
# Writes OUT/*.json (the benchmarks' own reports) and OUT/suite.log; README 'Speed' quotes them.
set -u
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT" /tmp/e2d_gpu_runs
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}
if [ "${SMALL:-0}" = 1 ]; then
    S_E2D=64,128; S_SIM=64; H=50; H_CLI=50; H_FIN=20; REP=1; CLI_SEEDS=128; FIN_SEEDS=16; BB=16; ISSUE_SEEDS=64
else  # one call of 2,048 and of 32,768 seeds (the old and new ACCELERATOR_LANES), short horizons: compiles dominate
    S_E2D=2048,32768; S_SIM=2048,32768; H=200; H_CLI=500; H_FIN=200; REP=3; CLI_SEEDS=20000; FIN_SEEDS=2048; BB=2048; ISSUE_SEEDS=1000
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
# The speed issue's measure: Anytime-E2D through the CLI at 1,000 seeds, two horizons per case.
step 240 cli_four "$PY" benchmarks/cli_two_horizon.py "gpu=$PWD" --repeats 1 --seeds "$ISSUE_SEEDS" \
    --json "$OUT/cli_1000seeds.json"
step 260 breakdown_finite "$PY" benchmarks/e2d_throughput.py --breakdown-only --shapes "" ${BB:+--breakdown-batch $BB} \
    --json "$OUT/e2d_breakdown_finite.json"
step 170 e2d_throughput "$PY" benchmarks/e2d_throughput.py --shapes exp1,exp2 --agents anytime-e2d \
    --seeds "$S_E2D" --horizon "$H" --repeats "$REP" --json "$OUT/e2d_throughput.json"
step 150 breakdown "$PY" benchmarks/e2d_throughput.py --breakdown-only ${BB:+--breakdown-batch $BB} \
    --json "$OUT/e2d_breakdown.json"
step 35 baselines "$PY" benchmarks/simulate_throughput.py --seeds "$S_SIM" --horizon "$H" --repeats "$REP" \
    --json "$OUT/simulate_throughput.json"
step 70 cli_linear "$PY" -m e2d_jax.cli run --env semi-bandit --agents anytime-e2d,ucb,ts --seeds "$CLI_SEEDS" \
    --horizon "$H_CLI" --out /tmp/e2d_gpu_runs/linear --overwrite --quiet
step 60 cli_finite "$PY" -m e2d_jax.cli run --env finite-mab --agents anytime-e2d --seeds "$FIN_SEEDS" \
    --horizon "$H_FIN" --out /tmp/e2d_gpu_runs/finite --overwrite --quiet
cp /tmp/e2d_gpu_runs/linear/summary.json "$OUT/cli_linear_summary.json" 2>/dev/null
cp /tmp/e2d_gpu_runs/finite/summary.json "$OUT/cli_finite_summary.json" 2>/dev/null
step 40 paper_solver "$PY" benchmarks/e2d_throughput.py --shapes exp1 --agents anytime-e2d-paper \
    --seeds "${S_E2D%%,*}" --horizon "$H" --repeats "$REP" --json "$OUT/e2d_paper_solver.json"
} 2>&1 | tee "$OUT/suite.log"
