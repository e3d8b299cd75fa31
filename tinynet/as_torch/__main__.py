"""``python -m tinynet.as_torch SCRIPT [ARGS...]``: run a PyTorch program on tinynet.

``python -m tinynet.as_torch -m MODULE [ARGS...]`` runs a module the way
``python -m`` does. The script sees the arguments after it as ``sys.argv[1:]``,
its own folder first on ``sys.path``, and ``__name__ == "__main__"``, as with
``python SCRIPT``.
"""
from __future__ import annotations

import os
import runpy
import sys

from . import install

USAGE = "usage: python -m tinynet.as_torch SCRIPT [ARGS...] | -m MODULE [ARGS...]"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + (__doc__ or "").split("\n\n", 1)[1].strip())
        raise SystemExit(0 if argv else 2)
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit(USAGE)
        sys.argv = argv[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = argv[0]
    if not os.path.isfile(script):
        raise SystemExit(f"tinynet.as_torch: no such script: {script}")
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
