"""The ``e2d-jax`` command line (:mod:`e2d_jax.cli.commands`).

:func:`entry` is the console script: it reads ``--host-devices`` and ``--executor`` from the
arguments (with a parser that prints nothing and never exits, so that help, the version and
errors come once, from :func:`main`) and sets XLA's host device count before JAX starts, runs
:func:`main`, and ends the process with its exit status at once after an interrupt (so no
thread still inside XLA can outlive the interpreter's teardown).
"""
from __future__ import annotations

import argparse
import os
import sys

from e2d_jax.cli.commands import build_parser, host_device_count, main, parse_host_devices, to_flags

__all__ = ["build_parser", "entry", "main", "to_flags"]


class _Unreadable(Exception):
    """The arguments are not what :func:`_preparser` reads; :func:`main` says why."""


class _SilentParser(argparse.ArgumentParser):
    """A parser that neither prints nor exits: its errors raise :class:`_Unreadable`."""

    def error(self, message):
        raise _Unreadable(message)

    def exit(self, status=0, message=None):
        raise _Unreadable(message)


def _preparser() -> argparse.ArgumentParser:
    """Reads the command, ``--host-devices`` and ``--executor`` and leaves every other
    argument (``--help`` and ``--version`` among them) to :func:`main`'s parser."""
    parser = _SilentParser(prog="e2d-jax", add_help=False)
    sub = parser.add_subparsers(dest="command", parser_class=_SilentParser)
    for name in ("run", "reproduce", "sweep"):
        p = sub.add_parser(name, add_help=False)
        p.add_argument("--host-devices", type=parse_host_devices, default="auto")
        p.add_argument("--executor", default="local")
    sub.add_parser("plot", add_help=False)
    return parser


def _set_host_devices(argv) -> None:
    try:
        args, _ = _preparser().parse_known_args(argv)
    except _Unreadable:
        return  # main()'s parser reports the bad arguments
    if args.command in (None, "plot"):
        return
    count = host_device_count(args)
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
