"""Griffe extensions for the API reference (mkdocstrings reads the code through griffe).

* ``KernelsSubpackage``: ``tinynet.kernels`` is installed from the top-level ``kernels/``
  folder (setup.cfg's ``package_dir``), so griffe, which reads ``tinynet/``, does not see
  it. This puts it where ``import tinynet.kernels`` finds it.
* ``OneEntryPerObject``: a package re-exports its submodules' names (``tinynet.data``
  exports ``DataLoader`` from ``tinynet.data.loader``); a package's ``:::`` would show
  such a name twice, so it is documented once, in the module that defines it. (The
  pages name each public object instead, ``::: tinynet.data.DataLoader``.)
* ``ImportedObjects``: what tinynet's import makes of its source, which griffe, reading
  the source, does not see: a Tensor method that forwards to an op takes the op's
  docstring then (``tinynet/tensor.py``), and a function made by a factory or bound
  to a second name (``zeros = _factory(zeros)``, ``zeros_like = _like(zeros)``,
  ``clamp = clip``) has the made function's signature. Both are read from the
  imported objects.
* ``SphinxDocstrings``: the docstrings are written for Sphinx, and mkdocstrings reads
  them as Markdown. ``:func:`load``` and ``:class:`~tinynet.data.DataLoader``` become code
  that links to the object's entry in the API reference where there is one (plain code
  where there is none, such as a private function); a paragraph ending in ``::``
  introduces a literal block (indented code, the same in Markdown) and ends in ``:``.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import types
from pathlib import Path

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):`(?P<short>~?)(?P<name>[\w.]+)`")
LITERAL_MARKER = re.compile(r"(?m)(?<=\S)::$|^[ \t]*::\n")


class KernelsSubpackage(griffe.Extension):
    """Load ``tinynet.kernels`` from wherever the import system finds it."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs) -> None:
        if pkg.path != "tinynet" or "kernels" in pkg.members:
            return
        spec = importlib.util.find_spec("tinynet.kernels")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("tinynet.kernels is not importable: install tinynet "
                              "(pip install -e .) before building the docs")
        kernels = loader.load(Path(spec.submodule_search_locations[0]))
        pkg.set_member("kernels", kernels)


class OneEntryPerObject(griffe.Extension):
    """Hide a package's re-exports of its own submodules' objects from the reference."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.path != "tinynet":
            return
        pending = [pkg]
        while pending:
            module = pending.pop()
            for member in module.members.values():
                if member.is_alias:
                    if member.target_path.startswith(module.path + "."):
                        member.public = False
                elif member.is_module:
                    pending.append(member)


def imported(path: str):
    """The object at ``path`` once tinynet is imported (a class's member as it is in the
    class: a function or a property), or None."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for part in parts[split:]:
                obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return None
        return obj
    return None


def signature_of(name: str, function: types.FunctionType, lineno) -> griffe.Function:
    """A griffe function named ``name`` with ``function``'s signature and docstring."""
    parameters = griffe.Parameters(*(
        griffe.Parameter(p.name, kind=griffe.ParameterKind(p.kind.description),
                         default=None if p.default is p.empty else repr(p.default))
        for p in inspect.signature(function).parameters.values()))
    doc = function.__doc__
    return griffe.Function(name, lineno=lineno, parameters=parameters,
                           docstring=griffe.Docstring(doc) if doc else None)


class ImportedObjects(griffe.Extension):
    """Signatures and docstrings as the import makes them (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.path != "tinynet":
            return
        pending = [pkg]
        while pending:
            scope = pending.pop()
            for name, member in list(scope.members.items()):
                if member.is_alias or member.path.startswith("tinynet.kernels"):
                    continue
                if member.is_module or member.is_class:
                    pending.append(member)
                    continue
                runtime = imported(member.path)
                if isinstance(runtime, types.FunctionType) and not hasattr(
                        runtime, "__wrapped__") and runtime.__module__.startswith("tinynet") \
                        and (member.is_attribute or runtime.__code__.co_name != name):
                    scope.set_member(name, signature_of(name, runtime, member.lineno))
                elif member.docstring is None and isinstance(
                        runtime, (types.FunctionType, property)) and runtime.__doc__:
                    member.docstring = griffe.Docstring(runtime.__doc__, parent=member)


def resolve(name: str, obj: griffe.Object) -> str:
    """The full path of ``name`` written in ``obj``'s docstring, as the reference names it.

    A name is looked up in the object, then in each scope around it (its class, its
    module, the package), then as a full path; an imported name is followed to where it
    is defined.
    """
    first, _, rest = name.partition(".")
    path = name
    scope = obj
    while scope is not None:
        if first in scope.members:
            member = scope.members[first]
            path = member.target_path if member.is_alias else member.path
            path = f"{path}.{rest}" if rest else path
            break
        scope = scope.parent
    try:
        target = obj.modules_collection[path]
        return target.final_target.path if target.is_alias else target.path
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return path      # outside tinynet (the standard library, NumPy): left as code


def markdown(docstring: str, obj: griffe.Object) -> str:
    """``docstring`` with its Sphinx roles and ``::`` markers turned into Markdown."""
    def link(match: re.Match) -> str:
        name = match["name"]
        shown = name.rsplit(".", 1)[-1] if match["short"] else name
        return (f'<autoref identifier="{resolve(name, obj)}" optional>'
                f"<code>{shown}</code></autoref>")
    text = ROLE.sub(link, docstring)
    return LITERAL_MARKER.sub(lambda match: "" if match[0].strip() == "::" else ":", text)


class SphinxDocstrings(griffe.Extension):
    """Rewrite every docstring of tinynet, once all of it is loaded (kernels included)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.path != "tinynet":
            return
        pending = [pkg]
        while pending:
            obj = pending.pop()
            if obj.docstring is not None:
                obj.docstring.value = markdown(obj.docstring.value, obj)
            pending.extend(member for member in obj.members.values() if not member.is_alias)
