"""Differential fuzz of composed graphs: tinynet against PyTorch.

The op tests check one op at a time; bugs also live between ops, where gradients
from several paths meet (fan-out) and broadcasting sums them back into 0-d and
size-1 leaves. Here hypothesis draws random DAGs: leaves of broadcast-compatible
shapes, then ops from the table in graph_cases.py whose inputs are any earlier
nodes, ending in a weighted sum of the nodes nothing else uses. The same graph
runs on tinynet and on torch; the forward and every leaf's gradient must agree
to 1e-9 in float64.
"""
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import tinynet

torch = pytest.importorskip("torch")

from graph_cases import (  # noqa: E402
    BINARY,
    MAKERS,
    MAX_NUMEL,
    REDUCTIONS,
    UNARY,
    WITH_CONSTANT,
    Misfit,
    Nodes,
)
from torch_oracle import as_numpy, assert_same  # noqa: E402

LEAF_SHAPES = [(), (1,), (1, 1), (3,), (1, 3), (2, 1), (4, 1, 1), (4, 1, 3)]
MAX_LEAVES, MAX_STEPS, MAX_ABS = 4, 14, 1e3
FUZZ = settings(max_examples=600, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass
class Graph:
    leaves: list                   # float64 arrays, one per leaf
    steps: list                    # graph_cases.Step, one per node after the leaves
    outputs: list                  # the nodes summed into the loss, each times a weight
    weights: list

    def __repr__(self):
        lines = [f"v{i} = leaf({a.tolist()!r})" for i, a in enumerate(self.leaves)]
        lines += [f"v{len(self.leaves) + i} = {s!r}" for i, s in enumerate(self.steps)]
        lines += [f"loss += (v{i} * {w.tolist()!r}).sum()"
                  for i, w in zip(self.outputs, self.weights, strict=True)]
        return "\n".join(["Graph:"] + lines)

    def _repr_pretty_(self, printer, cycle):     # how hypothesis shows a failing graph
        printer.text(repr(self))


@st.composite
def graphs(draw):
    # The first leaf is 0-d: NumPy turns 0-d results into scalars, a known weak spot.
    shapes = [()] + draw(st.lists(st.sampled_from(LEAF_SHAPES), min_size=1,
                                  max_size=MAX_LEAVES - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    leaves = [np.asarray(rng.uniform(0.3, 2.0, s) if draw(st.booleans())
                         else rng.standard_normal(s), dtype=np.float64) for s in shapes]
    nodes = Nodes(torch.tensor(x) for x in leaves)
    steps = []
    for _ in range(draw(st.integers(2, MAX_STEPS))):
        try:
            step = draw(st.sampled_from(MAKERS))(draw, nodes)
        except Misfit:
            continue
        value = step.run(torch, nodes)
        if value.numel() <= MAX_NUMEL and bool((value.abs() < MAX_ABS).all()):
            nodes.append(value)
            nodes.used.update(step.inputs)
            steps.append(step)
    sinks = [i for i in range(len(leaves), len(nodes)) if i not in nodes.used]
    outputs = sinks or [len(nodes) - 1]
    weights = [rng.standard_normal(tuple(nodes[i].shape)) for i in outputs]
    return Graph(leaves, steps, outputs, weights)


def evaluate(graph, lib):
    """Build the graph with ``lib``; return the loss, the output nodes and the leaf grads."""
    leaves = [lib.tensor(x, requires_grad=True) for x in graph.leaves]
    nodes = list(leaves)
    for step in graph.steps:
        nodes.append(step.run(lib, nodes))
    outputs = [nodes[i] for i in graph.outputs]
    loss = sum((o * lib.tensor(w)).sum() for o, w in zip(outputs, graph.weights, strict=True))
    loss.backward()
    return loss, outputs, [leaf.grad for leaf in leaves]


def assert_graph_matches_torch(graph):
    ours, ref = evaluate(graph, tinynet), evaluate(graph, torch)
    assert_same(ours[0], ref[0], "loss")
    for i, o, r in zip(graph.outputs, ours[1], ref[1], strict=True):
        assert_same(o, r, f"v{i}")
    for i, (g, r) in enumerate(zip(ours[2], ref[2], strict=True)):
        assert_same(g, r, f"grad of leaf v{i}")


@FUZZ
@given(graphs())
def test_random_graph_matches_torch(graph):
    assert_graph_matches_torch(graph)


def test_every_op_of_the_table_is_drawn():
    """No guard or shape rule may silently keep an op out of the fuzz."""
    search = settings(FUZZ, max_examples=2000, derandomize=True, database=None,
                      phases=[Phase.generate])
    table = {*BINARY, *WITH_CONSTANT, *UNARY, *REDUCTIONS, "clamp", "where", "matmul",
             "softmax", "log_softmax", "getitem", "reshape", "transpose", "permute",
             "unsqueeze", "squeeze", "expand", "cat", "stack", "unbind"}
    drawn = set()

    def all_drawn(graph):
        drawn.update(step.name for step in graph.steps)
        return drawn >= table

    try:
        find(graphs(), all_drawn, settings=search)
    except NoSuchExample:
        pytest.fail(f"2000 graphs never had the ops {sorted(table - drawn)}")


def test_zero_d_leaf_with_fan_out():
    """y (0-d) reaches the loss by three paths; d/dy sum((x + y) + y²) = 12 (1 + 2y)."""
    x = np.random.default_rng(0).standard_normal((4, 1, 3))
    grads = []
    for lib in (tinynet, torch):
        xt = lib.tensor(x, requires_grad=True)
        yt = lib.tensor(0.7, dtype=lib.float64, requires_grad=True)
        ((xt + yt) + yt * yt).sum().backward()
        grads.append((as_numpy(xt.grad), as_numpy(yt.grad)))
    (ours_x, ours_y), (ref_x, ref_y) = grads
    assert ours_y.shape == ()
    np.testing.assert_allclose(ours_y, 12 * (1 + 2 * 0.7), rtol=1e-12)
    np.testing.assert_allclose(ours_y, ref_y, rtol=1e-12)
    np.testing.assert_allclose(ours_x, ref_x, rtol=1e-12)


@settings(FUZZ, max_examples=150)
@given(graphs())
def test_the_cores_chain_rule_gives_the_engines_gradients(graph):
    """autograd/core.py's chain_rule alone, without the engine's extras (hooks,
    version checks, in-place sums, early delivery), on the same random graphs."""
    leaves = [tinynet.tensor(x, requires_grad=True) for x in graph.leaves]
    nodes = list(leaves)
    for step in graph.steps:
        nodes.append(step.run(tinynet, nodes))
    loss = sum((nodes[i] * tinynet.tensor(w)).sum()
               for i, w in zip(graph.outputs, graph.weights, strict=True))
    core = tinynet.autograd.chain_rule(loss)
    loss.backward()
    for i, leaf in enumerate(leaves):
        if leaf.grad is None:
            assert leaf not in core, f"leaf v{i}"
        else:
            np.testing.assert_allclose(core[leaf], leaf.grad.numpy(), rtol=1e-12, atol=1e-12,
                                       err_msg=f"grad of leaf v{i}")
