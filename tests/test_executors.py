"""Executors: the Ray executor (a local Ray instance with 2 workers) gives the local executor's
results bit for bit, survives a worker killed part-way, and fails with a message (not a
hang) when the cluster cannot run it; ``--part I/N`` splits a sweep into disjoint parts that
together give the same tables; any executor resumes what another started."""
import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest

from e2d_jax.experiments import AgentEntry, SweepError, SweepSpec, run_sweep, units
from e2d_jax.experiments.executors import RayExecutor, parse_part, select_part

ray = pytest.importorskip("ray")


def _spec(**kw):
    base = dict(env="semi-bandit", d=3, arms=5, horizon=60, seeds=24, record_every=20, chunk_size=4,
                agents=(AgentEntry.make("anytime-e2d", {"divergence": "squared"}, {"eps2_scale": [0.3, 1.0]}),
                        AgentEntry.make("ts")), name="exec")
    base.update(kw)
    return SweepSpec(**base)


@pytest.fixture(scope="module")
def local_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "run"
    run_sweep(_spec(), out, progress=False)
    return pd.read_parquet(out / "results.parquet"), np.load(out / "curves.npz")["regret"]


@pytest.fixture(scope="module")
def ray_instance():
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 runtime_env={"env_vars": {"E2D_JAX_CACHE_DIR": os.environ["E2D_JAX_CACHE_DIR"]}})
    except Exception as err:  # noqa: BLE001 - a sandbox without shared memory or local ports
        pytest.skip(f"this machine cannot start a local Ray instance: {type(err).__name__}: {err}")
    yield ray
    ray.shutdown()


def _same_as_local(out, local_results):
    table, curves = local_results
    got = pd.read_parquet(out / "results.parquet")
    assert not got.duplicated(["cell", "instance_seed", "seed"]).any()
    pd.testing.assert_frame_equal(got, table)
    np.testing.assert_array_equal(np.load(out / "curves.npz")["regret"], curves)


def test_parts_are_disjoint_and_cover_the_units():
    spec = _spec()
    all_units = units(spec, 64)
    parts = [select_part(all_units, all_units, (i, 3)) for i in (1, 2, 3)]
    uids = [u.uid for p in parts for u in p]
    assert sorted(uids) == sorted(u.uid for u in all_units) and len(set(uids)) == len(uids)
    assert parse_part("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(ValueError, match="--part"):
            parse_part(bad)


@pytest.mark.parametrize("chunk", [None, 7, 24])
def test_any_chunk_size_gives_the_same_tables(tmp_path, local_results, chunk):
    out = tmp_path / f"chunk{chunk}"
    run_sweep(_spec(chunk_size=chunk), out, progress=False)
    table, curves = local_results
    got = pd.read_parquet(out / "results.parquet")
    pd.testing.assert_frame_equal(got, table)
    np.testing.assert_array_equal(np.load(out / "curves.npz")["regret"], curves)


def test_parts_then_resume_give_the_local_tables(tmp_path, local_results):
    out = tmp_path / "parts"
    first = run_sweep(_spec(), out, progress=False, part="1/2")
    assert first["complete"] is False and first["units_done"] == first["ran"] < first["units"]
    assert not (out / "results.parquet").exists()
    second = run_sweep(_spec(), out, progress=False, part=(2, 2))
    assert second["complete"] is True
    _same_as_local(out, local_results)


def test_ray_two_workers_equal_local_bit_for_bit(tmp_path, ray_instance, local_results):
    out = tmp_path / "ray"
    summary = run_sweep(_spec(), out, progress=False, executor=RayExecutor(workers=2))
    assert summary["executor"] == "ray"
    _same_as_local(out, local_results)


def test_ray_part_then_local_resume(tmp_path, ray_instance, local_results):
    """A driver that stops after part of the sweep (here: after its part) is resumed by
    another executor from the chunk files."""
    out = tmp_path / "mixed"
    run_sweep(_spec(), out, progress=False, executor=RayExecutor(workers=2), part="2/3")
    run_sweep(_spec(), out, progress=False, resume=True)
    _same_as_local(out, local_results)


def _ray_task_pids():
    import psutil

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
    summary = run_sweep(_spec(), out, progress=False, executor=RayExecutor(workers=2, units_per_task=6))
    thread.join()
    assert killed, "no Ray worker was running a task to kill: make the sweep longer"
    assert summary["complete"]
    _same_as_local(out, local_results)


def test_unreachable_head_fails_fast_with_a_message():
    t0 = time.time()
    with pytest.raises(SweepError, match="no Ray head answers at 127.0.0.1:9"):
        RayExecutor(address="127.0.0.1:9", timeout=3).run(_spec(), "/nonexistent", "x", units(_spec(), 64))
    assert time.time() - t0 < 30


def test_resources_no_node_offers_fail_within_the_timeout(ray_instance):
    t0 = time.time()
    with pytest.raises(SweepError, match="no node that has them joined within 2 s"):
        RayExecutor(gpus_per_task=1, timeout=2).run(_spec(), "/nonexistent", "x", units(_spec(), 64))
    assert time.time() - t0 < 30
