"""The generated blocks of a documentation page, between marker comments.

A report script (``char_lm_report.py``, ``gpt_report.py``, ``experiments_report.py``,
``data_parallel_report.py``) owns a *tag*, and a page holds each of its blocks
between a pair of HTML comments, which Markdown does not show::

    <!-- experiments_report: lstm -->
    ... the table and figure, written by the script ...
    <!-- /experiments_report: lstm -->

:func:`rewrite_page` replaces the text between the markers of each block it is
given and leaves everything else on the page as it is, byte for byte, so the
prose around a block stays hand-written and the block can be regenerated at
any time. The page is written atomically (a temporary file renamed over it),
and only when something changed. A block whose marker pair the page lacks is
printed instead, not an error; a script with no results for a block leaves it
alone and says so (:func:`no_results`).
"""
from __future__ import annotations

import os
import re
from typing import Callable

MARKER = re.compile(r"<!-- (?P<close>/?)(?P<tag>[A-Za-z_][\w-]*): (?P<name>[\w.-]+) -->")


def markers(tag: str, name: str) -> tuple[str, str]:
    """The opening and closing comments of block ``name`` of ``tag``."""
    return f"<!-- {tag}: {name} -->", f"<!-- /{tag}: {name} -->"


def find_blocks(text: str, tag: str) -> list[str]:
    """The names of ``tag``'s blocks on the page, in their order.

    Raises ValueError when the markers of ``tag`` are not well formed: a block
    opened twice, a closing marker without its opening one (or before it), an
    opening marker never closed, or a block opened inside another."""
    names, open_name = [], None
    for match in MARKER.finditer(text):
        if match["tag"] != tag:
            continue
        name = match["name"]
        if not match["close"]:
            if open_name is not None:
                raise ValueError(f"<!-- {tag}: {name} --> opens inside block {open_name!r}")
            if name in names:
                raise ValueError(f"<!-- {tag}: {name} --> appears twice")
            names.append(name)
            open_name = name
        elif name != open_name:
            raise ValueError(f"<!-- /{tag}: {name} --> closes a block that is not open")
        else:
            open_name = None
    if open_name is not None:
        raise ValueError(f"<!-- {tag}: {open_name} --> is never closed")
    return names


def replace_block(text: str, tag: str, name: str, block: str) -> str | None:
    """``text`` with the text between the markers of block ``name`` replaced by
    ``block`` (on lines of its own); None when the page lacks the pair."""
    start, end = markers(tag, name)
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    if j < 0:
        return None
    if text.find(start, i + len(start)) >= 0:
        raise ValueError(f"{start} appears twice")
    return text[:i + len(start)] + "\n" + block + "\n" + text[j:]


def block_text(text: str, tag: str, name: str) -> str | None:
    """What stands between the markers of block ``name`` (None without them)."""
    start, end = markers(tag, name)
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    return None if j < 0 else text[i + len(start):j]


def rewrite_page(path: str, tag: str, blocks: dict[str, str],
                 log: Callable[[str], None] = print) -> list[str]:
    """Put each of ``blocks`` (name: text) between its markers in the page at ``path``;
    write the page (atomically) if that changed it. Returns the names placed; a block
    without markers on the page is logged with its text instead.

    Raises FileNotFoundError without the page, ValueError when its markers are not well
    formed (see :func:`find_blocks`)."""
    with open(path, encoding="utf-8") as f:
        original = page = f.read()
    find_blocks(page, tag)
    placed = []
    for name, block in blocks.items():
        updated = replace_block(page, tag, name, block)
        if updated is None:
            log(f"{name}: {path} has no {markers(tag, name)[0]} markers; the block:\n{block}")
        else:
            page = updated
            placed.append(name)
    if page != original:
        from tinynet.serialization import atomic_write
        with atomic_write(path, "w") as f:
            f.write(page)
    return placed


def no_results(name: str, where: str, log: Callable[[str], None] = print) -> None:
    """Say that block ``name`` has no results (in ``where``) and is left as it is."""
    log(f"{name}: no results in {where}; its block is left as it is")


def figure_link(figure: str, page: str) -> str:
    """The path of ``figure`` relative to the directory of ``page``, with ``/``."""
    link = os.path.relpath(os.path.abspath(figure), os.path.dirname(os.path.abspath(page)))
    return link.replace(os.sep, "/")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: ``| a | b |`` lines under a ``|---|---|`` rule."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
