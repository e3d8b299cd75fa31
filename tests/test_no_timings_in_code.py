"""No timings or speed ratios in the comments and docstrings of tinynet/ and kernels/.

Figures go stale as the code changes; the benchmarks and docs/ hold them. A
comment says what is faster and why ("BLAS's matrix-vector product is faster
than sum(axis=0)"), not by how much ("2-4x faster", "116 µs instead of 193").

:func:`timings_in` reads the comments with ``tokenize`` and the docstrings with
``ast`` (every string that stands as a statement of its own, so the strings
under module constants count too), and looks for a number, or a range such as
``0.28–0.32``, followed by a time unit or by x / × / % and "faster" or "slower".
Shapes (2×2, 64 × 512, 4× wide), shares of data (90 %) and precision (1e-6)
pass.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

NUMBER = r"(?<![\w.])\d+(?:\.\d+)?(?:\s*[-–]\s*\d+(?:\.\d+)?)?"      # 116, 0.1, 5-7, 0.28–0.32
TIMING = re.compile(
    rf"{NUMBER}\s*(?:s|ms|µs|μs|us|ns|seconds?)\b"                    # 116 µs, 0.1 s
    rf"|{NUMBER}\s*(?:x|×|%|times)\s*(?:faster|slower)\b")            # 4x faster, 5 % slower


def timings_in(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comment or docstring line of ``source`` that quotes a timing."""
    texts = [(token.start[0], token.string) for token in
             tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            texts.append((node.lineno, node.value.value))
    return [(first + offset, line.strip())
            for first, text in texts
            for offset, line in enumerate(text.splitlines())
            if TIMING.search(line)]


def test_no_comment_or_docstring_quotes_a_timing():
    found = [f"{path.relative_to(REPO_ROOT)}:{line}: {text}"
             for folder in ("tinynet", "kernels")
             for path in sorted((REPO_ROOT / folder).rglob("*.py"))
             for line, text in timings_in(path.read_text(encoding="utf-8"))]
    assert not found, "timings in comments or docstrings:\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    "x = 1  # took 116 µs instead of 193\n",
    '"""A forward and backward: 0.28–0.32 ms."""\n',
    "# workers spin for some 0.1 s after each product\n",
    "# BLAS: 5-7x faster than sum(axis=2)\n",
    "def f():\n    '''Numba compiles those some 10× slower.'''\n",
    "# the step took 5 % slower\n",
])
def test_the_check_finds_a_timing(source):
    assert timings_in(source)


@pytest.mark.parametrize("source", [
    "# 2×2 windows at stride 2, a 1×28×28 image\n",
    '"""The MLP is 4× wide; 64 × 512 float32 are 128 KiB."""\n',
    "# the first 90 % trains; within 1e-6 of erf\n",
    "# BLAS's matrix-vector product is faster than sum(axis=0)\n",
    'raise RuntimeError("timed out after 5 s")  # code, not a comment\n',
])
def test_the_check_passes_other_figures(source):
    assert timings_in(source) == []
