"""Tests run with float64 enabled so references can be compared tightly; float32 paths are
exercised by passing ``dtype=jnp.float32`` explicitly.

Layout: ``unit/`` (one module each), ``integration/`` (sweeps, the command line, executors,
notebooks), ``helpers/`` (independent reference oracles and scripts the tests run in fresh
processes; on ``sys.path``, so ``from reference import ...`` works everywhere).

Compiles dominate the test time on two cores, and the command-line subprocesses the tests
start compile the same programs again and again: they share JAX's persistent compilation
cache in one directory per test session (``E2D_JAX_CACHE_DIR``). The test processes
themselves keep that cache off: serialising hundreds of executables into it from one
long-lived process has crashed inside XLA (``executable.serialize()``), and the in-process
jit caches give a test process what it needs, so an in-process ``cli.main`` leaves it off
(``tests/integration/test_cli.py`` checks that).

A test process compiles thousands of programs; every compiled CPU program holds memory
mappings, and a process that reaches the kernel's cap on them crashes inside XLA's compiler.
After every test the in-memory caches are dropped once the process holds half the cap (the
simulator itself does so before a compile above a larger share, which a single test never
reaches from half).
"""
import os
import pathlib
import sys
import tempfile

import jax
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent / "helpers"))

from xla_options import FAST_FLAGS  # noqa: E402

jax.config.update("jax_enable_x64", True)
os.environ.setdefault("E2D_JAX_CACHE_DIR", tempfile.mkdtemp(prefix="e2d_jax_test_cache_"))

#: XLA's CPU flags of the default run (``-m 'not slow'``): optimisation level 0 and the loop
#: emitters for fusions (``xla_options.FAST_FLAGS``). The tests' problems are small, so
#: compiling, not running, takes their time: the loop emitters halve the compiles of level 0
#: alone. The few tests whose processes run long sweeps compile those processes at level 1
#: (``procs.cli_env(long_run=True)``). Every tolerance holds with any flags; tests that
#: compare bits across programs compile those with users' fusion code
#: (``xla_options.AS_USERS_FUSE``). The slow run (any other ``-m``) compiles as users do, and is
#: where the per-seed invariance across device counts is checked. ``E2D_JAX_TEST_XLA``
#: replaces the flags.
FAST_COMPILE = os.environ.get("E2D_JAX_TEST_XLA", FAST_FLAGS)


def pytest_configure(config):
    if config.getoption("markexpr", "") == "not slow" and FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE}".strip()
    # Start the backend now, with the device count of the environment: a test that runs the
    # command line in-process must not be the first to start it.
    jax.devices()


def pytest_runtest_teardown(item, nextitem):
    from e2d_jax.sim.execute import release_if_near_map_limit

    release_if_near_map_limit(share=0.5)


@pytest.fixture(autouse=True, scope="session")
def _no_persistent_cache_in_the_test_process():
    from e2d_jax.cli import commands as cli_main

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli_main, "enable_compilation_cache", lambda *a, **k: None)
        yield
