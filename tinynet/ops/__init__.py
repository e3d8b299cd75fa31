"""Every differentiable operation: one Function class per op (see autograd/core.py),
and the plain functions that apply them. Tensor methods dispatch here.

Each module imported below lists its ops in its ``__all__`` (not its helpers: another
module that needs one imports it by name), and this package's ``__all__`` is theirs: an
op added to ``math.py`` and to its ``__all__`` is ``tinynet.ops.X``, ``tinynet.X`` (see
``tinynet/__init__.py``) and an entry of ``docs/api/ops.md``, with no other line to write.
The modules not imported here (``conv.py``, ``pooling.py``, ``normalization.py``,
``loss.py``, ``recurrent.py``...) hold the Functions behind :mod:`tinynet.nn`'s layers,
which import them from there.
"""
from . import (
    activation,
    attention,
    conditional,
    conversion,
    cumulative,
    einsum,
    elementwise,
    embedding,
    extremes,
    indexing,
    joining,
    linalg,
    logical,
    math,
    pad,
    product,
    random,
    rearrange,
    reduction,
    select,
    shape,
    softmax,
    statistics,
    unary,
)

__all__ = [
    *activation.__all__, *attention.__all__, *conditional.__all__, *conversion.__all__,
    *cumulative.__all__, *einsum.__all__, *elementwise.__all__, *embedding.__all__,
    *extremes.__all__, *indexing.__all__, *joining.__all__, *linalg.__all__,
    *logical.__all__, *math.__all__, *pad.__all__, *product.__all__, *random.__all__,
    *rearrange.__all__, *reduction.__all__, *select.__all__, *shape.__all__,
    *softmax.__all__, *statistics.__all__, *unary.__all__,
]

# The ops, by the names above. (After the list: attention, einsum, embedding and pad are
# the modules above, and from here on the functions of those names where there is one.)
from .activation import *
from .attention import *
from .conditional import *
from .conversion import *
from .cumulative import *
from .einsum import *
from .elementwise import *
from .embedding import *
from .extremes import *
from .indexing import *
from .joining import *
from .linalg import *
from .logical import *
from .math import *
from .pad import *
from .product import *
from .random import *
from .rearrange import *
from .reduction import *
from .select import *
from .shape import *
from .softmax import *
from .statistics import *
from .unary import *
