"""Every public name says what it does, and the API reference shows each one.

**The public names** are the ``__all__`` of ``tinynet`` and of the namespaces it
exports (``nn`` and its ``functional``, ``init``, ``utils`` and ``parallel``,
``optim`` and ``optim.lr_scheduler``, ``data``, ``testing``, ``distributed``,
``viz``, ``backend``, ``threads``, ``allocator``), plus ``tinynet.ops`` (where the
Tensor methods dispatch) and ``tinynet.models``.

**The rule** (:func:`undocumented`). A *public callable* is a function or class
among those names that tinynet defines (``tinynet.float32`` is NumPy's and is
NumPy's to document), and every public method and property of such a class:
a name without a leading underscore in the ``__dict__`` of the class or of a
tinynet class it inherits from (Tensor's mixins, a private base such as
``_ConvNd`` whose ``forward`` the public ``Conv2d`` shows). Each needs a
docstring of at least three words, where ``help()`` finds it:

* a class its own (its constructor's arguments are documented there, as in
  PyTorch: ``__init__`` needs none);
* a method or property its own, except that one overriding a documented method
  of a tinynet base class may inherit that docstring (``inspect.getdoc`` and
  ``help()`` show it): ``extra_repr``, ``step`` of a scheduler... *But not
  ``forward``*: a module's ``forward`` states its own shapes, so it needs its own.
* Dunder methods (operators, ``__len__``, ``__getitem__``) are PyTorch's protocol
  and need none. A Tensor method that forwards to the op of the same name gets
  that op's docstring when tinynet is imported (``tinynet/tensor.py``), which
  counts as its own.

**The reference** (``docs/api/*.md``) names what it shows, one ``::: path`` each
(or a module whose ``__all__`` it shows): every name of each namespace's
``__all__`` and every public Tensor method must be on its page, and nothing else
(no helper such as ``EmbeddingFunction`` or ``fan_in_bound``) may be. The pages are read
as the site builds them: a ``<!-- ops: ... -->`` line stands for the entries of the ops
of those modules (``docs/hooks/api_entries.py``).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
import types
from pathlib import Path

import pytest

import tinynet

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"

# Each namespace of public names, and the API pages that must show them.
PAGES = {
    "tinynet": ("tensor.md", "ops.md", "torch.md"),
    "tinynet.ops": ("ops.md",),
    "tinynet.testing": ("tensor.md",),
    "tinynet.backend": ("tensor.md",),
    "tinynet.runtime.threads": ("tensor.md",),
    "tinynet.runtime.allocator": ("tensor.md",),
    "tinynet.nn": ("nn.md",),
    "tinynet.nn.functional": ("nn.md",),
    "tinynet.nn.init": ("nn.md",),
    "tinynet.nn.utils": ("nn.md",),
    "tinynet.nn.parallel": ("nn.md",),
    "tinynet.optim": ("optim.md",),
    "tinynet.optim.lr_scheduler": ("optim.md",),
    "tinynet.data": ("data.md",),
    "tinynet.models": ("models.md",),
    "tinynet.distributed": ("distributed.md",),
    "tinynet.viz": ("viz.md",),
    "tinynet.cuda": ("torch.md",),
    "tinynet.backends": ("torch.md",),
    "tinynet.as_torch": ("torch.md",),
    "tinynet.serialization": ("tensor.md",),
    "tinynet.accelerator": ("torch.md",),
    "tinynet.utils": ("torch.md",),
}
# Shown in the reference though in no namespace's __all__: what a user of the public
# names meets (register_hook returns a RemovableHandle; a custom op subclasses
# Function and is handed a Context), and the kernels' page (docs/api/kernels.md).
ALSO_SHOWN = {"tinynet.autograd.Function", "tinynet.autograd.Context",
              "tinynet.hooks.RemovableHandle", "tinynet.kernels"}
MIN_WORDS = 3
DIRECTIVE = re.compile(r"^::: *(?P<path>[\w.]+) *$", re.MULTILINE)


def load_hook(name: str):
    """The module of ``docs/hooks/<name>.py`` (docs/hooks is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


api_entries = load_hook("api_entries")


# ---------------------------------------------------------------- the rule

def is_ours(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "tinynet"


def has_docstring(doc) -> bool:
    return doc is not None and len(doc.split()) >= MIN_WORDS


def public_members(cls):
    """``(name, member, klass)`` for each public method and property that ``cls``
    or a tinynet class it inherits from defines (``klass``, the one defining it)."""
    for klass in cls.__mro__:
        if not is_ours(klass):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if inspect.isfunction(member) or isinstance(member, property):
                yield name, member, klass


def inherits_docstring(cls, klass, name) -> bool:
    """Whether ``klass.name`` overrides a method that a tinynet base of ``cls``
    documents, whose docstring ``inspect.getdoc`` then shows (``forward`` never
    inherits one: it states its own shapes)."""
    if name == "forward":
        return False
    mro = cls.__mro__
    for base in mro[mro.index(klass) + 1:]:
        member = vars(base).get(name)
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if is_ours(base) and member is not None and has_docstring(member.__doc__):
            return True
    return False


def namespaces(roots=("tinynet", "tinynet.ops", "tinynet.models")):
    """The namespaces of public names: the roots, and the modules their __all__ export."""
    found, pending = {}, [importlib.import_module(name) for name in roots]
    while pending:
        module = pending.pop()
        if module.__name__ in found:
            continue
        found[module.__name__] = module
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, types.ModuleType) and value.__name__.startswith("tinynet."):
                pending.append(value)
    return found


def undocumented(modules) -> list[str]:
    """Every public callable of ``modules`` without a docstring, by its full name."""
    missing, seen = [], set()
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not is_ours(obj):
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            where = f"{obj.__module__}.{obj.__qualname__}"
            if not has_docstring(vars(obj).get("__doc__") if inspect.isclass(obj)
                                 else obj.__doc__):
                missing.append(where)
            if not inspect.isclass(obj):
                continue
            for member_name, member, klass in public_members(obj):
                if id(member) in seen:
                    continue
                seen.add(id(member))
                if not has_docstring(member.__doc__) and not inherits_docstring(
                        obj, klass, member_name):
                    missing.append(f"{klass.__module__}.{klass.__qualname__}.{member_name}")
    return missing


# ------------------------------------------------------------- docstrings

def test_the_walk_reaches_every_namespace_and_the_tensor_methods():
    found = namespaces()
    assert set(found) == set(PAGES), set(found) ^ set(PAGES)
    members = {(klass.__name__, name) for name, _, klass in public_members(tinynet.Tensor)}
    for expected in (("MathMethods", "sum"), ("Tensor", "shape"), ("MathMethods", "sin"),
                     ("IndexingMethods", "cumsum"), ("InPlaceMethods", "add_")):
        assert expected in members, expected
    linear = {name for name, _, _ in public_members(tinynet.nn.Linear)}
    assert {"forward", "parameters", "state_dict"} <= linear


def test_the_rule_finds_what_has_no_docstring():
    """The checker itself: undocumented functions, classes, methods, properties and a
    forward are reported; an override of a documented method and a dunder are not."""
    module = types.ModuleType("tinynet.fake")

    def bare(x):
        return x

    def short(x):
        """Returns x."""
        return x

    class Base:
        """A documented base class."""

        def step(self):
            """Take one step, documented here."""

    class Bare(Base):
        def step(self):          # inherits Base.step's docstring
            pass

        def forward(self, x):    # but forward must say its own shapes
            return x

        def helper(self):
            pass

        @property
        def size(self):
            return 1

        def __len__(self):       # a dunder: PyTorch's protocol
            return 0

    for name, value in {"bare": bare, "short": short, "Base": Base, "Bare": Bare}.items():
        value.__module__ = module.__name__
        setattr(module, name, value)
    module.__all__ = ["bare", "short", "Base", "Bare"]
    missing = undocumented([module])
    prefix = "tinynet.fake.test_the_rule_finds_what_has_no_docstring.<locals>."
    assert sorted(name.removeprefix(prefix) for name in missing) == sorted(
        ["bare", "short", "Bare", "Bare.forward", "Bare.helper", "Bare.size"]), missing


def test_every_public_callable_has_a_docstring():
    missing = undocumented(namespaces().values())
    assert not missing, (f"{len(missing)} public callables have no docstring (of "
                         f"{MIN_WORDS} words at least):\n  " + "\n  ".join(missing))


def op_methods():
    """The public Tensor methods that share a name with an op of tinynet.ops."""
    return [(name, member) for name, member, _ in public_members(tinynet.Tensor)
            if name in tinynet.ops.__all__ and inspect.isfunction(member)]


def test_tensor_methods_take_their_ops_docstrings_by_reference():
    """``Tensor.sum`` shows ``tinynet.ops.sum``'s docstring, the same string, not a copy
    that could drift (a method may have its own, different, docstring instead)."""
    methods = dict(op_methods())
    assert {"sum", "reshape", "sin", "cumsum", "clip"} <= set(methods)
    for name, method in methods.items():
        op = getattr(tinynet.ops, name)
        if method.__doc__ == op.__doc__:
            assert method.__doc__ is op.__doc__, f"Tensor.{name} pastes a copy of its op's"
    assert tinynet.Tensor.sum.__doc__ is tinynet.ops.sum.__doc__
    assert tinynet.Tensor.sin.__doc__ is tinynet.ops.sin.__doc__
    assert "dim" in inspect.getdoc(tinynet.Tensor.sum)


# ----------------------------------------------------------- the reference

def directives() -> dict[str, list[str]]:
    """The ``::: path`` of each API page, in order."""
    return {page.name: DIRECTIVE.findall(api_entries.expand(page.read_text(encoding="utf-8")))
            for page in sorted(API.glob("*.md"))}


def resolve(path: str):
    """The object that ``path`` (a module, or a name in one, or a class's member) names."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            obj = inspect.getattr_static(obj, part)
        return obj
    raise ImportError(path)


def shown(page_names) -> tuple[set[str], list]:
    """The paths the pages name, and the functions and classes they show (a module's
    directive shows its __all__)."""
    paths, objects = set(), []
    for page in page_names:
        for path in directives()[page]:
            paths.add(path)
            obj = resolve(path)
            if isinstance(obj, types.ModuleType) and hasattr(obj, "__all__"):
                paths.update(f"{path}.{name}" for name in obj.__all__)
                objects.extend(getattr(obj, name) for name in obj.__all__)
            else:
                objects.append(obj)
    return paths, [obj for obj in objects if inspect.isfunction(obj) or inspect.isclass(obj)]


@pytest.mark.parametrize("namespace", sorted(PAGES))
def test_every_public_name_is_on_its_api_page(namespace):
    module = importlib.import_module(namespace)
    paths, objects = shown(PAGES[namespace])
    missing = []
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            assert value.__name__ in PAGES, f"{namespace}.{name} has no API page"
        elif f"{namespace}.{name}" not in paths and not any(value is obj for obj in objects):
            missing.append(name)
    assert not missing, f"docs/api/{', '.join(PAGES[namespace])} do not show {missing}"


def test_every_tensor_method_is_on_the_tensor_page():
    paths, _ = shown(["tensor.md"])
    members = {name for name, _, _ in public_members(tinynet.Tensor)}
    missing = sorted(name for name in members if f"tinynet.Tensor.{name}" not in paths)
    assert not missing, f"docs/api/tensor.md does not show Tensor.{missing}"


def test_api_pages_show_only_public_names():
    """Each ``::: path`` is a public name (of a namespace's __all__, a public Tensor
    method, or ALSO_SHOWN), or names a public function or class where it is defined
    (``tinynet.creation.tensor``: ``tinynet.tensor`` is also a module); a module's
    directive is for a module with an __all__ and no submodules (a package's would
    show its submodules' helpers)."""
    public = set(ALSO_SHOWN)
    for namespace, module in namespaces().items():
        public.add(namespace)
        public.update(f"{namespace}.{name}" for name in module.__all__)
    public.update(f"tinynet.Tensor.{name}" for name, _, _ in public_members(tinynet.Tensor))
    public.update({"tinynet.Tensor.data", "tinynet.Tensor.grad"})      # its two slots
    objects = [obj for module in namespaces().values() for obj in map(
        module.__dict__.get, module.__all__) if inspect.isfunction(obj) or inspect.isclass(obj)]
    wrong = []
    for page, paths in directives().items():
        for path in paths:
            obj = resolve(path)
            if path not in public and not any(obj is each for each in objects):
                wrong.append(f"{page}: {path}")
            elif isinstance(obj, types.ModuleType) and path != "tinynet.kernels" and (
                    not hasattr(obj, "__all__") or hasattr(obj, "__path__")):
                wrong.append(f"{page}: {path} (a package's, or a module's without __all__, "
                             "directive shows helpers)")
    assert not wrong, "the API reference shows names that are not public:\n  " + \
        "\n  ".join(wrong)
    for helper in ("EmbeddingFunction", "index_array", "fan_in_bound", "extra_repr"):
        assert not any(path.endswith(f".{helper}") for paths in directives().values()
                       for path in paths), helper


def test_each_module_of_ops_has_its_line_on_the_ops_page():
    """Each module of tinynet/ops/ whose ops :mod:`tinynet.ops` exports is named on one
    ``<!-- ops: ... -->`` line of ops.md, so that a new op of it has its entry; the
    ``methods`` lines of tensor.md name modules too; no page shows a name twice."""
    exporting = {info.name for info in pkgutil.iter_modules(tinynet.ops.__path__)
                 if set(getattr(importlib.import_module(f"tinynet.ops.{info.name}"),
                                "__all__", ())) & set(tinynet.ops.__all__)}
    named = {"ops": [], "methods": []}
    for page in sorted(API.glob("*.md")):
        for line in api_entries.LINE.finditer(page.read_text(encoding="utf-8")):
            named[line["kind"]] += line["modules"].split()
    assert sorted(named["ops"]) == sorted(exporting), (sorted(named["ops"]), sorted(exporting))
    assert set(named["methods"]) <= exporting and len(set(named["methods"])) == len(
        named["methods"]), named["methods"]
    for page, paths in directives().items():
        twice = sorted({path for path in paths if paths.count(path) > 1})
        assert not twice, f"docs/api/{page} shows these twice: {twice}"
