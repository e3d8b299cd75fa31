"""The two graph pictures of docs/tutorial.md, drawn by the tutorial's own code.

The tutorial's ```python blocks are run in order, in one namespace and in a temporary
working directory, as tests/test_docs.py runs them, up to the block that has drawn
``fused_layernorm.svg``. Its two pictures, ``composite_layernorm.svg`` and
``fused_layernorm.svg``, are then written beside this script as
``tutorial_composite_layernorm.svg`` and ``tutorial_fused_layernorm.svg``, each
atomically (a failure leaves the old file in place). So the committed pictures are
exactly the tutorial's graphs, with nothing copied out of it to drift apart.

    python docs/figures/tutorial_graphs.py

Needs the graphviz package and Graphviz's ``dot`` program (``pip install 'tinynet[viz]'``).
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from tinynet.serialization import atomic_write

FIGURES = Path(__file__).resolve().parent
TUTORIAL = FIGURES.parent / "tutorial.md"
PICTURES = ("composite_layernorm.svg", "fused_layernorm.svg")
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def draw_pictures(directory: Path) -> None:
    """Run the tutorial's blocks in ``directory`` until both pictures are there."""
    namespace = {"__name__": "__main__"}
    blocks = PYTHON_BLOCK.findall(TUTORIAL.read_text(encoding="utf-8"))
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"{TUTORIAL.name}, python block {number}", "exec"), namespace)
        if all((directory / name).exists() for name in PICTURES):
            return
    raise RuntimeError(f"{TUTORIAL.name} did not draw {' and '.join(PICTURES)}")


def main() -> None:
    start = Path.cwd()
    with tempfile.TemporaryDirectory() as directory:
        os.chdir(directory)
        try:
            draw_pictures(Path(directory))
        finally:
            os.chdir(start)
        for name in PICTURES:
            target = FIGURES / f"tutorial_{name}"
            with atomic_write(target, "wb") as f:
                f.write((Path(directory) / name).read_bytes())
            print(f"wrote {target.relative_to(FIGURES.parent.parent)}")


if __name__ == "__main__":
    main()
