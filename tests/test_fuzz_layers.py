"""Differential fuzz of composed layers: tinynet.nn against torch.nn.

hypothesis draws an architecture: Linear -> norm (LayerNorm, BatchNorm1d in
train or eval mode, RMSNorm, none) -> activation, then residual blocks
h = h + act(norm(Linear(h))) in which one Linear (and optionally its norm) may be
used at every block (shared weights: fan-out through a module), then a Linear
head and a loss (cross_entropy or mse_loss). The same network is written once
for both libraries; tinynet's random weights and buffers are copied into the
torch twin by name (so the names must be PyTorch's), and the loss, the input's
gradient, every parameter's gradient and the updated buffers must agree to 1e-9
in float64.
"""
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tinynet

torch = pytest.importorskip("torch")

from torch_oracle import as_numpy, assert_same  # noqa: E402

NORMS = {                  # (nn, width, affine) -> module
    "layer": lambda nn, width, affine: nn.LayerNorm(width, elementwise_affine=affine),
    "batch": lambda nn, width, affine: nn.BatchNorm1d(width, affine=affine),
    "rms": lambda nn, width, affine: nn.RMSNorm(width, elementwise_affine=affine),
    "none": lambda nn, width, affine: nn.Identity(),
}
ACTIVATIONS = {
    "relu": lambda nn: nn.ReLU(),
    "tanh": lambda nn: nn.Tanh(),
    "sigmoid": lambda nn: nn.Sigmoid(),
    "gelu": lambda nn: nn.GELU(),
    "gelu_tanh": lambda nn: nn.GELU(approximate="tanh"),
    "silu": lambda nn: nn.SiLU(),
}
NEEDS = {"rms": "RMSNorm", "gelu": "GELU", "gelu_tanh": "GELU", "silu": "SiLU"}


def available(table):
    """The entries whose tinynet.nn module exists (the others are skipped)."""
    return sorted(k for k in table if k not in NEEDS or hasattr(tinynet.nn, NEEDS[k]))


@dataclass(frozen=True)
class Arch:
    batch: int
    in_features: int
    width: int
    out_features: int
    blocks: int              # residual blocks after the first layer
    norm: str
    affine: bool             # the norms' gain (and bias)
    bias: bool               # the Linear layers' bias
    activation: str
    training: bool
    shared_linear: bool      # one Linear for every block
    shared_norm: bool        # one norm for every block (with shared_linear)
    loss: str
    seed: int


@st.composite
def architectures(draw):
    norm = draw(st.sampled_from(available(NORMS)))
    batch = draw(st.integers(1, 5))
    blocks = draw(st.integers(1, 3))
    shared_linear = blocks > 1 and draw(st.booleans())
    # RMSNorm of one feature is x / sqrt(x² + ε) = ±1: its gradient ε/|x|³ is rounding noise.
    width = draw(st.integers(2 if norm == "rms" else 1, 6))
    return Arch(batch=batch, in_features=draw(st.integers(1, 5)), width=width,
                out_features=draw(st.integers(1, 4)), blocks=blocks, norm=norm,
                affine=draw(st.booleans()), bias=draw(st.booleans()),
                activation=draw(st.sampled_from(available(ACTIVATIONS))),
                # BatchNorm cannot train on one value per channel (an error, as in torch)
                training=draw(st.booleans()) and not (norm == "batch" and batch == 1),
                shared_linear=shared_linear, shared_norm=shared_linear and draw(st.booleans()),
                loss=draw(st.sampled_from(["cross_entropy", "mse_loss"])),
                seed=draw(st.integers(0, 2 ** 32 - 1)))


def build(lib, arch):
    """The architecture as a ``lib.nn.Module`` (float64); the same code for both libs."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(arch.in_features, arch.width, bias=arch.bias)
            self.norm = NORMS[arch.norm](nn, arch.width, arch.affine)
            self.act = ACTIVATIONS[arch.activation](nn)
            n_linear = 1 if arch.shared_linear else arch.blocks
            n_norms = 1 if arch.shared_norm else arch.blocks
            self.hidden = nn.ModuleList([nn.Linear(arch.width, arch.width, bias=arch.bias)
                                         for _ in range(n_linear)])
            self.hidden_norms = nn.ModuleList([NORMS[arch.norm](nn, arch.width, arch.affine)
                                               for _ in range(n_norms)])
            self.head = nn.Linear(arch.width, arch.out_features)

        def forward(self, x):
            h = self.act(self.norm(self.inp(x)))
            for k in range(arch.blocks):
                linear = self.hidden[0 if arch.shared_linear else k]
                norm = self.hidden_norms[0 if arch.shared_norm else k]
                h = h + self.act(norm(linear(h)))      # residual connection
            return self.head(h)

    return Net().double().train(arch.training)


def randomize(model, rng):
    """Random weights, and random running statistics for eval-mode BatchNorm."""
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if name.endswith("num_batches_tracked"):
            continue
        if name.endswith("running_var") or (t.ndim == 1 and name.endswith("weight")):
            values = rng.uniform(0.5, 1.5, t.shape)       # variances and norm gains
        elif t.ndim == 2:
            values = rng.uniform(-1, 1, t.shape) / np.sqrt(t.shape[1])
        else:
            values = 0.5 * rng.standard_normal(t.shape)
        t.data[...] = values


def run(lib, model, arch, x, target):
    """Loss, input gradient, parameter gradients by name, state after the step."""
    F = lib.nn.functional
    xt = lib.tensor(x, requires_grad=True)
    target = lib.tensor(target)
    loss = getattr(F, arch.loss)(model(xt), target)
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    return loss, xt.grad, grads, model.state_dict()


def assert_layers_match_torch(arch):
    missing = [NEEDS[k] for k in (arch.norm, arch.activation)
               if k in NEEDS and not hasattr(tinynet.nn, NEEDS[k])]
    if missing:
        pytest.skip(f"tinynet.nn lacks {', '.join(missing)}")
    rng = np.random.default_rng(arch.seed)
    ours_model, ref_model = build(tinynet, arch), build(torch, arch)
    randomize(ours_model, rng)
    ref_model.load_state_dict({k: torch.tensor(as_numpy(v))
                               for k, v in ours_model.state_dict().items()})
    x = rng.standard_normal((arch.batch, arch.in_features))
    target = (rng.integers(0, arch.out_features, arch.batch) if arch.loss == "cross_entropy"
              else rng.standard_normal((arch.batch, arch.out_features)))
    ours, ref = run(tinynet, ours_model, arch, x, target), run(torch, ref_model, arch, x, target)
    assert_same(ours[0], ref[0], "loss")
    assert_same(ours[1], ref[1], "input gradient")
    assert ours[2].keys() == ref[2].keys()
    for name in ref[2]:
        assert_same(ours[2][name], ref[2][name], f"gradient of {name}")
    assert ours[3].keys() == ref[3].keys()
    for name in ref[3]:
        assert_same(ours[3][name], ref[3][name], f"{name} after the forward")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(architectures())
def test_random_network_matches_torch(arch):
    assert_layers_match_torch(arch)


@pytest.mark.parametrize("norm", sorted(NORMS))
def test_shared_block_with_residual_each_norm(norm):
    """Every norm at least once, whatever hypothesis draws: a block used twice."""
    assert_layers_match_torch(Arch(batch=1 if norm != "batch" else 3, in_features=3, width=4,
                                   out_features=3, blocks=2, norm=norm, affine=True,
                                   bias=True, activation="tanh",
                                   training=True, shared_linear=True, shared_norm=True,
                                   loss="cross_entropy", seed=0))
