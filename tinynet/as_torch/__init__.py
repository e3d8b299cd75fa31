"""Your PyTorch program, on tinynet: ``import torch`` resolves to tinynet.

::

    python -m tinynet.as_torch train.py --its --own --arguments

runs an unmodified PyTorch (CPU) program with ``torch`` and its submodules
(``torch.nn``, ``torch.nn.functional``, ``torch.optim``, ``torch.utils.data``...)
being tinynet's modules. In a notebook, ``tinynet.as_torch.install()`` does the
same before ``import torch``. Then every layer, loss and optimizer the program
uses is tinynet's Python: a breakpoint in ``LayerNormFunction.backward``
(tinynet/ops/normalization.py) or in the attention node stops inside the
program's own ``loss.backward()``, where PyTorch would run C++.

What tinynet has is listed in :data:`MODULES`. What it lacks fails by name
when the program uses it, never with a wrong result: ``torch.fft.rfft(x)``
raises AttributeError "tinynet has no torch.fft.rfft" (the import of a module
tinynet lacks succeeds: programs import modules they use only on some paths,
``torch.onnx`` for an export), and ``torch.nn.Bilinear`` "tinynet has no
torch.nn.Bilinear". Device queries answer for this
machine (:mod:`tinynet.devices`). ``torchvision``'s MNIST and its transforms,
and ``torch.utils.tensorboard``'s SummaryWriter, are small stand-ins
(:mod:`~tinynet.as_torch.torchvision`, :mod:`~tinynet.as_torch.tensorboard`).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from ..lacking import lacking

__all__ = ["MODULES", "install", "uninstall", "installed"]

# Each module a PyTorch program may import, and the module that stands for it.
MODULES = {
    "torch": "tinynet",
    "torch.nn": "tinynet.nn",
    "torch.nn.functional": "tinynet.nn.functional",
    "torch.nn.init": "tinynet.nn.init",
    "torch.nn.utils": "tinynet.nn.utils",
    "torch.nn.parallel": "tinynet.nn.parallel",
    "torch.nn.modules": "tinynet.nn.modules",
    "torch.nn.modules.activation": "tinynet.nn.modules",
    "torch.nn.modules.batchnorm": "tinynet.nn.modules",
    "torch.nn.modules.container": "tinynet.nn.modules",
    "torch.nn.modules.conv": "tinynet.nn.modules",
    "torch.nn.modules.dropout": "tinynet.nn.modules",
    "torch.nn.modules.flatten": "tinynet.nn.modules",
    "torch.nn.modules.instancenorm": "tinynet.nn.modules",
    "torch.nn.modules.linear": "tinynet.nn.modules",
    "torch.nn.modules.loss": "tinynet.nn.modules",
    "torch.nn.modules.module": "tinynet.nn.modules",
    "torch.nn.modules.normalization": "tinynet.nn.modules",
    "torch.nn.modules.pooling": "tinynet.nn.modules",
    "torch.nn.modules.rnn": "tinynet.nn.modules",
    "torch.nn.modules.sparse": "tinynet.nn.modules",
    "torch.nn.modules.transformer": "tinynet.nn.modules",
    "torch.optim": "tinynet.optim",
    "torch.optim.lr_scheduler": "tinynet.optim.lr_scheduler",
    "torch.autograd": "tinynet.autograd",
    "torch.utils": "tinynet.utils",
    "torch.utils.data": "tinynet.data",
    "torch.utils.data.dataset": "tinynet.data.dataset",
    "torch.utils.data.dataloader": "tinynet.data.loader",
    "torch.utils.data.sampler": "tinynet.data.sampler",
    "torch.utils.data.distributed": "tinynet.data.sampler",
    "torch.utils.tensorboard": "tinynet.as_torch.tensorboard",
    "torch.distributed": "tinynet.distributed",
    "torch.cuda": "tinynet.cuda",
    "torch.backends": "tinynet.backends",
    "torch.backends.cudnn": "tinynet.backends",
    "torch.backends.mps": "tinynet.backends",
    "torch.accelerator": "tinynet.accelerator",
    "torch.testing": "tinynet.testing",
    "torch.serialization": "tinynet.serialization",
    "torchvision": "tinynet.as_torch.torchvision",
    "torchvision.datasets": "tinynet.as_torch.torchvision",
    "torchvision.transforms": "tinynet.as_torch.torchvision",
    "torchvision.utils": "tinynet.as_torch.torchvision",
}
# Where a module stands in for an attribute of the one named (torch.backends.cudnn is
# tinynet.backends.cudnn, a namespace of that module).
_ATTRIBUTES = {"torch.backends.cudnn": "cudnn", "torch.backends.mps": "mps",
               **{f"torch.nn.modules.{name}": name for name in (
                   "activation", "batchnorm", "container", "conv", "dropout", "flatten",
                   "instancenorm", "linear", "loss", "module", "normalization", "pooling",
                   "rnn", "sparse", "transformer")},
               "torchvision.datasets": "datasets", "torchvision.transforms": "transforms",
               "torchvision.utils": "utils"}
_ROOTS = ("torch", "torchvision")


class _Lacking(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Every torch module that :data:`MODULES` does not list is a stand-in whose
    names fail by name when used, ``tinynet has no torch.onnx.export``: a program
    may import a module it does not use (an installed PyTorch must not answer for
    the rest of it)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] not in _ROOTS:
            return None
        if fullname.rpartition(".")[2][:1].isupper():   # a class (from torch.x import Y)
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = types.ModuleType(spec.name, f"tinynet has no {spec.name}")
        # `from torch.fft import rfft` reports the module's file: say what is missing
        module.__file__ = f"tinynet has no {spec.name}"
        module.__getattr__ = lacking(spec.name)
        return module

    def exec_module(self, module):
        pass


_finder = _Lacking()


def install() -> None:
    """Make ``import torch`` (and ``torchvision``) give tinynet's modules, in this
    interpreter, from now on. Call it before the program imports torch."""
    for name in [n for n in sys.modules if n.partition(".")[0] in _ROOTS]:
        if not installed() and sys.modules[name] is not None:
            raise RuntimeError(f"{name} was imported before tinynet.as_torch.install(); "
                               "install first (a notebook: restart its kernel)")
    for name, target in MODULES.items():
        module = importlib.import_module(target)
        sys.modules[name] = getattr(module, _ATTRIBUTES[name]) if name in _ATTRIBUTES else module
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Undo :func:`install`: torch's names leave ``sys.modules``."""
    for name in [n for n in sys.modules if n.partition(".")[0] in _ROOTS]:
        del sys.modules[name]
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def installed() -> bool:
    """Whether ``import torch`` gives tinynet now."""
    return _finder in sys.meta_path
