"""TransformerEncoderLayer and TransformerEncoder against PyTorch with the same state dict."""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn.attention import additive_mask
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")
TOL = dict(rtol=1e-10, atol=1e-10)
D_MODEL, NHEAD, FF = 8, 2, 12


def randomize(ref, seed=0):
    """Random weights (LayerNorm gains around 1) in the torch module's state dict."""
    rng = np.random.default_rng(seed)
    state = {}
    for name, t in ref.state_dict().items():
        value = rng.standard_normal(tuple(t.shape)) * 0.4
        state[name] = torch.tensor(value + 1 if "norm" in name and "weight" in name else value)
    ref.load_state_dict(state)


def load_from_torch(ours, ref):
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict({name: t.numpy() for name, t in ref.state_dict().items()})
    return ours


def layer_pair(seed=0, **kw):
    kw = dict(dim_feedforward=FF, dropout=0.0, **kw)
    ref = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, **kw).double()
    randomize(ref, seed)
    ours = nn.TransformerEncoderLayer(D_MODEL, NHEAD, dtype=tinynet.float64, **kw)
    return load_from_torch(ours, ref), ref


def masks(kind, N, S):
    rng = np.random.default_rng(3)
    causal = np.triu(np.ones((S, S), dtype=bool), 1)
    padding = np.zeros((N, S), dtype=bool)
    padding[0, -2:] = True
    blocked = rng.random((S, S)) < 0.3
    np.fill_diagonal(blocked, False)
    return {"none": {}, "mask": {"mask": blocked}, "padding": {"src_key_padding_mask": padding},
            "both": {"mask": blocked, "src_key_padding_mask": padding},
            "causal": {"mask": causal, "is_causal": True},
            "causal_float": {"mask": np.where(causal, -np.inf, 0.0)}}[kind]


def compare(ours, ref, x, **kw):
    """Output, input gradient and every parameter gradient of both modules, to TOL."""
    g = np.random.default_rng(1).standard_normal(x.shape)
    xo, xt = tinynet.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = ours(xo, **{k: tinynet.tensor(v) if isinstance(v, np.ndarray) else v
                      for k, v in kw.items()})
    ref_out = ref(xt, **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                         for k, v in kw.items()})
    (out * tinynet.tensor(g)).sum().backward()
    (ref_out * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), **TOL)
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), **TOL)
    theirs = dict(ref.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(theirs)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs[name].grad.numpy(), err_msg=name,
                                   **TOL)


def as_layer_kwargs(kw):
    renamed = {"mask": "src_mask"}
    return {renamed.get(k, k): v for k, v in kw.items()}


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "mask", "padding", "both", "causal"])
def test_encoder_layer_matches_torch(norm_first, activation, batch_first, mask_kind):
    ours, ref = layer_pair(norm_first=norm_first, activation=activation,
                           batch_first=batch_first)
    N, S = 2, 5
    x = np.random.default_rng(2).standard_normal((N, S, D_MODEL) if batch_first
                                                 else (S, N, D_MODEL))
    compare(ours, ref, x, **as_layer_kwargs(masks(mask_kind, N, S)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_unbatched_without_bias_matches_torch(norm_first):
    ours, ref = layer_pair(norm_first=norm_first, bias=False, activation="gelu")
    assert ours.norm1.bias is None and ours.linear1.bias is None
    compare(ours, ref, np.random.default_rng(4).standard_normal((6, D_MODEL)))


def test_encoder_layer_accepts_a_callable_activation():
    ref = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                           activation=torch.nn.functional.silu).double()
    randomize(ref)
    ours = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=nn.SiLU(),
                                      dtype=tinynet.float64)
    compare(load_from_torch(ours, ref), ref,
            np.random.default_rng(5).standard_normal((4, 2, D_MODEL)))


def encoder_pair(num_layers=2, final_norm=True, **kw):
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, **kw)
    norm = torch.nn.LayerNorm(D_MODEL) if final_norm else None
    ref = torch.nn.TransformerEncoder(layer, num_layers, norm=norm,
                                      enable_nested_tensor=False).double()
    randomize(ref)
    ours_layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                            dtype=tinynet.float64, **kw)
    ours_norm = nn.LayerNorm(D_MODEL, dtype=tinynet.float64) if final_norm else None
    ours = nn.TransformerEncoder(ours_layer, num_layers, norm=ours_norm)
    return load_from_torch(ours, ref), ref


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("final_norm", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "mask", "padding", "both", "causal",
                                       "causal_float"])
def test_encoder_matches_torch(norm_first, final_norm, batch_first, mask_kind):
    ours, ref = encoder_pair(final_norm=final_norm, norm_first=norm_first,
                             batch_first=batch_first)
    N, S = 3, 5
    x = np.random.default_rng(6).standard_normal((N, S, D_MODEL) if batch_first
                                                 else (S, N, D_MODEL))
    compare(ours, ref, x, **masks(mask_kind, N, S))


def test_encoder_detects_a_causal_mask():
    ours, _ = encoder_pair(batch_first=True)
    x = tinynet.tensor(np.random.default_rng(7).standard_normal((2, 5, D_MODEL)))
    causal = np.triu(np.ones((5, 5), dtype=bool), 1)
    assert ours._is_causal_mask(additive_mask(causal, "mask", x), x)
    assert ours._is_causal_mask(additive_mask(np.where(causal, -np.inf, 0), "mask", x), x)
    assert not ours._is_causal_mask(additive_mask(causal.T, "mask", x), x)
    assert not ours._is_causal_mask(additive_mask(causal[:4, :4], "mask", x), x)
    assert not ours._is_causal_mask(None, x)


def test_encoder_layers_are_independent_deep_copies():
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF)
    encoder = nn.TransformerEncoder(layer, 3)
    assert len(encoder.layers) == 3 and encoder.norm is None
    first, second = encoder.layers[0], encoder.layers[1]
    assert first is not layer and first.linear1.weight is not second.linear1.weight
    np.testing.assert_array_equal(first.linear1.weight.numpy(), layer.linear1.weight.numpy())
    first.linear1.weight.data[...] = 0
    assert second.linear1.weight.numpy().any() and layer.linear1.weight.numpy().any()
    assert isinstance(first.linear1.weight, nn.Parameter) and first.linear1.weight.requires_grad
    assert len(list(encoder.parameters())) == 3 * len(list(layer.parameters()))
    assert "layers.2.self_attn.out_proj.weight" in encoder.state_dict()


def test_encoder_layer_gradcheck():
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0,
                                       activation="gelu", dtype=tinynet.float64)
    rng = np.random.default_rng(8)
    for p in layer.parameters():
        p.data[...] += rng.standard_normal(p.shape) * 0.3
    x = tinynet.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    padding = np.array([[False, False, True], [False, False, False]])
    assert gradcheck(lambda x, *params: layer(x, src_key_padding_mask=padding),
                     [x, *layer.parameters()])


@pytest.mark.parametrize("norm_first", [False, True])
def test_dropout_is_off_in_eval_and_on_in_training(norm_first):
    noisy = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.5, norm_first=norm_first,
                                       dtype=tinynet.float64)
    plain = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, norm_first=norm_first,
                                       dtype=tinynet.float64)
    plain.load_state_dict(noisy.state_dict())
    x = tinynet.tensor(np.random.default_rng(9).standard_normal((6, 4, D_MODEL)))
    np.testing.assert_array_equal(noisy.eval()(x).numpy(), plain(x).numpy())
    noisy.train()
    first, second = noisy(x).numpy(), noisy(x).numpy()
    assert not np.allclose(first, second) and not np.allclose(first, plain(x).numpy())
    encoder = nn.TransformerEncoder(noisy, 2).eval()
    np.testing.assert_array_equal(encoder(x).numpy(), encoder(x).numpy())


@pytest.mark.parametrize("norm_first", [False, True])
def test_dropout_sites_are_torchs(norm_first):
    """dropout1 on the attention output, dropout on the hidden units, dropout2 on the
    feed-forward output, in that order; attention dropout inside self_attn."""
    calls = []

    class Spy(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def forward(self, x):
            calls.append((self.name, x.shape[-1]))
            return x

    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.3, norm_first=norm_first)
    assert layer.self_attn.dropout == 0.3
    for name in ("dropout", "dropout1", "dropout2"):
        assert getattr(layer, name).p == 0.3
        setattr(layer, name, Spy(name))
    layer(tinynet.randn(5, 2, D_MODEL))
    assert calls == [("dropout1", D_MODEL), ("dropout", FF), ("dropout2", D_MODEL)]


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"), ValueError, "relu/gelu"),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation=3), TypeError, "callable"),
    (lambda: nn.TransformerEncoderLayer(8, 3), ValueError, "divisible"),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 0), ValueError,
     "num_layers"),
    (lambda: nn.TransformerEncoderLayer(8, 2)(tinynet.randn(5, 2, 8), is_causal=True),
     ValueError, "needs attn_mask"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
