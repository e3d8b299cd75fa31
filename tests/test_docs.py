"""The ```python blocks of README.md and docs/*.md, each run as a test.

A block's test is named by its file and its number there: ``docs/index.md:2`` is the
second ```python block of docs/index.md (a failure's traceback gives the Markdown line).
The blocks of one file run in order in one namespace, so a block may use the names the
blocks before it defined; each file starts from an empty namespace. They run in a
temporary working directory, with HOME and TINYNET_DATA pointing at empty temporary
directories: nothing is written into the repository or the user's cache, and the MNIST
loader finds no MNIST there, so it returns the sample bundled with tinynet. Other fences
(```sh, ```bash, ```console, ```text, plain ```) are not run.

How a block runs can be said in an HTML comment on the line just before its fence
(Markdown renderers do not show it); ``gpu``, ``graphviz`` and ``mnist=N`` combine with commas:

    <!-- doctest: skip (needs two MPI processes) -->   not run; the report gives the reason
    <!-- doctest: gpu -->          run only where a CUDA GPU is present, skipped elsewhere
    <!-- doctest: graphviz -->     run only where tinynet.viz.draw can render (the graphviz
                                   package and the dot program), skipped elsewhere
    <!-- doctest: mnist=400 -->    MNIST is the first 400 training and 400 test images of
                                   the bundled sample (for blocks that train on it)
    <!-- doctest: from tinynet/ops/activation.py -->   an excerpt of that file, not run: the
                                   test is that the block appears in the file, verbatim
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import textwrap
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import tinynet
from tinynet.data.idx import read_mnist, write_idx
from tinynet.data.mnist import SAMPLE_ROOT, TEST_FILES, TRAIN_FILES

ROOT = Path(__file__).resolve().parents[1]
PYTHON_LANGUAGES = {"python", "py", "python3"}
FENCE = re.compile(r"(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)")
COMMENT = re.compile(r"\s*<!--\s*doctest:(?P<options>.*?)-->\s*")
SKIP = re.compile(r"skip\s*\((?P<reason>.+)\)")
MNIST_SIZE = re.compile(r"mnist\s*=\s*(?P<size>[1-9][0-9]*)")
EXCERPT = re.compile(r"from\s+(?P<path>[\w./-]+)")


@dataclass
class Block:
    """One ```python block of a Markdown file."""
    path: Path
    number: int        # 1 for the file's first ```python block
    line: int          # the line of the fence in the file
    code: str
    options: dict      # from its doctest comment: skip, gpu, mnist; or error

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.number}"


def read_options(text: str) -> dict:
    """The options of a doctest comment; ``{"error": message}`` if it cannot be read."""
    text = text.strip()
    skip = SKIP.fullmatch(text)
    if skip:
        return {"skip": skip["reason"].strip()}
    excerpt = EXCERPT.fullmatch(text)
    if excerpt:
        return {"from": excerpt["path"]}
    options = {}
    for option in filter(None, (part.strip() for part in text.split(","))):
        size = MNIST_SIZE.fullmatch(option)
        if option in ("gpu", "graphviz"):
            options[option] = True
        elif size:
            options["mnist"] = int(size["size"])
        else:
            return {"error": f"doctest comment {text!r}: cannot read {option!r}; the options "
                             "are 'skip (reason)', 'from PATH', 'gpu', 'graphviz' and "
                             "'mnist=N'"}
    return options


def opens_python_block(line: str) -> bool:
    """Whether ``line`` is a fence opening a ```python (```py, ```python3) block."""
    opening = FENCE.fullmatch(line)
    words = opening["info"].split() if opening else []
    return bool(words) and words[0] in PYTHON_LANGUAGES


def read_markdown(path: Path) -> tuple[list[Block], list[int]]:
    """The file's ```python blocks, and the lines of doctest comments not before one."""
    lines = path.read_text(encoding="utf-8").splitlines() + [""]
    blocks, stray_comments = [], []
    start = 0
    while start < len(lines):
        opening = FENCE.fullmatch(lines[start])
        if not opening:
            if COMMENT.fullmatch(lines[start]) and not opens_python_block(lines[start + 1]):
                stray_comments.append(start + 1)
            start += 1
            continue
        fence = opening["fence"]
        closing = re.compile(rf"\s*{fence[0]}{{{len(fence)},}}\s*")
        end = start + 1
        while end < len(lines) and not closing.fullmatch(lines[end]):
            end += 1
        if opens_python_block(lines[start]):
            comment = COMMENT.fullmatch(lines[start - 1]) if start else None
            code = textwrap.dedent("\n".join(lines[start + 1:end]))
            options = read_options(comment["options"]) if comment else {}
            blocks.append(Block(path, len(blocks) + 1, start + 1, code, options))
        start = end + 1
    return blocks, stray_comments


MARKDOWN_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = {path: read_markdown(path)[0] for path in MARKDOWN_FILES}


BLOCK_PARAMS = [pytest.param(block, id=block.name,
                             marks=[pytest.mark.gpu] if block.options.get("gpu") else [])
                for blocks in BLOCKS.values() for block in blocks if "from" not in block.options]
EXCERPTS = [pytest.param(block, id=block.name)
            for blocks in BLOCKS.values() for block in blocks if "from" in block.options]


@dataclass
class FileRun:
    """The blocks of one file run so far, their namespace and their directories."""
    directory: Path
    namespace: dict = field(default_factory=lambda: {"__name__": "__main__"})
    done: int = 0                # how many of the file's blocks have had their turn
    failed: str | None = None    # the first block that raised


runs: dict[Path, FileRun] = {}
mnist_subsets: dict[int, Path] = {}


def skip_reason(block: Block) -> str | None:
    if "skip" in block.options:
        return block.options["skip"]
    if "from" in block.options:
        return f"an excerpt of {block.options['from']} (test_markdown_excerpt_is_in_its_file)"
    if block.options.get("gpu") and not tinynet.cuda_is_available():
        return "needs a CUDA GPU"
    if block.options.get("graphviz") and (importlib.util.find_spec("graphviz") is None
                                          or shutil.which("dot") is None):
        return "needs the graphviz package and Graphviz's dot program (tinynet[viz])"
    return None


def mnist_subset(size: int, tmp_path_factory) -> Path:
    """A directory holding mnist/: the first ``size`` examples of each bundled split."""
    if size not in mnist_subsets:
        data = tmp_path_factory.mktemp(f"mnist-{size}")
        for files in (TRAIN_FILES, TEST_FILES):
            images, labels = read_mnist(*(SAMPLE_ROOT / name for name in files))
            write_idx(data / "mnist" / files[0], images[:size])
            write_idx(data / "mnist" / files[1], labels[:size].astype("u1"))
        mnist_subsets[size] = data
    return mnist_subsets[size]


def execute(block: Block, run: FileRun, monkeypatch, tmp_path_factory):
    """Run one block in its file's namespace and directories."""
    for name in ("work", "home", "no-mnist"):
        (run.directory / name).mkdir(exist_ok=True)
    monkeypatch.chdir(run.directory / "work")
    monkeypatch.setenv("HOME", str(run.directory / "home"))
    data = run.directory / "no-mnist"
    if "mnist" in block.options:
        data = mnist_subset(block.options["mnist"], tmp_path_factory)
    monkeypatch.setenv("TINYNET_DATA", str(data))
    # Blank lines in front, so that a traceback's line numbers are the Markdown file's.
    code = compile("\n" * block.line + block.code, str(block.path), "exec")
    trace = None
    try:
        exec(code, run.namespace)
    except Exception as error:
        # The traceback from the block's own line down, without this function's frame.
        trace = traceback.format_exception(type(error), error, error.__traceback__.tb_next)
    finally:
        monkeypatch.undo()
    if trace is not None:
        run.failed = run.failed or block.name
        pytest.fail(f"{block.name}, the block at line {block.line}, raised:\n"
                    + "".join(trace), pytrace=False)


@pytest.mark.parametrize("block", BLOCK_PARAMS)
def test_markdown_python_block(block, monkeypatch, tmp_path_factory):
    run = runs.get(block.path)
    if run is None or run.done >= block.number:      # a file's first block, or a rerun
        run = runs[block.path] = FileRun(tmp_path_factory.mktemp(block.path.name))
    for earlier in BLOCKS[block.path][run.done:block.number - 1]:   # when not selected
        run.done += 1
        if run.failed is None and "error" not in earlier.options and not skip_reason(earlier):
            execute(earlier, run, monkeypatch, tmp_path_factory)
    run.done += 1
    if "error" in block.options:
        pytest.fail(f"{block.name}, the block at line {block.line}: {block.options['error']}",
                    pytrace=False)
    if run.failed is not None:
        pytest.skip(f"{block.name} follows {run.failed}, which failed")
    reason = skip_reason(block)
    if reason is not None:
        pytest.skip(f"{block.name}: {reason}")
    execute(block, run, monkeypatch, tmp_path_factory)


@pytest.mark.parametrize("path", MARKDOWN_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_doctest_comments_stand_before_python_blocks(path):
    stray_comments = read_markdown(path)[1]
    assert not stray_comments, (
        f"{path.relative_to(ROOT)}, lines {stray_comments}: a doctest comment belongs on the "
        "line just before a ```python fence")


@pytest.mark.parametrize("block", EXCERPTS)
def test_markdown_excerpt_is_in_its_file(block):
    """A block marked ``<!-- doctest: from PATH -->`` shows lines of the file PATH as they
    are there, character for character (less their common indentation: a method may be
    shown alone), so that the page cannot drift from the code."""
    source = ROOT / block.options["from"]
    assert source.is_file(), f"{block.name}: no file {block.options['from']}"
    shown = block.code.strip("\n")
    lines = source.read_text(encoding="utf-8").splitlines()
    size = len(shown.splitlines())
    assert any(textwrap.dedent("\n".join(lines[start:start + size])) == shown
               for start in range(len(lines) - size + 1)), (
        f"{block.name}, the block at line {block.line}, is not in {block.options['from']} "
        "as it stands there: copy it again from the file")
