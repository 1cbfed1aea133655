"""Ctrl-C (SIGINT) at any point of a sweep ends the process with exit status 130, the resume
hint and no traceback or crash, keeping every finished chunk; the sweep then resumes to its
full table. Interrupted during compilation, right after a unit was written and inside a unit:
once each on one host device, twice each on two."""
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import procs

SPEC = """
name = "interrupted"
env = "semi-bandit"
d = 3
arms = 6
horizon = 1500
seeds = 1024
record_every = 500
chunk_size = 128
[[agents]]
name = "ts"
"""
UNITS = 8


def _wait_for(predicate, proc, timeout=300.0):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if predicate():
            return True
        time.sleep(0.002)
    return False


def _chunks(out):
    return sorted((out / "chunks" / "ts").glob("chunk*.npz")) if (out / "chunks" / "ts").exists() else []


# Two devices (the same path through more processes' chunks) with the slow marker.
@pytest.mark.parametrize("devices", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_ctrl_c_always_ends_in_130_and_keeps_finished_chunks(tmp_path, devices):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    env = procs.cli_env()
    # A cache of this test's own: a process interrupted while it writes an entry must not leave
    # a damaged entry in the session's shared cache.
    env["E2D_JAX_CACHE_DIR"] = str(tmp_path / "cache")
    cmd = [sys.executable, "-m", "e2d_jax.cli", "sweep", str(spec), "--quiet", "--host-devices", str(devices),
           "--out", str(out)]
    manifest = out / "manifest.json"
    stamp = lambda: manifest.stat().st_mtime_ns if manifest.exists() else 0
    points = {
        # the run writes the manifest anew before the first unit compiles
        "compile": lambda: stamp() > before and len(_chunks(out)) == n_before,
        "after a unit": lambda: len(_chunks(out)) > n_before,
        "inside a unit": lambda: len(_chunks(out)) > n_before,
    }
    for point, reached in points.items():
        for attempt in range(devices):
            n_before, before = len(_chunks(out)), stamp()
            if n_before >= UNITS - 1:
                pytest.skip("every unit finished before the interrupts could be tried: the machine is too fast")
            proc = subprocess.Popen(cmd + (["--resume"] if out.exists() else []), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            assert _wait_for(reached, proc), f"{point}: the sweep ended before the point was reached"
            if point == "inside a unit":
                time.sleep(0.15)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 130, (point, attempt, proc.returncode, err[-2000:])
            assert "--resume" in err and "Traceback" not in err and "Segmentation" not in err, err[-2000:]
            for chunk in _chunks(out):
                with np.load(chunk) as z:
                    assert z["regret"].shape[2] == 128
            assert not (out / "summary.json").exists()
    done = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    table = pd.read_parquet(out / "results.parquet")
    assert len(table) == 1024 and not table.duplicated(["seed"]).any()
