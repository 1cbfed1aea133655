"""Tests run with float64 enabled so references can be compared tightly; float32 paths are
exercised by passing ``dtype=jnp.float32`` explicitly.

Compiles dominate the test time on two cores, and the CLI subprocesses the tests start
compile the same programs again and again: they share JAX's persistent compilation cache in
one directory per test session (``E2D_JAX_CACHE_DIR``, which the CLI reads).

The test process itself never uses that cache (the in-process jit caches give it what it
needs). Four CI-like runs (clean clone, ``.ci/run``) crashed inside XLA after about 40
minutes and hundreds of compiles, each in ``_compile_and_write_cache``; the last trace pins it
to ``put_executable_and_time`` -> ``executable.serialize()`` in the test process, whose cache
the in-process ``cli.main`` calls had switched on (``cli._enable_compilation_cache``). A
test process that runs the CLI in-process therefore gets that function replaced by a no-op
for the whole session, and ``test_cli`` checks that the cache stays off.
"""
import os
import tempfile

import jax
import pytest

jax.config.update("jax_enable_x64", True)
# Start the backend now: an in-process ``cli.main`` run first in a worker would otherwise set
# the CLI's default ``--host-devices auto`` into XLA_FLAGS before JAX started, and every later
# test of that worker would run on several CPU devices.
jax.devices()

os.environ.setdefault("E2D_JAX_CACHE_DIR", tempfile.mkdtemp(prefix="e2d_jax_test_cache_"))


@pytest.fixture(autouse=True, scope="session")
def _no_persistent_cache_in_the_test_process():
    from e2d_jax import cli

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "_enable_compilation_cache", lambda: None)
        yield
