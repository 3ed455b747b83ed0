"""A commprof module run as a program of its own (a GPU rank, a rank under mpirun, TensorBoard for `view`) without
the working directory on its path: `python -m` puts it first, so a folder there named like a package or a standard
module (`commprof/`, the parent of a clone installed with `pip install -e`; `torch/`; `profile.py`) was imported in
place of the real one. `python -c` puts "" (the working directory) first instead: the boot line removes it."""

from __future__ import annotations

import sys

BOOT = (
    "import runpy, sys; del sys.path[0]; del sys.argv[0]; "
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)


def module_arguments(module: str, *args: str) -> list[str]:
    """What follows the interpreter on the command line: `-c BOOT module args...` runs `module` as `python -m` would,
    its working directory kept but off its path."""
    return ["-c", BOOT, module, *args]


def module_argv(module: str, *args: str) -> list[str]:
    return [sys.executable, *module_arguments(module, *args)]
