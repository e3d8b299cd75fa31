"""New arrays laid out as others are (tinynet/ops/layout.py): the gradients of views
into one buffer made as views into one new buffer, and a split's backward that then
copies nothing."""
import numpy as np
import pytest

import tinynet
from tinynet.kernels.ops import attention_heads_cpu
from tinynet.nn import functional as F
from tinynet.ops import joining, layout


def projection_views(batch=2, steps=5, heads=3, width=4):
    """A GPT's q, k and v: views (B, heads, T, E) of one (B, T, 3, heads, E) buffer."""
    buffer = np.arange(batch * steps * 3 * heads * width, dtype=np.float32)
    return buffer.reshape(batch, steps, 3, heads, width).transpose(2, 0, 3, 1, 4)


def test_gradients_of_views_into_one_buffer_are_views_into_one_new_buffer():
    q, k, v = projection_views()
    grads = layout.empty_gradients_like((q, k, v), np.float32)
    assert all(g.base is grads[0].base for g in grads)
    assert grads[0].base is not q.base and not np.shares_memory(grads[0], q)
    assert [g.strides for g in grads] == [a.strides for a in (q, k, v)]
    for value, g in enumerate(grads):
        g[...] = value
    whole = grads[0].base.reshape(2, 5, 3, 3, 4)             # the places q, k and v lie
    for value in range(3):
        assert (whole[:, :, value] == value).all()


@pytest.mark.parametrize("case", ["the same array twice", "part of a larger buffer",
                                  "another dtype", "separate arrays"])
def test_other_arrays_get_gradients_of_their_own(case):
    q, k, v = projection_views()
    arrays = {"the same array twice": (q, q, v), "part of a larger buffer": (q, k),
              "another dtype": (q, k, v), "separate arrays": (q.copy(), k.copy())}[case]
    dtype = np.float64 if case == "another dtype" else np.float32
    grads = layout.empty_gradients_like(arrays, dtype)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(grads) for b in grads[i + 1:])
    assert all(g.shape == a.shape and g.dtype == dtype for g, a in zip(grads, arrays, strict=True))


def test_joined_slices_is_the_stack_as_a_view():
    q, k, v = projection_views()
    grads = layout.empty_gradients_like((q, k, v), np.float32)
    rng = np.random.default_rng(0)
    for g in grads:
        g[...] = rng.standard_normal(g.shape)
    slices = [g.transpose(0, 2, 1, 3) for g in grads]           # (B, T, heads, E) each
    joined = layout.joined_slices(slices, 2)
    np.testing.assert_array_equal(joined, np.stack(slices, axis=2))
    assert np.shares_memory(joined, grads[0]) and joined.flags.c_contiguous


def test_joined_slices_declines_what_is_not_one_array():
    q, k, v = projection_views()
    assert layout.joined_slices([q, k, v], 0) is not None
    assert layout.joined_slices([q.copy(), k.copy()], 0) is None          # two buffers
    assert layout.joined_slices([q, v, k], 0) is None                     # not evenly spaced
    assert layout.joined_slices([q, k, None], 0) is None
    assert layout.joined_slices([q], 0) is None
    row = np.arange(10.0)
    overlapping = [row[0:4], row[1:5], row[2:6]]                           # spaced by one element
    assert layout.joined_slices(overlapping, 0) is None
    assert layout.joined_slices([row[0:4], row[4:8]], 0) is not None


@pytest.mark.skipif(attention_heads_cpu.small_kernels() is None,
                    reason="NumPy's OpenBLAS has no small-matrix kernels for this CPU")
def test_the_gpt_split_copies_nothing_in_its_backward(monkeypatch):
    """q, k and v from one projection: the heads kernel's gradients lie as the split's
    slices, and Unbind's backward hands them on as one array, with the copy's values."""
    data = np.random.default_rng(0).standard_normal((2, 6, 3, 2, 4)).astype(np.float32)

    def projection_grad():
        projection = tinynet.tensor(data, requires_grad=True)
        q, k, v = projection.permute(2, 0, 3, 1, 4).unbind(0)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        (out * out).sum().backward()
        return projection.grad.numpy()

    copies = []
    real_empty = joining.empty_in_layout
    monkeypatch.setattr(joining, "empty_in_layout",
                        lambda *arguments: copies.append(1) or real_empty(*arguments))
    joined = projection_grad()
    assert copies == []
    monkeypatch.setattr(joining, "joined_slices", lambda slices, axis: None)
    copied = projection_grad()
    assert len(copies) == 1
    np.testing.assert_array_equal(joined, copied)
