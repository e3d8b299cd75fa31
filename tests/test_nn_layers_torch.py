"""Layers against PyTorch with copied weights: values, gradients, running statistics."""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F

from composite import composite_layer_norm

torch = pytest.importorskip("torch")


def to_torch(t, grad=True):
    return torch.tensor(np.asarray(t.numpy()), requires_grad=grad)


def copy_weights(ours, theirs):
    """Load a tinynet module's state into a torch module (same names and shapes)."""
    state = {k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state, strict=False)
    return theirs.double() if ours_dtype(ours) == np.float64 else theirs


def ours_dtype(module):
    return next(iter(module.parameters())).dtype


def assert_close(ours, theirs, rtol=1e-10, atol=1e-12):
    ours = ours.numpy() if hasattr(ours, "numpy") and not isinstance(ours, np.ndarray) else ours
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=rtol, atol=atol)


def test_linear_init_matches_pytorch_bounds():
    fc = nn.Linear(400, 30)
    bound = 1 / np.sqrt(400)
    w = fc.weight.numpy()
    assert w.shape == (30, 400) and np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(fc.bias.numpy()).max() <= bound


@pytest.mark.parametrize("shape, normalized", [((5, 8), 8), ((2, 3, 6), (6,)), ((2, 3, 4), (3, 4)),
                                              ((1, 1), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_fused_composite_and_torch_agree(shape, normalized, affine):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape) * 3 + 1
    layer = nn.LayerNorm(normalized, elementwise_affine=affine, dtype=tinynet.float64)
    if affine:
        layer.weight.data[...] = rng.standard_normal(layer.weight.shape)
        layer.bias.data[...] = rng.standard_normal(layer.bias.shape)
    ref = torch.nn.LayerNorm(normalized, elementwise_affine=affine).double()
    if affine:
        copy_weights(layer, ref)
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    dy = rng.standard_normal(shape)
    y, yt = layer(x), ref(xt)
    (y * tinynet.tensor(dy)).sum().backward()
    (yt * torch.tensor(dy)).sum().backward()
    assert_close(y, yt)
    assert_close(x.grad, xt.grad, rtol=1e-9, atol=1e-11)
    if affine:
        assert_close(layer.weight.grad, ref.weight.grad, rtol=1e-9, atol=1e-11)
        assert_close(layer.bias.grad, ref.bias.grad, rtol=1e-9, atol=1e-11)
    if isinstance(normalized, int) or len(normalized) == 1:
        xc = tinynet.tensor(x_np, requires_grad=True)
        w = layer.weight if affine else 1.0
        b = layer.bias if affine else 0.0
        yc = composite_layer_norm(xc, w, b)
        (yc * tinynet.tensor(dy)).sum().backward()
        np.testing.assert_allclose(yc.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(xc.grad.numpy(), x.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("shape", [(6, 4), (5, 3, 7)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_train_eval_and_running_stats_match_torch(shape, affine):
    rng = np.random.default_rng(1)
    ours = nn.BatchNorm1d(shape[1], affine=affine, momentum=0.2, dtype=tinynet.float64)
    ref = torch.nn.BatchNorm1d(shape[1], affine=affine, momentum=0.2).double()
    if affine:
        ours.weight.data[...] = rng.uniform(0.5, 2, shape[1])
        ours.bias.data[...] = rng.standard_normal(shape[1])
        copy_weights(ours, ref)
    for step in range(3):
        x_np = rng.standard_normal(shape) * 2 + step
        dy = rng.standard_normal(shape)
        x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
        y, yt = ours(x), ref(xt)
        (y * tinynet.tensor(dy)).sum().backward()
        (yt * torch.tensor(dy)).sum().backward()
        assert_close(y, yt)
        assert_close(x.grad, xt.grad, rtol=1e-9, atol=1e-11)
    assert_close(ours.running_mean, ref.running_mean)
    assert_close(ours.running_var, ref.running_var)
    assert ours.num_batches_tracked.item() == ref.num_batches_tracked.item() == 3
    if affine:
        assert_close(ours.weight.grad, ref.weight.grad, rtol=1e-9)
        assert_close(ours.bias.grad, ref.bias.grad, rtol=1e-9)
    ours.eval(), ref.eval()
    x_np = rng.standard_normal(shape)
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y, yt = ours(x), ref(xt)
    y.sum().backward()
    yt.sum().backward()
    assert_close(y, yt)
    assert_close(x.grad, xt.grad)


def test_batch_norm_unbiased_batch_variance_switch():
    rng = np.random.default_rng(2)
    x_np = rng.standard_normal((4, 3))
    bn = nn.BatchNorm1d(3, affine=False, unbiased_batch_var=True, dtype=tinynet.float64)
    y = bn(tinynet.tensor(x_np)).numpy()
    expected = (x_np - x_np.mean(0)) / np.sqrt(x_np.var(0, ddof=1) + 1e-5)
    np.testing.assert_allclose(y, expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(reduction):
    rng = np.random.default_rng(3)
    logits_np, target = rng.standard_normal((6, 5)) * 4, rng.integers(0, 5, 6)
    pred_np, goal_np = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    cases = [
        (F.cross_entropy, torch.nn.functional.cross_entropy, logits_np, target),
        (lambda a, t, **k: F.nll_loss(a.log_softmax(dim=1), t, **k),
         lambda a, t, **k: torch.nn.functional.nll_loss(a.log_softmax(dim=1), t, **k),
         logits_np, target),
        (F.mse_loss, torch.nn.functional.mse_loss, pred_np, goal_np),
    ]
    for ours_fn, ref_fn, a_np, t_np in cases:
        a, at = tinynet.tensor(a_np, requires_grad=True), torch.tensor(a_np, requires_grad=True)
        t = tinynet.tensor(t_np) if t_np.dtype.kind == "f" else t_np
        tt = torch.tensor(t_np)
        out, out_ref = ours_fn(a, t, reduction=reduction), ref_fn(at, tt, reduction=reduction)
        weights = rng.standard_normal(tuple(out_ref.shape))
        (out * tinynet.tensor(weights)).sum().backward()
        (out_ref * torch.tensor(weights)).sum().backward()
        assert_close(out, out_ref)
        assert_close(a.grad, at.grad)


def test_loss_modules_wrap_functions():
    logits = tinynet.randn(4, 3, dtype=tinynet.float64)
    target = np.array([0, 2, 1, 1])
    assert nn.CrossEntropyLoss()(logits, target).item() == pytest.approx(
        F.cross_entropy(logits, target).item())
    assert nn.MSELoss(reduction="sum")(logits, logits * 0).item() == pytest.approx(
        (logits.numpy() ** 2).sum())


def _copy_lstm_weights(ours, ref):
    with torch.no_grad():
        for name, p in ref.named_parameters():
            p.copy_(torch.tensor(dict(ours.named_parameters())[name].numpy()))


@pytest.mark.parametrize("num_layers, batch_first, with_state",
                         [(1, False, False), (2, True, True)])
def test_plain_lstm_matches_torch(num_layers, batch_first, with_state):
    rng = np.random.default_rng(4)
    T, B, D, H = 5, 3, 4, 6
    ours = nn.LSTM(D, H, num_layers=num_layers, batch_first=batch_first, dtype=tinynet.float64)
    ref = torch.nn.LSTM(D, H, num_layers=num_layers, batch_first=batch_first).double()
    _copy_lstm_weights(ours, ref)
    shape = (B, T, D) if batch_first else (T, B, D)
    x_np = rng.standard_normal(shape)
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    state = state_t = None
    if with_state:
        h0, c0 = rng.standard_normal((2, num_layers, B, H))
        state = (tinynet.tensor(h0, requires_grad=True), tinynet.tensor(c0, requires_grad=True))
        state_t = (torch.tensor(h0, requires_grad=True), torch.tensor(c0, requires_grad=True))
    out, (h, c) = ours(x, state)
    out_t, (h_t, c_t) = ref(xt, state_t)
    w_out, w_c = rng.standard_normal(tuple(out_t.shape)), rng.standard_normal(tuple(c_t.shape))
    ((out * tinynet.tensor(w_out)).sum() + (c * tinynet.tensor(w_c)).sum()).backward()
    ((out_t * torch.tensor(w_out)).sum() + (c_t * torch.tensor(w_c)).sum()).backward()
    for a, b in [(out, out_t), (h, h_t), (c, c_t), (x.grad, xt.grad)]:
        assert_close(a, b, rtol=1e-9, atol=1e-11)
    params = dict(ours.named_parameters())
    for name, p in ref.named_parameters():
        assert_close(params[name].grad, p.grad, rtol=1e-9, atol=1e-11)
    if with_state:
        assert_close(state[0].grad, state_t[0].grad, rtol=1e-9, atol=1e-11)
        assert_close(state[1].grad, state_t[1].grad, rtol=1e-9, atol=1e-11)


def test_lstm_cell_matches_torch():
    rng = np.random.default_rng(5)
    ours = nn.LSTMCell(3, 4, dtype=tinynet.float64)
    ref = torch.nn.LSTMCell(3, 4).double()
    _copy_lstm_weights(ours, ref)
    x_np, h_np, c_np = (rng.standard_normal(shape) for shape in ((2, 3), (2, 4), (2, 4)))
    h, c = ours(tinynet.tensor(x_np), (tinynet.tensor(h_np), tinynet.tensor(c_np)))
    h_t, c_t = ref(torch.tensor(x_np), (torch.tensor(h_np), torch.tensor(c_np)))
    assert_close(h, h_t)
    assert_close(c, c_t)


def torch_ln_lstm_step(x, h, c, params, H):
    """The LN-LSTM step written independently in torch, as the paper's authors' code."""
    ln = torch.nn.functional.layer_norm
    gates = (ln(x @ params["weight_ih"].T, (4 * H,), params["norms.ih.weight"],
                params["norms.ih.bias"])
             + ln(h @ params["weight_hh"].T, (4 * H,), params["norms.hh.weight"],
                  params["norms.hh.bias"])
             + params["bias_ih"] + params["bias_hh"])
    i, f, g, o = gates.chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    c_read = ln(c, (H,), params["norms.cell.weight"], params["norms.cell.bias"])
    return torch.sigmoid(o) * torch.tanh(c_read), c


def test_ln_lstm_cell_matches_an_independent_torch_implementation():
    rng = np.random.default_rng(6)
    H = 5
    cell = nn.LSTMCell(3, H, norm="layer", dtype=tinynet.float64)
    for p in cell.parameters():
        p.data[...] = rng.standard_normal(p.shape)
    params = {n: torch.tensor(p.numpy(), requires_grad=True) for n, p in cell.named_parameters()}
    x_np = rng.standard_normal((4, 6, 3))
    h = c = tinynet.zeros(4, H, dtype=tinynet.float64)
    h_t = c_t = torch.zeros(4, H, dtype=torch.float64)
    for t in range(6):
        h, c = cell(tinynet.tensor(x_np[:, t]), (h, c), step=t)
        h_t, c_t = torch_ln_lstm_step(torch.tensor(x_np[:, t]), h_t, c_t, params, H)
    (h.sum() + (c * c).sum()).backward()
    (h_t.sum() + (c_t * c_t).sum()).backward()
    assert_close(h, h_t)
    for name, p in cell.named_parameters():
        assert_close(p.grad, params[name].grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("batch_first", [False, True])
def test_ln_lstm_layer_matches_an_independent_torch_implementation(batch_first):
    """nn.LSTM(norm='layer') runs a layer as one node (ops.recurrent.LSTMSequence):
    outputs, final state and every gradient against torch's per-step loop."""
    rng = np.random.default_rng(9)
    T, B, H = 7, 4, 5
    lstm = nn.LSTM(3, H, norm="layer", batch_first=batch_first, dtype=tinynet.float64)
    for p in lstm.parameters():
        p.data[...] = rng.standard_normal(p.shape)
    params = {n.replace("_l0", ""): torch.tensor(
        p.numpy(), requires_grad=True) for n, p in lstm.named_parameters()}
    x_np = rng.standard_normal((B, T, 3) if batch_first else (T, B, 3))
    h0_np, c0_np = rng.standard_normal((2, B, H))
    x = tinynet.tensor(x_np, requires_grad=True)
    state = (tinynet.tensor(h0_np[None], requires_grad=True),
             tinynet.tensor(c0_np[None], requires_grad=True))
    out, (h, c) = lstm(x, state)
    xt = torch.tensor(x_np, requires_grad=True)
    h_t, c_t = (torch.tensor(a, requires_grad=True) for a in (h0_np, c0_np))
    h0_t, c0_t = h_t, c_t
    outputs_t = []
    for t in range(T):
        h_t, c_t = torch_ln_lstm_step(xt[:, t] if batch_first else xt[t], h_t, c_t, params, H)
        outputs_t.append(h_t)
    out_t = torch.stack(outputs_t, dim=1 if batch_first else 0)
    w_out = rng.standard_normal(tuple(out_t.shape))
    ((out * tinynet.tensor(w_out)).sum() + (c * c).sum()).backward()
    ((out_t * torch.tensor(w_out)).sum() + (c_t * c_t).sum()).backward()
    for a, b in [(out, out_t), (h[0], h_t), (c[0], c_t), (x.grad, xt.grad),
                 (state[0].grad[0], h0_t.grad), (state[1].grad[0], c0_t.grad)]:
        assert_close(a, b, rtol=1e-9, atol=1e-11)
    for name, p in lstm.named_parameters():
        assert_close(p.grad, params[name.replace("_l0", "")].grad, rtol=1e-8, atol=1e-10)
