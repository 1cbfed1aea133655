"""Tests run with float64 enabled so references can be compared tightly; float32 paths are
exercised by passing ``dtype=jnp.float32`` explicitly.

Compiles dominate the test time on two cores, and the CLI subprocesses the tests start
compile the same programs again and again: they share JAX's persistent compilation cache in
one directory per test session (``E2D_JAX_CACHE_DIR``, which the CLI reads). The test
process itself does not use that cache: in three CI-like runs (clean clone, ``.ci/run``) it
crashed inside XLA (SIGABRT once, SIGSEGV twice, each in ``_compile_and_write_cache`` after
about 40 minutes and hundreds of compiles, with other processes, among them Ray workers one
of which a test kills, writing to the same directory); the cause is not pinned down. A
likely one: JAX writes a cache entry with a plain ``write_bytes``, so a process killed
mid-write leaves a truncated entry that another process then loads; the tests that kill or
interrupt a process now give it a cache directory of its own. The in-process jit caches
give the test process what it needs.
"""
import os
import tempfile

import jax

jax.config.update("jax_enable_x64", True)

os.environ.setdefault("E2D_JAX_CACHE_DIR", tempfile.mkdtemp(prefix="e2d_jax_test_cache_"))
