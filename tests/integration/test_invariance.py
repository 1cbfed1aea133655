"""Per-seed results are the same bits whatever the batch (chunk) size and the device count.

A seed's trajectory must depend only on (master seed, seed index): that is what lets a sweep
be chunked, resumed and spread over devices, Ray workers or job-array parts and still agree
bit for bit. It relies on every seed having its own copy of the instance
(:func:`e2d_jax.sim.simulate.make_batched_rollout`): a product of a shared matrix with per-seed
vectors would become one matrix-matrix product whose kernel XLA chooses by the batch size.
"""
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import invariance_case as C


def _differing(a, b):
    fa, fb = C.flatten(a), C.flatten(b)
    assert fa.keys() == fb.keys()
    return [k for k in fa if not np.array_equal(fa[k], fb[k])]


def _take(result, first, count):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[first:first + count], result)


@pytest.mark.parametrize("case", C.CASES, ids=C.case_id)
def test_a_seeds_bits_do_not_depend_on_the_seeds_beside_it(case):
    """Seeds 5..11 run alone (other positions in the compiled call, other padding) and seed 3
    alone give the bits of the same seeds in one run of 0..11."""
    whole = C.run_case(case)
    for first, count in ((5, 7), (3, 1)):
        part = C.run_case(case, num_seeds=count, first_seed=first)
        bad = _differing(_take(whole, first, count), part)
        assert not bad, f"seeds {first}..{first + count - 1}: leaves {bad} differ"


@pytest.mark.slow
@pytest.mark.parametrize("devices", [2, 3])
def test_device_count_does_not_change_any_seed(tmp_path, devices):
    """All cases on 2 and 3 forced host devices (a fresh process each: the device count is
    fixed when JAX starts) against one device in this process, bit for bit, at
    ``SPLIT_LANES`` seeds per call and device, so that the 12 seeds fill every device (3
    calls of 4 here, one call of 4 per device there). In the slow run, which compiles as users
    do; the default run checks 2 devices end to end
    (``test_cli.py::test_host_devices_shard_with_identical_results``) and padding on several
    devices (``test_simulate.py``)."""
    out = tmp_path / f"dev{devices}.npz"
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    proc = subprocess.run([sys.executable, str(Path(C.__file__)), str(out), "--x64", f"--lanes={C.SPLIT_LANES}"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with np.load(out) as z:
        other = {k: z[k] for k in z.files}
    for case in C.CASES:
        here = C.flatten(C.run_case(case, lanes=C.SPLIT_LANES))
        for name, arr in here.items():
            key = f"{C.case_id(case)}/{name}"
            assert np.array_equal(arr, other[key]), f"{key} differs on {devices} devices"
