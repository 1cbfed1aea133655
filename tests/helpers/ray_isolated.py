"""The Ray executor on a local Ray instance with 2 workers: the local executor's results bit
for bit, a part run by Ray resumed locally, a worker killed part-way retried with nothing lost
or duplicated, and resources no node offers failing within the timeout.

Not collected by the normal test run (the name does not start with ``test_``):
``tests/integration/test_executors.py::test_ray_cases_in_a_fresh_process`` runs this file in a
fresh pytest process, so Ray's driver (its fatal-signal handlers, its C++ threads) never lives
in the main test process. Run it alone with ``python -m pytest tests/helpers/ray_isolated.py``.
"""
import os
import signal
import tempfile
import threading
import time

import psutil
import pytest

import executor_case as C
from e2d_jax.experiments import SweepError, run_sweep, units
from e2d_jax.experiments.executors import RayExecutor
from e2d_jax.sim.simulate import enable_compilation_cache

ray = pytest.importorskip("ray")


#: One compilation cache for this process and its Ray workers (not the session's: a worker is
#: killed part-way in one case, possibly while it writes an entry). The local run below fills
#: it, so the workers load the programs it compiled instead of compiling them again.
CACHE = tempfile.mkdtemp(prefix="e2d_jax_ray_cache_")


@pytest.fixture(scope="module")
def local_results(tmp_path_factory):
    enable_compilation_cache(CACHE)
    return C.local_run(tmp_path_factory.mktemp("local") / "run")


@pytest.fixture(scope="module")
def ray_instance():
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 runtime_env={"env_vars": {"E2D_JAX_CACHE_DIR": CACHE}})
    except Exception as err:  # noqa: BLE001 - a sandbox without shared memory or local ports
        pytest.skip(f"this machine cannot start a local Ray instance: {type(err).__name__}: {err}")
    yield ray
    ray.shutdown()


def test_ray_two_workers_equal_local_bit_for_bit(tmp_path, ray_instance, local_results):
    out = tmp_path / "ray"
    summary = run_sweep(C.spec(), out, progress=False, executor=RayExecutor(workers=2))
    assert summary["executor"] == "ray"
    C.assert_same_as_local(out, local_results)


def test_ray_part_then_local_resume(tmp_path, ray_instance, local_results):
    """A driver that stops after part of the sweep (here: after its part) is resumed by
    another executor from the chunk files."""
    out = tmp_path / "mixed"
    run_sweep(C.spec(), out, progress=False, executor=RayExecutor(workers=2), part="2/3")
    run_sweep(C.spec(), out, progress=False, resume=True)
    C.assert_same_as_local(out, local_results)


def _ray_task_pids():
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if any("_ray_task" in part for part in (p.info["cmdline"] or []))]


def test_killed_worker_is_retried_and_nothing_is_lost_or_duplicated(tmp_path, ray_instance, local_results):
    out = tmp_path / "killed"
    chunks = out / "chunks" / "anytime-e2d"
    killed = []

    def killer():
        deadline = time.time() + 300
        while time.time() < deadline and not killed:
            pids = _ray_task_pids()
            if pids and chunks.exists() and len(list(chunks.parent.rglob("chunk*.npz"))) >= 1:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.01)

    thread = threading.Thread(target=killer)
    thread.start()
    # One task per agent (all its units), so the kill lands in the middle of a task.
    summary = run_sweep(C.spec(), out, progress=False, executor=RayExecutor(workers=2, units_per_task=6))
    thread.join()
    assert killed, "no Ray worker was running a task to kill: make the sweep longer"
    assert summary["complete"]
    C.assert_same_as_local(out, local_results)


def test_resources_no_node_offers_fail_within_the_timeout(ray_instance):
    t0 = time.time()
    with pytest.raises(SweepError, match="no node that has them joined within 2 s"):
        RayExecutor(gpus_per_task=1, timeout=2).run(C.spec(), "/nonexistent", "x", units(C.spec(), 64))
    assert time.time() - t0 < 30
