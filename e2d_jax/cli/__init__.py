"""The ``e2d-jax`` command line (:mod:`e2d_jax.cli.commands`).

:func:`entry` is the console script: it reads ``--host-devices`` and ``--executor`` from the
arguments and sets XLA's host device count before JAX starts, runs :func:`main`, and ends the
process with its exit status at once after an interrupt (so no thread still inside XLA can
outlive the interpreter's teardown).
"""
from __future__ import annotations

import os
import sys

from e2d_jax.cli.commands import build_parser, host_device_count, main, to_flags

__all__ = ["build_parser", "entry", "main", "to_flags"]


def _set_host_devices(argv) -> None:
    try:
        args, _ = build_parser().parse_known_args(argv)
    except SystemExit:
        return  # argparse reports the bad arguments again in main()
    count = host_device_count(args) if getattr(args, "command", "plot") != "plot" else 1
    flags = os.environ.get("XLA_FLAGS", "")
    if count > 1 and "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()


def entry(argv=None) -> None:
    """The ``e2d-jax`` console script (also ``python -m e2d_jax.cli``)."""
    argv = sys.argv[1:] if argv is None else argv
    _set_host_devices(argv)
    status = main(argv)
    if status == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(status)
