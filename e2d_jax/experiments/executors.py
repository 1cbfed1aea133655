"""Where a sweep's work units run: this machine (``local``) or a Ray cluster (``ray``), and
which of them (``part``).

Every executor runs the same units (:func:`e2d_jax.experiments.spec.plan`: one fixed chunk
layout per sweep) with the same jitted code (:func:`e2d_jax.experiments.work.run_units`) and writes the same atomic
chunk files into one output directory, so results are identical bit for bit whichever
executor, worker count or part ran a unit, and any of them can
resume what another started.

``local`` (default): the units run in this process on ``jax.devices()`` (the seed axis is
sharded over them: GPUs, or forced host devices on CPU).

``ray``: the units are grouped into Ray tasks (one program's units per task, at most
``units_per_task`` of them), each task handed its units as the driver planned them (so
workers never plan the sweep again), each scheduled on any node with the resources it asks for
(``num_cpus``, ``num_gpus``), where it runs on that node's devices. Ray retries a task whose
worker dies (``max_retries``); a retried task skips the chunks its first attempt already
wrote, so nothing is lost or written twice. Without ``address`` a local Ray instance with
``workers`` CPUs is started (a laptop needs no cluster). On a cluster the output directory
must be a path every node sees (NFS or another shared filesystem mounted at the same path):
the workers write the chunk files there and the driver reads them; an environment or agent of
one's own (``module:attribute``) must be importable on every node from the driver's working
directory, which is put on the workers' ``PYTHONPATH``. Ray is an optional
dependency: ``pip install 'e2d_jax[ray]'``.

Parts (``part=(i, n)`` or ``"i/n"``): only the units ``j`` with ``j % n == i - 1`` run, so
``n`` jobs of a batch scheduler (a SLURM array, say) share one sweep; a part that finds all
units done collects the tables, and a resumed run or ``collect_stored`` does so later.
"""
from __future__ import annotations

import math
import os
import socket
import time
from pathlib import Path

import jax

from e2d_jax import _checks as V
from e2d_jax.experiments import storage
from e2d_jax.experiments.provenance import code_id, unit_digest
from e2d_jax.experiments.spec import SweepError
from e2d_jax.experiments.work import progress_bar, run_units
from e2d_jax.sim.simulate import enable_compilation_cache

EXECUTORS = ("local", "ray")


def parse_part(text) -> tuple[int, int] | None:
    """``"I/N"`` -> (I, N) with 1 <= I <= N; None for None. ValueError names ``part``."""
    if text is None:
        return None
    if isinstance(text, tuple):
        i, n = text
    else:
        try:
            i, n = (int(x) for x in str(text).split("/"))
        except ValueError:
            raise V.ArgumentError("part", f"{V.name('part')} must be I/N (e.g. 2/8: the second of eight parts), got {text!r}") from None
    if n < 1 or not 1 <= i <= n:
        raise V.ArgumentError("part", f"{V.name('part')} I/N needs 1 <= I <= N, got {i}/{n}")
    return int(i), int(n)


def select_part(todo: list, all_units: list, part) -> list:
    """The units of ``todo`` that belong to ``part`` (by their position in ``all_units``)."""
    if part is None:
        return todo
    i, n = part
    position = {u.uid: j for j, u in enumerate(all_units)}
    return [u for u in todo if position[u.uid] % n == i - 1]


class LocalExecutor:
    """Runs the units in this process, on this machine's devices."""

    name = "local"

    def run(self, spec, out: Path, digest: str, todo: list, *, progress=None) -> float:
        return run_units(spec, out, digest, todo, progress=progress)


def _probe(address: str, timeout: float) -> None:
    """Fails fast (SweepError) when nothing listens at a Ray head's ``host:port``."""
    if address in ("auto", "local") or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise SweepError(f"{V.name('address')} must be HOST:PORT of a Ray head (e.g. 10.0.0.1:6379) or 'auto', got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise SweepError(f"{V.name('address')}: no Ray head answers at {address} within {timeout:.0f} s ({err}); start one "
                         "with Ray's command line (ray start), or give no address for a local Ray instance") from None


class RayExecutor:
    """Runs the units as Ray tasks (see the module docstring).

    Args:
      address: a Ray head's ``HOST:PORT`` (or ``auto``); None starts a local instance.
      workers: tasks that may run at once on a local instance (its CPU count; default: this
        machine's cores); on a cluster Ray decides from the nodes' resources.
      cpus_per_task: the resources each task asks for.
      gpus_per_task: see ``cpus_per_task``.
      units_per_task: at most this many units per task (default: a program's units spread over
        ``workers`` tasks).
      max_retries: how often Ray reruns a task whose worker died.
      timeout: seconds to wait for the head to answer and for the cluster to offer one task's
        resources (a node that never joins ends the run with a message, not a hang).
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, workers: int | None = None, cpus_per_task: float = 1,
                 gpus_per_task: float = 0, units_per_task: int | None = None, max_retries: int = 3,
                 timeout: float = 60.0):
        self.address = address
        self.workers = None if workers is None else V.check_int("workers", workers, minimum=1)
        self.cpus_per_task = float(cpus_per_task)
        self.gpus_per_task = float(gpus_per_task)
        if self.cpus_per_task <= 0 or self.gpus_per_task < 0:
            raise ValueError(f"cpus_per_task must be > 0 and gpus_per_task >= 0, got {cpus_per_task}, {gpus_per_task}")
        self.units_per_task = None if units_per_task is None else V.check_int("units_per_task", units_per_task, minimum=1)
        self.max_retries = V.check_int("max_retries", max_retries, minimum=0)
        self.timeout = float(timeout)

    # -- connection -------------------------------------------------------------------
    def _connect(self):
        # Probe first: a head that does not answer fails the run before Ray is even imported.
        if self.address is not None:
            _probe(self.address, self.timeout)
        try:
            import ray
        except ImportError:
            raise SweepError(f"{V.name('executor')} 'ray' needs Ray: pip install 'e2d_jax[ray]'") from None
        if ray.is_initialized():
            return ray
        env_vars = {k: os.environ[k] for k in ("XLA_FLAGS", "E2D_JAX_CACHE_DIR", "JAX_PLATFORMS") if k in os.environ}
        cache = jax.config.jax_compilation_cache_dir
        if cache and "E2D_JAX_CACHE_DIR" not in env_vars:
            env_vars["E2D_JAX_CACHE_DIR"] = cache  # workers share the driver's compilation cache
        # The units carry the agents' factories; one of the user's own (module:attribute, imported
        # from the working directory) is found by the workers on the same path.
        env_vars["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)
        kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False,
                      runtime_env={"env_vars": env_vars} if env_vars else None)
        if self.address is None:
            workers = self.workers or os.cpu_count() or 1
            ray.init(num_cpus=int(math.ceil(workers * self.cpus_per_task)), **kwargs)
        else:
            ray.init(address=self.address, **kwargs)
        return ray

    def _wait_for_resources(self, ray) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            res = ray.cluster_resources()
            if res.get("CPU", 0) >= self.cpus_per_task and res.get("GPU", 0) >= self.gpus_per_task:
                return
            if time.monotonic() > deadline:
                raise SweepError(
                    f"the Ray cluster offers {res.get('CPU', 0):g} CPUs and {res.get('GPU', 0):g} GPUs; a task asks for "
                    f"{self.cpus_per_task:g} CPUs and {self.gpus_per_task:g} GPUs and no node that has them joined "
                    f"within {self.timeout:.0f} s (start the nodes, or ask for fewer gpus_per_task)")
            time.sleep(1.0)

    # -- tasks ------------------------------------------------------------------------
    def _groups(self, todo: list) -> list:
        by_program: dict = {}
        for u in todo:
            by_program.setdefault(u.program.label, []).append(u)
        size = self.units_per_task
        groups = []
        for units_ in by_program.values():
            per = size or max(1, math.ceil(len(units_) / (self.workers or os.cpu_count() or 1)))
            groups.extend(units_[i:i + per] for i in range(0, len(units_), per))
        return groups

    def run(self, spec, out: Path, digest: str, todo: list, *, progress=None) -> float:
        if not todo:
            return 0.0
        ray = self._connect()
        self._wait_for_resources(ray)
        task = ray.remote(_ray_task).options(num_cpus=self.cpus_per_task, num_gpus=self.gpus_per_task,
                                            max_retries=self.max_retries, retry_exceptions=False)
        code = code_id()
        x64 = bool(jax.config.jax_enable_x64)  # workers compute as the driver does
        # Each task gets its units as the driver planned them (programs, seeds, lane width).
        pending = {task.remote(spec, str(Path(out).resolve()), digest, code, x64, g): len(g) for g in self._groups(todo)}
        t0 = time.perf_counter()
        bar = progress_bar(len(todo), progress)
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    n = pending.pop(ref)
                    try:
                        ray.get(ref)
                    except ray.exceptions.RayTaskError as err:
                        cause = err.as_instanceof_cause()
                        raise SweepError(f"a Ray task failed: {type(cause).__name__}: {cause}".splitlines()[0]) from None
                    except ray.exceptions.RayError as err:
                        raise SweepError(f"a Ray task failed after {self.max_retries} retries: "
                                         f"{str(err).splitlines()[0]}; finished chunks are kept, rerun with "
                                         "resume=True") from None
                    bar.update(n)
        finally:
            bar.close()
            for ref in pending:
                ray.cancel(ref, force=True)
        return time.perf_counter() - t0


def _ray_task(spec, out: str, digest: str, code: str, x64: bool, todo: list) -> dict:
    """One Ray task: runs the units ``todo`` of the sweep (those not already on disk)."""
    if code_id() != code:
        raise SweepError(f"node {socket.gethostname()} runs e2d_jax {code_id()}, the driver {code}: install the "
                         "same version on every node")
    jax.config.update("jax_enable_x64", x64)
    cache = os.environ.get("E2D_JAX_CACHE_DIR")
    if cache:
        enable_compilation_cache(cache)
    todo = [u for u in todo if not storage.chunk_done(Path(out), u.uid, unit_digest(digest, u))]
    seconds = run_units(spec, Path(out), digest, todo, progress=False)
    return {"host": socket.gethostname(), "ran": [u.uid for u in todo], "seconds": seconds}


def make_executor(name: str = "local", **options):
    """``"local"`` or ``"ray"`` (options: those of :class:`RayExecutor`)."""
    if name == "local":
        unknown = {k for k, v in options.items() if v not in (None, 0, False)}
        if unknown:
            raise V.ArgumentError(sorted(unknown)[0], f"{', '.join(V.name(u) for u in sorted(unknown))}: only for the "
                                                      f"ray {V.name('executor')}, not local")
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(**{k: v for k, v in options.items() if v is not None})
    raise V.ArgumentError("executor", f"{V.name('executor')} must be one of {EXECUTORS}, got {name!r}")
