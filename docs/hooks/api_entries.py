"""An mkdocs hook: the API reference's entries for the ops, from the ops modules' ``__all__``.

An op is listed once, in the ``__all__`` of its module of ``tinynet/ops/``, and its entries
in the reference follow from there. On a page of ``docs/api/``, a line

    <!-- ops: elementwise conditional -->

becomes one ``::: tinynet.ops.X`` entry for each op of ``tinynet/ops/elementwise.py`` and
``conditional.py`` (the names of their ``__all__`` that :mod:`tinynet.ops` exports, in
order), after a line naming the files, and

    <!-- methods: elementwise conditional -->

one ``::: tinynet.Tensor.X`` entry for each of those ops that is also a Tensor method
(``x.add(y)``). The hand-written headings around these lines keep the pages' groups; the
API pages' tests (``tests/test_docstrings.py``) read the pages through :func:`expand` too,
so this module needs nothing but tinynet (mkdocs only calls :func:`on_page_markdown`).
"""
from __future__ import annotations

import importlib
import re

import tinynet

LINE = re.compile(r"^<!-- (?P<kind>ops|methods): (?P<modules>[\w ]+?) -->$", re.MULTILINE)


def ops_of(module_name: str) -> list[str]:
    """The ops of ``tinynet/ops/<module_name>.py``: its ``__all__``, as tinynet.ops exports them."""
    try:
        module = importlib.import_module(f"tinynet.ops.{module_name}")
    except ModuleNotFoundError as error:
        raise ValueError(f"docs/api: no module tinynet/ops/{module_name}.py") from error
    return [name for name in module.__all__ if name in tinynet.ops.__all__]


def entries(kind: str, module_names: list[str]) -> str:
    """The Markdown of one ``<!-- ops: ... -->`` or ``<!-- methods: ... -->`` line."""
    names = [name for module in module_names for name in ops_of(module)]
    if kind == "methods":
        return "\n\n".join(f"::: tinynet.Tensor.{name}" for name in names
                           if hasattr(tinynet.Tensor, name))
    files = [f"`tinynet/ops/{module}.py`" for module in module_names]
    files = ", ".join(files[:-1]) + " and " + files[-1] if len(files) > 1 else files[0]
    return "\n\n".join([f"In {files}:", *(f"::: tinynet.ops.{name}" for name in names)])


def expand(markdown: str) -> str:
    """``markdown`` with each ``<!-- ops: ... -->`` and ``<!-- methods: ... -->`` line
    replaced by its entries."""
    return LINE.sub(lambda line: entries(line["kind"], line["modules"].split()), markdown)


def on_page_markdown(markdown: str, **kwargs) -> str:
    """mkdocs calls this with each page's Markdown before rendering it."""
    return expand(markdown)
