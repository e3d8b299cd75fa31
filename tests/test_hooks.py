"""Tensor.register_hook and register_post_accumulate_grad_hook, against PyTorch's rules."""
import numpy as np
import pytest

import tinynet as tn


def leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_leaf_hook_sees_the_summed_gradient_once_and_can_replace_it():
    x = leaf([1.0, 2.0, 3.0])
    seen = []

    def double(grad):
        seen.append(grad.array.copy())
        return grad * 2

    x.register_hook(double)
    (x * x + x * 3).sum().backward()          # two paths reach x
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 2 * x.array + 3)
    np.testing.assert_allclose(x.grad.array, 2 * (2 * x.array + 3))


def test_hooks_run_in_order_each_on_the_previous_result_and_remove():
    x = leaf([1.0, -1.0])
    first = x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    (x * 1.0).sum().backward()
    np.testing.assert_allclose(x.grad.array, [20.0, 20.0])
    first.remove()
    x.grad = None
    (x * 1.0).sum().backward()
    np.testing.assert_allclose(x.grad.array, [10.0, 10.0])


def test_a_handle_is_a_context_manager():
    x = leaf([1.0])
    calls = []
    with x.register_hook(lambda g: calls.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert calls == [1]
    np.testing.assert_allclose(x.grad.array, [4.0])


def test_hook_on_an_intermediate_changes_what_flows_upstream():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    results = []
    for lib, make in ((tn, lambda v: tn.tensor(v, requires_grad=True)),
                      (torch, lambda v: torch.tensor(v, requires_grad=True))):
        x, weight = make(a), make(w)
        hidden = x @ weight
        hidden.register_hook(lambda g: g * 3)
        out = lib.tanh(hidden)
        out.register_hook(lambda g: g - 0.5)
        (out * out).sum().backward()
        results.append((np.asarray(x.grad.array if lib is tn else x.grad.numpy()),
                        np.asarray(weight.grad.array if lib is tn else weight.grad.numpy())))
    for ours, theirs in zip(results[0], results[1], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_hook_on_one_output_of_a_split():
    x = leaf(np.arange(6.0))
    first, second = x.split(3)
    second.register_hook(lambda g: g * 0)
    (first.sum() + second.sum()).backward()
    np.testing.assert_allclose(x.grad.array, [1, 1, 1, 0, 0, 0])


def test_hook_with_a_wrong_shape_is_refused():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: tn.ones(3, dtype=tn.float64))
    with pytest.raises(RuntimeError, match=r"shape \(3,\) for a gradient of shape \(2,\)"):
        (x * 2).sum().backward()


def test_hooks_need_a_tensor_that_requires_grad():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tn.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tn.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(TypeError, match="callable"):
        leaf([1.0]).register_hook(3)


def test_post_accumulate_hook_runs_after_grad_is_accumulated():
    x = leaf([1.0, 2.0])
    x.grad = tn.tensor([10.0, 10.0], dtype=tn.float64)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.array.copy()))
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen, [[13.0, 13.0]])


def test_post_accumulate_hook_only_on_leaves():
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_leaf_gradients_are_delivered_during_backward_last_layer_first():
    """When the output layer's weight is ready, the input layer's is not yet: a
    hook can act on one gradient while the rest of backward still runs."""
    model = tn.nn.Sequential(tn.nn.Linear(3, 4), tn.nn.Tanh(), tn.nn.Linear(4, 2))
    params = dict(model.named_parameters())
    events = []
    for name, p in params.items():
        p.register_post_accumulate_grad_hook(
            lambda t, name=name: events.append((name, params["0.weight"].grad is None)))
    model(tn.randn(5, 3)).sum().backward()
    names = [name for name, _ in events]
    assert sorted(names) == sorted(params)
    assert names.index("2.weight") < names.index("0.weight")
    assert dict(events)["2.weight"] is True           # 0.weight had no grad yet
    assert dict(events)["0.weight"] is False


def test_a_leaf_used_at_several_steps_is_delivered_once_complete():
    w = leaf([0.5])
    calls = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.array.copy()))
    h = leaf([1.0])
    for _ in range(4):                                # h <- w * h, four times
        h = w * h
    h.sum().backward()
    np.testing.assert_allclose(calls, [[4 * 0.5 ** 3]])
