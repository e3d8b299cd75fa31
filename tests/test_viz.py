"""tinynet.viz: the DOT text of known graphs, read back with a minimal parser."""
import re
import shutil
import sys

import numpy as np
import pytest

import tinynet as tn
from tinynet import viz
from tinynet.nn import functional as F

from composite import composite_layer_norm

_NODE = re.compile(r'^\s*(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\]$')
_EDGE = re.compile(r'^\s*(\w+) -> (\w+)(?: \[label="((?:[^"\\]|\\.)*)"\])?$')


def _unescape(text):
    """A DOT string's contents as the lines it displays."""
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def parse(dot):
    """{id: (label lines, attributes)} and [(tail, head, edge label)] of our DOT text."""
    nodes, edges = {}, []
    for line in dot.splitlines():
        if match := _EDGE.match(line):
            tail, head, label = match.groups()
            edges.append((tail, head, None if label is None else _unescape(label)))
        elif (match := _NODE.match(line)) and match.group(1) not in ("graph", "node", "edge"):
            node_id, label, attributes = match.groups()
            nodes[node_id] = (_unescape(label).split("\n"), attributes)
    return nodes, edges


def by_label(nodes, *lines):
    """The one node id whose label is exactly ``lines``."""
    found = [node_id for node_id, (label, _) in nodes.items() if label == list(lines)]
    assert len(found) == 1, f"{lines} labels {len(found)} nodes in {nodes}"
    return found[0]


def ops(nodes):
    return {node_id: label for node_id, (label, _) in nodes.items() if node_id.startswith("op")}


def test_product_sum_is_two_leaves_a_mul_and_a_sum():
    x = tn.randn(3, 4)
    w = tn.randn(3, 4, requires_grad=True)
    nodes, edges = parse(viz.to_dot((x * w).sum(), {"x": x, "w": w}))
    assert len(nodes) == 4
    mul, total = by_label(nodes, "Mul", "(3, 4)"), by_label(nodes, "Sum", "()")
    leaf_x, leaf_w = by_label(nodes, "x", "(3, 4)"), by_label(nodes, "w", "(3, 4)")
    assert sorted(edges) == sorted([(leaf_x, mul, None), (leaf_w, mul, None),
                                    (mul, total, None)])
    assert "fillcolor=lightblue" in nodes[leaf_w][1]        # requires grad
    assert "fillcolor" not in nodes[leaf_x][1]


def test_linear_layer_norm_model_names_its_parameters():
    model = tn.nn.Sequential(tn.nn.Linear(4, 3), tn.nn.LayerNorm(3), tn.nn.ReLU(),
                             tn.nn.Linear(3, 2))
    params = dict(model.named_parameters())
    nodes, edges = parse(viz.to_dot(model(tn.randn(5, 4)).sum(), params))
    assert sorted(label[0] for label in ops(nodes).values()) == sorted(
        ["Linear", "LayerNormFunction", "Relu", "Linear", "Sum"])
    first, norm = by_label(nodes, "Linear", "(5, 3)"), by_label(nodes, "LayerNormFunction",
                                                                 "(5, 3)")
    last = by_label(nodes, "Linear", "(5, 2)")
    consumer = {"0.weight": first, "0.bias": first, "1.weight": norm, "1.bias": norm,
                "3.weight": last, "3.bias": last}
    for name, p in params.items():
        leaf = by_label(nodes, name, str(tuple(p.shape)))
        assert [head for tail, head, _ in edges if tail == leaf] == [consumer[name]]
    assert (by_label(nodes, "tensor", "(5, 4)"), first, None) in edges
    # LayerNorm's size and eps are the numbers handed to it.
    constants = sorted(nodes[tail][0][0] for tail, head, _ in edges
                       if head == norm and tail.startswith("const"))
    assert constants == ["1e-05", "3"]


def test_a_tensor_used_twice_is_one_node_with_two_edges():
    x = tn.randn(2, 2, requires_grad=True)
    h = x.exp()
    nodes, edges = parse(viz.to_dot((x.tanh() + h * h).sum()))
    leaf = by_label(nodes, "tensor", "(2, 2)")
    exp, tanh = by_label(nodes, "Exp", "(2, 2)"), by_label(nodes, "Tanh", "(2, 2)")
    mul = by_label(nodes, "Mul", "(2, 2)")
    assert sorted(head for tail, head, _ in edges if tail == leaf) == sorted([exp, tanh])
    assert [head for tail, head, _ in edges if tail == exp] == [mul, mul]


def test_split_is_one_node_with_an_edge_per_consumer():
    x = tn.randn(4, 3, requires_grad=True)
    a, b = x.split(2, dim=1)
    nodes, edges = parse(viz.to_dot((a * 2).sum() + b.exp().sum()))
    split = by_label(nodes, "Split", "[0] (4, 2)", "[1] (4, 1)")
    mul, exp = by_label(nodes, "Mul", "(4, 2)"), by_label(nodes, "Exp", "(4, 1)")
    assert sorted((head, label) for tail, head, label in edges if tail == split) == sorted(
        [(mul, "[0]"), (exp, "[1]")])


def test_split_lists_the_outputs_it_knows():
    a, b = tn.randn(4, 3, requires_grad=True).split(2, dim=1)
    nodes, _ = parse(viz.to_dot(a.sum()))
    by_label(nodes, "Split", "[0] (4, 2)")
    nodes, _ = parse(viz.to_dot(b))                         # the root is an output of split
    assert "palegreen" in nodes[by_label(nodes, "Split", "[1] (4, 1)")][1]


def test_numbers_and_arrays_are_constants_settings_are_not():
    x = tn.randn(3, requires_grad=True)
    nodes, edges = parse(viz.to_dot(((x * 2.5 + 3) ** 2).sum(dim=0)))
    heads = {nodes[tail][0][0]: nodes[head][0][0] for tail, head, _ in edges
             if tail.startswith("const")}
    assert heads == {"2.5": "Mul", "3": "Add", "2": "Pow"}      # Sum's axes are not drawn
    assert all("plaintext" in nodes[c][1] for c in nodes if c.startswith("const"))

    running = tn.nn.BatchNorm1d(3).eval()
    nodes, edges = parse(viz.to_dot(running(tn.randn(2, 3, requires_grad=True))))
    constants = sorted(nodes[tail][0][0] for tail, _, _ in edges if tail.startswith("const"))
    assert constants == ["1e-05", "array (3,)", "array (3,)"]   # the running statistics


def test_a_freed_graph_says_so_and_stops_where_its_inputs_are_gone():
    x = tn.randn(3, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward()
    dot = viz.to_dot(y)
    nodes, edges = parse(dot)
    assert nodes[by_label(nodes, "Sum", "()", viz.FREED_NOTE)]
    assert len(nodes) == 1 and edges == []
    assert viz.FREED_CAPTION in dot

    h = x.exp()
    h.sum().backward()                  # frees Exp; the graph built on h afterwards is whole
    nodes, edges = parse(viz.to_dot((h * 3).sum()))
    exp = by_label(nodes, "Exp", "(3,)", viz.FREED_NOTE)
    assert (exp, by_label(nodes, "Mul", "(3,)"), None) in edges
    assert not [n for n in nodes if n.startswith("leaf")]    # x is beyond the freed node


def test_retain_graph_keeps_the_whole_picture():
    x = tn.randn(3, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    dot = viz.to_dot(y)
    assert viz.FREED_NOTE not in dot and viz.FREED_CAPTION not in dot
    by_label(parse(dot)[0], "tensor", "(3,)")


def test_a_tensor_without_a_graph_is_one_node():
    w = tn.randn(2, 3, requires_grad=True)
    with tn.no_grad():
        y = (w * 2).sum()
    for tensor, label in ((w, ["w", "(2, 3)"]), (y, ["tensor", "()"])):
        nodes, edges = parse(viz.to_dot(tensor, {"w": w}))
        assert [label for label, _ in nodes.values()] == [label] and edges == []


def test_labels_escape_quotes_backslashes_and_line_breaks():
    w = tn.randn(2, requires_grad=True)
    name = 'say "hi"\\n\nbye'
    dot = viz.to_dot((w * w).sum(), {name: w})
    assert r'say \"hi\"\\n\nbye' in dot
    nodes, _ = parse(dot)
    by_label(nodes, 'say "hi"\\n', "bye", "(2,)")


def test_fused_layer_norm_is_one_op_where_the_composite_takes_eight():
    x = tn.randn(4, 6, requires_grad=True)
    weight, bias = tn.ones(6, requires_grad=True), tn.zeros(6, requires_grad=True)
    fused, _ = parse(viz.to_dot(F.layer_norm(x, (6,), weight, bias)))
    composite, _ = parse(viz.to_dot(composite_layer_norm(x, weight, bias)))
    assert [label[0] for label in ops(fused).values()] == ["LayerNormFunction"]
    # mean, var, x - mean, var + eps, sqrt, divide, times weight, plus bias
    assert sorted(label[0] for label in ops(composite).values()) == sorted(
        ["Mean", "Var", "Sub", "Add", "Sqrt", "Div", "Mul", "Add"])
    for nodes in (fused, composite):
        assert len([n for n in nodes if n.startswith("leaf")]) == 3


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="expected a Tensor, got ndarray"):
        viz.to_dot(np.ones(3))
    with pytest.raises(TypeError, match=r"params\['w'\] is a list"):
        viz.to_dot(tn.ones(3), {"w": [1.0]})


def test_draw_without_the_python_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)      # makes `import graphviz` fail
    with pytest.raises(ImportError, match="pip install graphviz"):
        viz.draw(tn.ones(3))


def test_draw_without_dot_names_the_system_package(monkeypatch):
    pytest.importorskip("graphviz")
    monkeypatch.setattr(shutil, "which", lambda program: None)
    with pytest.raises(RuntimeError, match="apt install graphviz"):
        viz.draw(tn.ones(3))


def test_draw_rejects_an_unknown_format():
    pytest.importorskip("graphviz")
    with pytest.raises(ValueError, match="unknown format 'svgg'"):
        viz.draw(tn.ones(3), format="svgg")


@pytest.fixture
def dot_program():
    pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("the Graphviz program `dot` is not installed")


def test_draw_renders_every_node(dot_program, tmp_path):
    model = tn.nn.Sequential(tn.nn.Linear(4, 3), tn.nn.LayerNorm(3))
    params = {**dict(model.named_parameters()), 'odd "name"\\': model[0].weight}
    y = model(tn.randn(5, 4)).sum()
    nodes, _ = parse(viz.to_dot(y, params))
    svg = viz.draw(y, params)
    assert "<svg" in svg
    assert svg.count('<g id="node') == len(nodes)

    path = tmp_path / "graph.svg"
    assert viz.draw(y, params, path=path) == path
    assert path.read_text(encoding="utf-8").count('<g id="node') == len(nodes)
    assert viz.draw(y, format="png").startswith(b"\x89PNG")
