"""TransformerDecoderLayer, TransformerDecoder and Transformer: against PyTorch with the
same state dict, finite differences, causality, initialization and errors."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn.transformer_decoder import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
)
from tinynet.testing import check_causal, gradcheck

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is the oracle")
# torch's notices about its own nested-tensor inference path
pytestmark = [pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")]
TOL = dict(rtol=1e-10, atol=1e-10)
D_MODEL, NHEAD, FF = 8, 2, 12
N, T, S = 2, 4, 5           # batch, target length, source (memory) length


# ------------------------------------------------------------------ helpers
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


def sequences(batch_first, *lengths, batched=True, seed=2):
    """One random float64 input per length: (L, N, E), (N, L, E) or unbatched (L, E)."""
    rng = np.random.default_rng(seed)
    shape = ((lambda L: (N, L, D_MODEL)) if batch_first else (lambda L: (L, N, D_MODEL)))
    return [rng.standard_normal(shape(L) if batched else (L, D_MODEL)) for L in lengths]


def convert(kwargs, lib):
    return {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def compare(ours, ref, inputs, grads=True, **kwargs):
    """Output and (with ``grads``) the gradients of every input and every parameter of Σ
    out·w, for a fixed random w, of both modules, to TOL."""
    leaves = [tinynet.tensor(x, requires_grad=grads) for x in inputs]
    ref_leaves = [torch.tensor(x, requires_grad=grads) for x in inputs]
    out = ours(*leaves, **convert(kwargs, tinynet))
    ref_out = ref(*ref_leaves, **convert(kwargs, torch))
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), **TOL)
    if not grads:
        return
    w = np.random.default_rng(1).standard_normal(out.shape)
    (out * tinynet.tensor(w)).sum().backward()
    (ref_out * torch.tensor(w)).sum().backward()
    for i, (x, xt) in enumerate(zip(leaves, ref_leaves, strict=True)):
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), err_msg=f"input {i}", **TOL)
    theirs = dict(ref.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(theirs)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs[name].grad.numpy(), err_msg=name,
                                   **TOL)


def causal(size):
    return np.triu(np.ones((size, size), dtype=bool), 1)


def blocked(rows, cols, seed):
    """A random bool mask that leaves every row at least its first key."""
    mask = np.random.default_rng(seed).random((rows, cols)) < 0.3
    mask[:, 0] = False
    return mask


def padding(length, batched=True):
    """Sample 0's last two keys padded (none of sample 1's)."""
    mask = np.zeros((N, length), dtype=bool)
    mask[0, -2:] = True
    return mask if batched else mask[0]


def decoder_masks(kind, batched=True):
    rng = np.random.default_rng(3)
    return {
        "none": {},
        "tgt_mask": {"tgt_mask": blocked(T, T, 4)},
        "tgt_float": {"tgt_mask": rng.standard_normal((T, T))},
        "tgt_3d": {"tgt_mask": rng.standard_normal((N * NHEAD, T, T))},
        "causal": {"tgt_mask": causal(T), "tgt_is_causal": True},
        "causal_float": {"tgt_mask": np.where(causal(T), -np.inf, 0.0)},
        "tgt_padding": {"tgt_key_padding_mask": padding(T, batched)},
        "float_padding": {"tgt_key_padding_mask": rng.standard_normal((N, T))},
        "memory_mask": {"memory_mask": blocked(T, S, 5)},
        "memory_float": {"memory_mask": rng.standard_normal((T, S))},
        "memory_padding": {"memory_key_padding_mask": padding(S, batched)},
        "all": {"tgt_mask": causal(T), "memory_mask": blocked(T, S, 6),
                "tgt_key_padding_mask": padding(T, batched),
                "memory_key_padding_mask": padding(S, batched)},
    }[kind]


def layer_pair(seed=0, **kw):
    kw = dict(dim_feedforward=FF, dropout=0.0, **kw)
    ref = torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, **kw).double()
    randomize(ref, seed)
    ours = TransformerDecoderLayer(D_MODEL, NHEAD, dtype=tinynet.float64, **kw)
    return load_from_torch(ours, ref), ref


def decoder_pair(num_layers=2, final_norm=True, **kw):
    layer = torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, **kw)
    norm = torch.nn.LayerNorm(D_MODEL) if final_norm else None
    ref = torch.nn.TransformerDecoder(layer, num_layers, norm=norm).double()
    randomize(ref)
    ours_layer = TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                         dtype=tinynet.float64, **kw)
    ours_norm = nn.LayerNorm(D_MODEL, dtype=tinynet.float64) if final_norm else None
    ours = TransformerDecoder(ours_layer, num_layers, norm=ours_norm)
    return load_from_torch(ours, ref), ref


def transformer_pair(dropout=0.0, **kw):
    kw = dict(num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF,
              dropout=dropout, **kw)
    ref = torch.nn.Transformer(D_MODEL, NHEAD, **kw).double()
    randomize(ref)
    ours = Transformer(D_MODEL, NHEAD, dtype=tinynet.float64, **kw)
    return load_from_torch(ours, ref), ref


# ------------------------------------------------------ the decoder layer
@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "tgt_mask", "tgt_float", "tgt_3d", "causal",
                                       "causal_float", "tgt_padding", "float_padding",
                                       "memory_mask", "memory_float", "memory_padding", "all"])
def test_decoder_layer_matches_torch(norm_first, batch_first, mask_kind):
    ours, ref = layer_pair(norm_first=norm_first, batch_first=batch_first)
    compare(ours, ref, sequences(batch_first, T, S), **decoder_masks(mask_kind))


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "all"])
def test_decoder_layer_unbatched_gelu_without_bias_matches_torch(norm_first, mask_kind):
    ours, ref = layer_pair(norm_first=norm_first, bias=False, activation="gelu")
    assert ours.norm3.bias is None and ours.multihead_attn.in_proj_bias is None
    compare(ours, ref, sequences(False, T, S, batched=False),
            **decoder_masks(mask_kind, batched=False))


@needs_torch
@pytest.mark.parametrize("T_, S_", [(4, 4), (3, 5)])
def test_memory_is_causal_matches_torch(T_, S_):
    ours, ref = layer_pair(batch_first=True)
    mask = np.triu(np.ones((T_, S_), dtype=bool), 1)
    compare(ours, ref, sequences(True, T_, S_), memory_mask=mask, memory_is_causal=True)


@needs_torch
def test_decoder_layer_accepts_a_callable_activation():
    ref = torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                           activation=torch.nn.functional.silu).double()
    randomize(ref)
    ours = TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=nn.SiLU(),
                                   dtype=tinynet.float64)
    compare(load_from_torch(ours, ref), ref, sequences(False, T, S), tgt_mask=causal(T))


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_in_eval_mode_matches_torch(norm_first):
    ours, ref = layer_pair(norm_first=norm_first, batch_first=True)
    ours.dropout1.p = ours.dropout.p = ours.multihead_attn.dropout = 0.4
    ref.dropout1.p = ref.dropout.p = ref.multihead_attn.dropout = 0.4
    ours.eval(), ref.eval()
    compare(ours, ref, sequences(True, T, S), **decoder_masks("all"))


def tiny_layer(norm_first, seed=8):
    layer = TransformerDecoderLayer(4, 2, dim_feedforward=6, dropout=0.0, activation="gelu",
                                    norm_first=norm_first, dtype=tinynet.float64)
    rng = np.random.default_rng(seed)
    for p in layer.parameters():
        p.data[...] += rng.standard_normal(p.shape) * 0.3
    return layer, rng


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_gradcheck(norm_first):
    layer, rng = tiny_layer(norm_first)
    tgt = tinynet.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    memory = tinynet.tensor(rng.standard_normal((4, 2, 4)), requires_grad=True)
    memory_padding = np.array([[False, False, False, True], [False, False, False, False]])
    assert gradcheck(
        lambda tgt, memory, *params: layer(tgt, memory, tgt_mask=causal(3),
                                           memory_key_padding_mask=memory_padding),
        [tgt, memory, *layer.parameters()])


# ------------------------------------------------------------- causality
def test_decoder_self_attention_is_causal_under_a_causal_tgt_mask():
    layer = TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=True,
                                    dtype=tinynet.float64).eval()
    rng = np.random.default_rng(10)
    memory = tinynet.tensor(rng.standard_normal((N, S, D_MODEL)))
    tgt = rng.standard_normal((N, 6, D_MODEL))
    assert check_causal(lambda x: layer(x, memory, tgt_mask=causal(6)), tgt)
    assert check_causal(lambda x: layer(x, memory, tgt_mask=causal(6), tgt_is_causal=True),
                        tgt)
    assert not check_causal(lambda x: layer(x, memory), tgt)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_is_causal_in_tgt(norm_first):
    model = Transformer(D_MODEL, NHEAD, 1, 2, FF, dropout=0.0, batch_first=True,
                        norm_first=norm_first, dtype=tinynet.float64).eval()
    rng = np.random.default_rng(11)
    src = tinynet.tensor(rng.standard_normal((N, S, D_MODEL)))
    tgt = rng.standard_normal((N, 6, D_MODEL))
    mask = Transformer.generate_square_subsequent_mask(6, dtype=tinynet.float64)
    assert check_causal(lambda x: model(src, x, tgt_mask=mask), tgt)
    assert not check_causal(lambda x: model(src, x), tgt)


# ------------------------------------------------------------- the decoder
@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("final_norm", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "causal_float", "tgt_mask", "all"])
def test_decoder_matches_torch(norm_first, final_norm, batch_first, mask_kind):
    ours, ref = decoder_pair(final_norm=final_norm, norm_first=norm_first,
                             batch_first=batch_first)
    masks = decoder_masks(mask_kind)
    if mask_kind == "all":      # tgt_is_causal=None detects the bool causal mask
        masks["tgt_is_causal"] = None
    compare(ours, ref, sequences(batch_first, T, S), **masks)


def test_decoder_detects_a_causal_tgt_mask():
    seen = []

    class Recording(TransformerDecoderLayer):
        def forward(self, tgt, memory, **kwargs):
            seen.append(kwargs["tgt_is_causal"])
            return super().forward(tgt, memory, **kwargs)

    decoder = TransformerDecoder(Recording(D_MODEL, NHEAD, FF, batch_first=True), 2)
    tgt, memory = tinynet.randn(N, T, D_MODEL), tinynet.randn(N, S, D_MODEL)
    for mask, expected in [(causal(T), True), (np.where(causal(T), -np.inf, 0.0), True),
                           (causal(T).T, False), (None, False)]:
        seen.clear()
        if mask is not None and mask.dtype != bool:
            mask = mask.astype(np.float32)
        decoder(tgt, memory, tgt_mask=mask)
        assert seen == [expected, expected]
    seen.clear()
    decoder(tgt, memory, tgt_mask=causal(T).T, tgt_is_causal=False)
    assert seen == [False, False]


def test_decoder_layers_are_independent_deep_copies():
    layer = TransformerDecoderLayer(D_MODEL, NHEAD, FF)
    decoder = TransformerDecoder(layer, 3)
    assert len(decoder.layers) == 3 and decoder.num_layers == 3 and decoder.norm is None
    first, second = decoder.layers[0], decoder.layers[1]
    assert first is not layer and first.multihead_attn is not second.multihead_attn
    np.testing.assert_array_equal(first.multihead_attn.in_proj_weight.numpy(),
                                  layer.multihead_attn.in_proj_weight.numpy())
    first.linear1.weight.data[...] = 0
    assert second.linear1.weight.numpy().any() and layer.linear1.weight.numpy().any()
    assert len(list(decoder.parameters())) == 3 * len(list(layer.parameters()))
    assert "layers.2.multihead_attn.out_proj.weight" in decoder.state_dict()


@pytest.mark.parametrize("norm_first", [False, True])
def test_dropout_sites_are_torchs(norm_first):
    """dropout1 after self-attention, dropout2 after the attention over the memory,
    dropout on the hidden units, dropout3 after the feed-forward network."""
    calls = []

    class Spy(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def forward(self, x):
            calls.append((self.name, x.shape[-1]))
            return x

    layer = TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.3, norm_first=norm_first)
    assert layer.self_attn.dropout == layer.multihead_attn.dropout == 0.3
    for name in ("dropout", "dropout1", "dropout2", "dropout3"):
        assert getattr(layer, name).p == 0.3
        setattr(layer, name, Spy(name))
    layer(tinynet.randn(T, N, D_MODEL), tinynet.randn(S, N, D_MODEL))
    assert calls == [("dropout1", D_MODEL), ("dropout2", D_MODEL), ("dropout", FF),
                     ("dropout3", D_MODEL)]


# ------------------------------------------------------------ the Transformer
def transformer_masks(kind, batched=True):
    return {
        "none": {},
        "causal": {"tgt_mask": np.where(causal(T), -np.inf, 0.0)},
        "padding": {"src_key_padding_mask": padding(S, batched),
                    "tgt_key_padding_mask": padding(T, batched),
                    "memory_key_padding_mask": padding(S, batched)},
        "all": {"src_mask": blocked(S, S, 7), "tgt_mask": causal(T),
                "memory_mask": blocked(T, S, 8), "src_key_padding_mask": padding(S, batched),
                "tgt_key_padding_mask": padding(T, batched),
                "memory_key_padding_mask": padding(S, batched)},
        "hints": {"src_mask": causal(S), "src_is_causal": True, "tgt_mask": causal(T),
                  "tgt_is_causal": True},
    }[kind]


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding", "all", "hints"])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_transformer_matches_torch(norm_first, batch_first, mask_kind, mode):
    """Training mode without dropout; eval mode with dropout (which then does nothing)."""
    ours, ref = transformer_pair(dropout=0.0 if mode == "train" else 0.3,
                                 norm_first=norm_first, batch_first=batch_first)
    if mode == "eval":
        ours.eval(), ref.eval()
    compare(ours, ref, sequences(batch_first, S, T), **transformer_masks(mask_kind))


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["padding", "all"])
def test_transformer_values_match_torchs_inference_fast_path(norm_first, mask_kind):
    """Under no_grad in eval mode PyTorch's encoder may run its nested-tensor fast path
    (padded positions of the memory become norm(0)); with the memory's padding masked
    the outputs are the same."""
    ours, ref = transformer_pair(dropout=0.2, norm_first=norm_first, batch_first=True)
    ours.eval(), ref.eval()
    with torch.no_grad(), tinynet.no_grad():
        compare(ours, ref, sequences(True, S, T), grads=False, **transformer_masks(mask_kind))


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "all"])
def test_transformer_unbatched_gelu_without_bias_matches_torch(norm_first, mask_kind):
    ours, ref = transformer_pair(norm_first=norm_first, activation="gelu", bias=False)
    assert ours.encoder.norm.bias is None and ours.decoder.layers[0].linear2.bias is None
    compare(ours, ref, sequences(False, S, T, batched=False),
            **transformer_masks(mask_kind, batched=False))


@needs_torch
def test_transformer_state_dict_is_torchs():
    kw = dict(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=32)
    ours, ref = Transformer(**kw), torch.nn.Transformer(**kw)
    assert ([(k, tuple(v.shape)) for k, v in ours.state_dict().items()]
            == [(k, tuple(v.shape)) for k, v in ref.state_dict().items()])
    assert "encoder.norm.weight" in ours.state_dict() and "decoder.norm.bias" in ours.state_dict()
    assert (ours.d_model, ours.nhead, ours.batch_first) == (16, 2, False)


def test_transformer_initialization_is_xavier_uniform():
    model = Transformer(16, 2, 2, 2, 32)
    default = nn.Linear(16, 32)     # Linear's own init: U(−1/√16, 1/√16)
    for name, p in model.named_parameters():
        values = p.numpy()
        if p.ndim > 1:
            fan_out, fan_in = p.shape
            bound = math.sqrt(6 / (fan_in + fan_out))
            assert np.abs(values).max() <= bound, name
            assert np.abs(values).max() > 0.9 * bound, name
        elif "norm" in name:
            np.testing.assert_array_equal(values, 1.0 if name.endswith("weight") else 0.0)
    assert np.abs(model.encoder.layers[0].linear1.weight.numpy()).max() > 1 / math.sqrt(16)
    assert default.weight.shape == model.encoder.layers[0].linear1.weight.shape
    first, second = (model.decoder.layers[i].linear1.weight.numpy() for i in (0, 1))
    assert not np.array_equal(first, second)
    assert not model.decoder.layers[0].self_attn.in_proj_bias.numpy().any()


def test_transformer_takes_custom_stacks():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF), 1)
    decoder = TransformerDecoder(TransformerDecoderLayer(D_MODEL, NHEAD, FF), 1)
    model = Transformer(D_MODEL, NHEAD, custom_encoder=encoder, custom_decoder=decoder)
    assert model.encoder is encoder and model.decoder is decoder
    assert model.encoder.norm is None and len(model.decoder.layers) == 1
    out = model(tinynet.randn(S, N, D_MODEL), tinynet.randn(T, N, D_MODEL))
    assert out.shape == (T, N, D_MODEL)


@pytest.mark.parametrize("dtype", [None, tinynet.float64])
def test_generate_square_subsequent_mask(dtype):
    mask = Transformer.generate_square_subsequent_mask(4, dtype=dtype)
    assert mask.dtype == (tinynet.float32 if dtype is None else dtype)
    expected = np.where(causal(4), -np.inf, 0.0)
    np.testing.assert_array_equal(mask.numpy(), expected)
    if torch is not None:
        np.testing.assert_array_equal(
            torch.nn.Transformer.generate_square_subsequent_mask(4).numpy(), expected)


# ------------------------------------------------------------------ errors
def decoder_call(**masks):
    layer = TransformerDecoderLayer(D_MODEL, NHEAD, FF)
    return lambda: layer(tinynet.randn(T, N, D_MODEL), tinynet.randn(S, N, D_MODEL), **masks)


@pytest.mark.parametrize("call, error, message", [
    (lambda: TransformerDecoderLayer(8, 3), ValueError, "d_model 8 is not divisible by nhead 3"),
    (lambda: Transformer(8, 3), ValueError, "d_model 8 is not divisible by nhead 3"),
    (lambda: TransformerDecoderLayer(8, 2, activation="tanh"), ValueError, "relu/gelu"),
    (lambda: Transformer(8, 2, activation=3), TypeError, "callable"),
    (lambda: TransformerDecoder(TransformerDecoderLayer(8, 2), 0), ValueError, "num_layers"),
    (lambda: TransformerDecoderLayer(8, 2)(tinynet.randn(4, 2, 8), tinynet.randn(5, 3, 8)),
     ValueError, "same batch size"),
    (lambda: TransformerDecoderLayer(8, 2, batch_first=True)(tinynet.randn(2, 4, 8),
                                                             tinynet.randn(3, 4, 8)),
     ValueError, "same batch size"),
    (lambda: TransformerDecoderLayer(8, 2)(tinynet.randn(4, 2, 8), tinynet.randn(5, 8)),
     ValueError, "same batch size"),
    (lambda: TransformerDecoderLayer(8, 2)(tinynet.randn(4, 2, 8), tinynet.randn(5, 2, 6)),
     ValueError, "must both end in d_model 8"),
    (lambda: TransformerDecoderLayer(8, 2)(tinynet.randn(4, 2, 1, 8), tinynet.randn(5, 2, 8)),
     ValueError, "tgt must be 3-D"),
    (decoder_call(tgt_mask=causal(T + 1)), ValueError, r"tgt_mask has shape \(5, 5\)"),
    (decoder_call(memory_mask=np.zeros((S, T), dtype=bool)), ValueError,
     r"memory_mask has shape \(5, 4\), expected \(4, 5\)"),
    (decoder_call(memory_mask=np.zeros((NHEAD, T, S), dtype=bool)), ValueError,
     "memory_mask has shape"),
    (decoder_call(tgt_key_padding_mask=np.zeros((N, S), dtype=bool)), ValueError,
     r"tgt_key_padding_mask has shape \(2, 5\), expected \(2, 4\)"),
    (decoder_call(memory_key_padding_mask=np.zeros((S, N), dtype=bool)), ValueError,
     "memory_key_padding_mask has shape"),
    (decoder_call(tgt_is_causal=True), ValueError, "needs attn_mask"),
    (decoder_call(tgt_mask=np.zeros((T, T))), TypeError, "tgt_mask must be bool or of"),
    (lambda: Transformer(8, 2, 1, 1, 16)(tinynet.randn(5, 2, 8), tinynet.randn(4, 3, 8)),
     ValueError, "batch number of src"),
    (lambda: Transformer(8, 2, 1, 1, 16)(tinynet.randn(5, 2, 8), tinynet.randn(4, 2, 6)),
     ValueError, "equal to d_model 8"),
    (lambda: Transformer(8, 2, 1, 1, 16)(tinynet.randn(5, 2, 8), tinynet.randn(4, 2, 8),
                                         src_mask=causal(4)),
     ValueError, r"src_mask has shape \(4, 4\), expected \(5, 5\)"),
    (lambda: Transformer(8, 2, 1, 1, 16)(tinynet.randn(5, 2, 8), tinynet.randn(4, 2, 8),
                                         src_key_padding_mask=np.zeros((2, 4), dtype=bool)),
     ValueError, "src_key_padding_mask has shape"),
    (lambda: Transformer(8, 2, 1, 1, 16)(tinynet.randn(5, 2, 8), tinynet.randn(4, 2, 8),
                                         memory_mask=causal(4)),
     ValueError, r"memory_mask has shape \(4, 4\), expected \(4, 5\)"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
