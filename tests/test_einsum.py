"""tinynet.einsum (tinynet/ops/einsum.py) against torch.einsum.

The output and every operand's gradient to 1e-10 in float64 over a grid of
equations: matrix, batched and broadcast products, outer and inner products,
traces and diagonals (a letter repeated in one operand), transposes, sums (a
letter only one operand has), ellipsis broadcasting (and an ellipsis summed
away), size-1 axes broadcasting against a letter, three operands, bilinear
forms, implicit outputs (upper case first), 0-d and empty operands; torch's
list and sublist forms; finite differences; one graph node; and the
ValueErrors for bad equations.
"""
import numpy as np
import pytest

import tinynet
from tinynet.ops.einsum import EinsumFunction
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")

TOL64 = dict(rtol=1e-10, atol=1e-10)


def operands(shapes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def compare(equation, arrays, tol=TOL64, seed=1):
    """tinynet.einsum against torch.einsum on the same arrays: output and gradients."""
    ours = [tinynet.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = tinynet.einsum(equation, *ours)
    yt = torch.einsum(equation, *theirs)
    assert tuple(y.shape) == tuple(yt.shape), (y.shape, tuple(yt.shape))
    assert y.dtype == arrays[0].dtype
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), err_msg="output", **tol)
    dy = np.random.default_rng(seed).standard_normal(tuple(yt.shape)).astype(y.dtype)
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    for i, (a, t) in enumerate(zip(ours, theirs, strict=True)):
        assert a.grad is not None, f"operand {i}"
        assert a.grad.shape == tuple(t.shape) and a.grad.dtype == a.dtype, f"operand {i}"
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(),
                                   err_msg=f"d operand {i}", **tol)
    return y


# (equation, operand shapes)
CASES = [
    # products
    ("ij,jk->ik", [(2, 3), (3, 4)]),                        # matmul
    ("ij,jk", [(2, 3), (3, 4)]),                            # implicit output
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),               # batched matmul
    ("bij,jk->bik", [(3, 2, 4), (4, 2)]),                   # a shared weight
    ("i,j->ij", [(3,), (4,)]),                              # outer
    ("i,i->", [(5,), (5,)]),                                # inner
    ("i,i", [(5,), (5,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),                        # elementwise
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij,kl->jk", [(2, 3), (4, 5)]),                        # i and l each in one operand
    # one operand: trace, diagonal, transpose, sum
    ("ii->", [(4, 4)]),
    ("ii", [(4, 4)]),                                       # implicit trace
    ("ii->i", [(4, 4)]),
    ("iij->ji", [(3, 3, 2)]),
    ("iji->j", [(3, 2, 3)]),
    ("iii->i", [(3, 3, 3)]),
    ("iij->", [(3, 3, 2)]),
    ("ij->ji", [(2, 3)]),
    ("ji", [(2, 3)]),                                       # implicit: sorted, so a transpose
    ("ijk->kij", [(2, 3, 4)]),
    ("ij->ij", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->j", [(2, 3, 4)]),
    ("ij->i", [(2, 3)]),
    # diagonals meeting other operands
    ("ii,ij->j", [(3, 3), (3, 4)]),
    ("ij,jj->ij", [(2, 3), (3, 3)]),
    ("aab,bc->ac", [(2, 2, 3), (3, 4)]),
    ("Ba,aB", [(2, 3), (3, 2)]),                            # trace of a product
    ("bA", [(2, 3)]),                                       # upper case sorts first
    # ellipsis broadcasting
    ("...ij,...jk->...ik", [(3, 1, 2, 4), (5, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...i,...i->...", [(5, 1, 3), (4, 3)]),
    ("...i,...i", [(2, 3), (3,)]),
    ("...ij->ij", [(5, 2, 3)]),                             # ellipsis summed away
    ("...ij->...", [(2, 1, 2, 3)]),
    ("i...->...", [(3, 4, 5)]),
    ("...->", [(2, 3)]),
    ("...", [(2, 3)]),
    ("ij->...ij", [(2, 3)]),                                # an empty ellipsis
    ("b...,b...->b", [(2, 3, 1), (2, 1, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    # size-1 axes broadcasting against the same letter
    ("ij,ij->ij", [(2, 1), (1, 3)]),
    ("i,i", [(1,), (3,)]),
    ("ii,i->i", [(1, 1), (3,)]),
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),
    # three or more operands
    ("i,j,k->ijk", [(2,), (3,), (1,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bi,oij,bj->bo", [(3, 4), (2, 4, 5), (3, 5)]),         # bilinear (F.bilinear)
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,jk,ki", [(2, 3), (3, 4), (4, 2)]),                 # trace of a triple product
    ("ab,bc,cd,de->ae", [(2, 3), (3, 2), (2, 4), (4, 3)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    # 0-d and empty operands
    ("->", [()]),
    (",ij->ij", [(), (2, 3)]),
    ("ij,jk", [(2, 0), (0, 3)]),
    ("ij->", [(0, 3)]),
    # whitespace is ignored
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("equation, shapes", CASES, ids=lambda v: repr(v))
def test_matches_torch(equation, shapes):
    compare(equation, operands(shapes))


def test_float32_matches_torch():
    arrays = operands([(3, 4, 5), (3, 5, 6)], dtype=np.float32)
    compare("bij,bjk->bik", arrays, tol=dict(rtol=2e-5, atol=2e-5))


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("iij->ji", [(3, 3, 2)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]),
    ("bi,oij,bj->bo", [(2, 3), (2, 3, 4), (2, 4)]),
    ("ii,i->i", [(1, 1), (3,)]),
    ("ij,kl->jk", [(2, 3), (4, 2)]),
])
def test_gradcheck(equation, shapes):
    inputs = [tinynet.tensor(a, requires_grad=True) for a in operands(shapes, seed=3)]
    assert gradcheck(lambda *xs: tinynet.einsum(equation, *xs), inputs)


def test_operands_as_one_list_and_the_sublist_form():
    a, b = operands([(2, 3), (3, 4)])
    expected = a @ b
    ta, tb = tinynet.tensor(a), tinynet.tensor(b)
    np.testing.assert_allclose(tinynet.einsum("ij,jk->ik", [ta, tb]).numpy(), expected,
                               **TOL64)
    np.testing.assert_allclose(tinynet.einsum("ij,jk", (ta, tb)).numpy(), expected, **TOL64)
    np.testing.assert_allclose(tinynet.einsum(ta, [0, 1], tb, [1, 2], [0, 2]).numpy(),
                               expected, **TOL64)
    np.testing.assert_allclose(tinynet.einsum(ta, [0, 1], tb, [1, 2]).numpy(), expected,
                               **TOL64)
    # an ellipsis in a sublist, and an implicit output with it first, as torch
    theirs = torch.einsum(torch.tensor(a), [0, Ellipsis])
    ours = tinynet.einsum(ta, [0, Ellipsis])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), **TOL64)


def test_one_graph_node_whose_output_owns_its_memory():
    """A transpose or a diagonal is a view in NumPy's einsum; ours copies it, so
    writing into the output cannot change an operand."""
    for equation, shape in (("ij->ji", (3, 3)), ("ii->i", (3, 3)), ("ij->ij", (2, 3))):
        x = tinynet.tensor(operands([shape])[0], requires_grad=True)
        y = tinynet.einsum(equation, x)
        assert y._node.fn is EinsumFunction and y._node.inputs == (x,)
        assert not np.shares_memory(y.numpy(), x.numpy()), equation
    a, b, c = (tinynet.tensor(v, requires_grad=True)
               for v in operands([(2, 3), (3, 4), (4, 2)]))
    y = tinynet.einsum("ij,jk,kl->il", a, b, c)
    assert y._node.fn is EinsumFunction and len(y._node.inputs) == 3


def test_only_the_operands_that_want_a_gradient_get_one():
    a_np, b_np = operands([(2, 3), (3, 4)])
    a, b = tinynet.tensor(a_np), tinynet.tensor(b_np, requires_grad=True)
    tinynet.einsum("ij,jk->ik", a, b).sum().backward()
    assert a.grad is None
    np.testing.assert_allclose(b.grad.numpy(), a_np.sum(0)[:, None].repeat(4, 1), **TOL64)


def test_inside_a_larger_graph_with_fan_out_matches_torch():
    x_np, w_np = operands([(3, 4), (4, 4)])

    def graph(einsum, x, w):
        h = einsum("bi,ij->bj", x, w)
        gram = einsum("bi,ci->bc", h, h)                 # h used twice in one einsum
        return (gram * gram).sum() + einsum("ii", w) * h.sum()

    ours = [tinynet.tensor(a, requires_grad=True) for a in (x_np, w_np)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x_np, w_np)]
    loss, loss_t = graph(tinynet.einsum, *ours), graph(torch.einsum, *theirs)
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-12)
    loss.backward()
    loss_t.backward()
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **TOL64)


def test_a_wrong_gradient_is_caught(monkeypatch):
    """The comparison is tight enough to catch a gradient off by one part in 10⁸."""
    backward = EinsumFunction.backward

    def off(ctx, grad):
        return tuple(None if g is None else g * (1 + 1e-8) for g in backward(ctx, grad))

    monkeypatch.setattr(EinsumFunction, "backward", staticmethod(off))
    with pytest.raises(AssertionError, match="d operand 0"):
        compare("iij->ji", operands([(3, 3, 2)]))


# ------------------------------------------------------------------------- errors

def t(*shape):
    return tinynet.tensor(np.zeros(shape))


@pytest.mark.parametrize("call, message", [
    # operand counts
    (lambda: tinynet.einsum("ij,jk", t(2, 3)),
     r"einsum: the equation 'ij,jk' has 2 operand\(s\) but 1 were given"),
    (lambda: tinynet.einsum("ij", t(2, 3), t(3, 4)), r"has 1 operand\(s\) but 2 were given"),
    (lambda: tinynet.einsum("ij"), r"einsum: expected at least one operand"),
    # dimensions
    (lambda: tinynet.einsum("ij", t(2, 3, 4)),
     r"einsum: operand 0 has 3 dimension\(s\) but its subscripts 'ij' name 2 and no "
     r"ellipsis was given"),
    (lambda: tinynet.einsum("i->", t()), r"operand 0 has 0 dimension\(s\)"),
    (lambda: tinynet.einsum("...ijk", t(2, 3)),
     r"operand 0 has 2 dimension\(s\) but its subscripts name 3 besides the ellipsis"),
    # sizes
    (lambda: tinynet.einsum("ij,jk->ik", t(2, 3), t(4, 4)),
     r"einsum: subscript 'j' has size 3 in operand 0 and size 4 in operand 1, which do "
     r"not broadcast"),
    (lambda: tinynet.einsum("i,j,j", t(2), t(3), t(5)), r"subscript 'j' has size 3 in "
     r"operand 1 and size 5 in operand 2"),
    (lambda: tinynet.einsum("...i,...i", t(5, 2, 3), t(4, 3)),
     r"dimension -1 \(from the right\) of the ellipsis '\.\.\.' has size 2 in operand 0 "
     r"and size 4 in operand 1"),
    (lambda: tinynet.einsum("ii->i", t(2, 3)),
     r"subscript 'i' is repeated in operand 0 with sizes 2 and 3: a diagonal needs equal "
     r"sizes"),
    # characters and ellipses
    (lambda: tinynet.einsum("i1", t(2, 3)),
     r"einsum: invalid character '1' at index 1 of 'i1': subscripts must be letters"),
    (lambda: tinynet.einsum("ij->i->j", t(2, 3)), r"invalid character '-' at index 5"),
    (lambda: tinynet.einsum("ij-", t(2, 3)), r"invalid character '-' at index 2"),
    (lambda: tinynet.einsum("ij;jk", t(2, 3), t(3, 2)), r"invalid character ';'"),
    (lambda: tinynet.einsum("..ij", t(2, 3)),
     r"'\.' at index 0 of '\.\.ij' is not part of an ellipsis '\.\.\.' \(operand 0\)"),
    (lambda: tinynet.einsum(". . .i", t(2, 3)), r"not part of an ellipsis"),
    (lambda: tinynet.einsum("ij->.", t(2, 3)), r"not part of an ellipsis '\.\.\.' \(output\)"),
    (lambda: tinynet.einsum("...i...", t(2, 3)),
     r"operand 0 has more than one ellipsis"),
    # the output
    (lambda: tinynet.einsum("ij->ik", t(2, 3)),
     r"output subscript 'k' does not appear in the subscripts of any operand"),
    (lambda: tinynet.einsum("ij->ii", t(2, 3)),
     r"output subscript 'i' appears more than once in the output"),
    # the sublist form
    (lambda: tinynet.einsum(t(2, 3), [0, 52]),
     r"subscripts in a sublist must be integers in \[0, 52\) or Ellipsis, got 52"),
    (lambda: tinynet.einsum(t(2, 3), "ij"), r"expected a list of subscripts"),
])
def test_bad_equations_raise_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_torch_rejects_the_same_equations():
    """Each bad equation above is one torch refuses too (a sample of them)."""
    for equation, shapes in (("ij,jk", [(2, 3)]), ("ij", [(2, 3, 4)]),
                             ("ij,jk->ik", [(2, 3), (4, 4)]), ("ii->i", [(2, 3)]),
                             ("i1", [(2, 3)]), ("ij->ik", [(2, 3)]), ("ij->ii", [(2, 3)]),
                             ("..ij", [(2, 3)]), ("...i,...i", [(5, 2, 3), (4, 3)])):
        with pytest.raises(RuntimeError):
            torch.einsum(equation, *(torch.zeros(s) for s in shapes))


def test_a_non_tensor_operand_is_a_type_error():
    with pytest.raises(TypeError, match="einsum: operand 1 must be a Tensor, got list"):
        tinynet.einsum("i,i", t(2), [1.0, 2.0])
