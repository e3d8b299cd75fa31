"""The autograd graph as a picture: Graphviz DOT text, and its rendering.

:func:`to_dot` writes the graph behind a tensor in the DOT language, with no
dependency at all; :func:`draw` renders it with the ``graphviz`` Python package
and the ``dot`` program. The look follows torchviz and micrograd's trace_graph:

* an **op** (one Function call) is a grey box with the op's name and its output
  shape; the op that made the tensor being drawn is green. An op with several
  outputs (``split``, ``unbind``) is one box listing each output that is used;
  its edges are labelled with the output's position;
* a **leaf** (a tensor no op made) is an ellipse with the parameter's name from
  ``params``, or ``tensor``, and its shape; blue when it requires grad;
* a **constant** (a number or a raw array handed to an op: the ``2`` of ``x * 2``,
  LayerNorm's ``eps`` and size, an axis given as one int) is plain text, one per
  use. Settings that are not numbers (``None`` for an absent input, flags, tuples
  of axes or sizes, dtypes) are not drawn: they would put a row of labels beside
  every reduction and reshape;
* edges point from the inputs to the op that consumed them; a tensor used twice
  is one node with two edges.

``backward()`` without ``retain_graph=True`` frees the nodes it runs: a freed
node forgets its inputs, so the picture stops there; such a node says
``freed by backward()`` and the graph's caption says that part of it is gone.

Example::

    y = model(x).sum()
    print(tinynet.viz.to_dot(y, dict(model.named_parameters())))
    tinynet.viz.draw(y, dict(model.named_parameters()), path="graph.svg")
"""
from __future__ import annotations

import numbers
import shutil

from .autograd import topological_order
from .serialization import atomic_write
from .tensor import Tensor

__all__ = ["to_dot", "draw"]

FREED_NOTE = "freed by backward()"
FREED_CAPTION = ("part of this graph was freed by backward(); "
                 "call backward(retain_graph=True) to keep it")

_OP_STYLE = "shape=box, style=filled, fillcolor=lightgray"
_ROOT_STYLE = "shape=box, style=filled, fillcolor=palegreen"
_FREED_STYLE = "shape=box, style=\"filled,dashed\", fillcolor=white"
_LEAF_STYLE = "shape=ellipse"
_GRAD_LEAF_STYLE = "shape=ellipse, style=filled, fillcolor=lightblue"
_CONSTANT_STYLE = "shape=plaintext, fontsize=9"

# The formats draw() returns as str; every other one (png, pdf...) comes back as bytes.
_TEXT_FORMATS = frozenset({"svg", "svg_inline", "dot", "gv", "canon", "xdot", "plain",
                           "plain-ext", "json", "json0", "dot_json", "xdot_json"})


def to_dot(tensor, params=None) -> str:
    """The Graphviz DOT text of the autograd graph that produced ``tensor``.

    ``params`` names the leaves: a mapping (or iterable of pairs) from name to
    tensor, such as ``dict(model.named_parameters())``; a leaf is matched by
    identity. A tensor with no graph (a leaf, or a result computed under
    ``no_grad``) is a graph of one node.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dot: expected a Tensor, got {type(tensor).__name__}")
    drawing = _Drawing(_parameter_names(params))
    if tensor._node is None:
        drawing.leaf(tensor)
    else:
        drawing.graph(tensor)
    return drawing.text()


def draw(tensor, params=None, path=None, format: str = "svg"):
    """Render :func:`to_dot`'s graph with Graphviz.

    Returns the rendering (``str`` for text formats such as SVG, ``bytes`` for
    the others), or writes it to ``path`` and returns ``path``. Needs the
    ``graphviz`` Python package and the ``dot`` program of the system package
    of the same name.
    """
    graphviz = _import_graphviz()
    if format not in graphviz.FORMATS:
        raise ValueError(f"draw: unknown format {format!r}; Graphviz renders "
                         f"{', '.join(sorted(graphviz.FORMATS))}")
    if shutil.which("dot") is None:
        raise RuntimeError(_NO_DOT)
    try:
        rendered = graphviz.Source(to_dot(tensor, params)).pipe(format=format)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(_NO_DOT) from None
    if path is None:
        return rendered.decode("utf-8") if format in _TEXT_FORMATS else rendered
    with atomic_write(path, "wb") as f:
        f.write(rendered)
    return path


_NO_DOT = ("draw: the Graphviz program `dot` was not found on PATH. Install the system "
           "package graphviz (Debian/Ubuntu: `apt install graphviz`, macOS: "
           "`brew install graphviz`); to_dot() needs neither")


def _import_graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError("draw: rendering needs the graphviz Python package: "
                          "`pip install graphviz` (or tinynet's extra: `pip install "
                          "'tinynet[viz]'`); to_dot() works without it") from None
    return graphviz


def _parameter_names(params) -> dict:
    """id(tensor) -> name, from a mapping or an iterable of (name, tensor) pairs."""
    if params is None:
        return {}
    names = {}
    for name, value in dict(params).items():
        if not isinstance(value, Tensor):
            raise TypeError(f"to_dot: params[{name!r}] is a {type(value).__name__}, "
                            "not a Tensor")
        names[id(value)] = str(name)
    return names


class _Drawing:
    """The node and edge statements of one picture, gathered in a fixed order
    (ops from the root back, then leaves and constants as first met), so that
    the same graph always gives the same text and the same ids."""

    def __init__(self, names: dict):
        self.names = names
        self.nodes = []         # DOT statements declaring nodes
        self.edges = []         # DOT statements "a -> b"
        self.leaf_ids = {}      # id(leaf tensor) -> its DOT id
        self.constant_count = 0
        self.root_shape = None
        self.freed = False

    def leaf(self, tensor) -> str:
        """The DOT id of a leaf tensor, declaring it the first time it is met."""
        leaf_id = self.leaf_ids.get(id(tensor))
        if leaf_id is None:
            leaf_id = self.leaf_ids[id(tensor)] = f"leaf{len(self.leaf_ids)}"
            name = self.names.get(id(tensor), "tensor")
            style = _GRAD_LEAF_STYLE if tensor.requires_grad else _LEAF_STYLE
            self.nodes.append(f"{leaf_id} [label={_label(name, _shape(tensor))}, {style}]")
        return leaf_id

    def constant(self, value) -> str:
        constant_id = f"const{self.constant_count}"
        self.constant_count += 1
        self.nodes.append(f"{constant_id} [label={_label(_constant_text(value))}, "
                          f"{_CONSTANT_STYLE}]")
        return constant_id

    def graph(self, tensor):
        """Declare every node reachable from ``tensor``'s op, and their edges."""
        order = topological_order(tensor._node)
        op_ids = {node: f"op{i}" for i, node in enumerate(order)}
        # A Context does not keep its outputs: their shapes are read where they are used.
        output_shapes = {node: {} for node in order}
        output_shapes[tensor._node][tensor._output] = _shape(tensor)
        for node in order:
            if node.freed:
                continue
            for x in node.inputs:
                if isinstance(x, Tensor) and x._node is not None:
                    output_shapes[x._node][x._output] = _shape(x)
                    attributes = (f" [label={_label(f'[{x._output}]')}]"
                                  if x._node.num_outputs > 1 else "")
                    self.edges.append(f"{op_ids[x._node]} -> {op_ids[node]}{attributes}")
                elif isinstance(x, Tensor):
                    self.edges.append(f"{self.leaf(x)} -> {op_ids[node]}")
                elif _is_drawn_constant(x):
                    self.edges.append(f"{self.constant(x)} -> {op_ids[node]}")
        op_nodes = [self._op(node, op_ids[node], output_shapes[node], node is tensor._node)
                    for node in order]
        self.nodes[:0] = op_nodes

    def _op(self, node, op_id: str, shapes: dict, is_root: bool) -> str:
        if node.num_outputs == 1:
            lines = [node.fn.__name__, *shapes.values()]
        else:
            lines = [node.fn.__name__, *(f"[{i}] {shapes[i]}" for i in sorted(shapes))]
        if node.freed:
            self.freed = True
            lines.append(FREED_NOTE)
            style = _FREED_STYLE
        else:
            style = _ROOT_STYLE if is_root else _OP_STYLE
        return f"{op_id} [label={_label(*lines)}, {style}]"

    def text(self) -> str:
        header = ["digraph tinynet {"]
        if self.freed:
            header += [f"    // {FREED_CAPTION}",
                       f"    graph [label={_label(FREED_CAPTION)}, labelloc=b, fontsize=10]"]
        header += ["    node [fontname=monospace, fontsize=10, height=0.2]",
                   "    edge [arrowsize=0.6, fontsize=8]"]
        body = [f"    {statement}" for statement in self.nodes + self.edges]
        return "\n".join(header + body + ["}"]) + "\n"


def _shape(tensor) -> str:
    return repr(tuple(int(n) for n in tensor.shape))


def _is_drawn_constant(value) -> bool:
    """Numbers and raw arrays are drawn; an op's settings (None, flags, axes...) are not."""
    if isinstance(value, bool):      # a flag, though Python counts it as a number
        return False
    return isinstance(value, numbers.Number) or (hasattr(value, "shape")
                                                  and hasattr(value, "dtype"))


def _constant_text(value) -> str:
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{value:g}"
    if isinstance(value, numbers.Number):
        return str(value)
    return f"array {tuple(int(n) for n in value.shape)!r}"


def _label(*lines) -> str:
    """A DOT string literal of several lines: quotes and backslashes escaped,
    the lines joined by DOT's own line break ``\\n``."""
    escaped = []
    for line in lines:
        for part in str(line).split("\n"):
            escaped.append(part.replace("\\", "\\\\").replace('"', '\\"'))
    return '"' + "\\n".join(escaped) + '"'
