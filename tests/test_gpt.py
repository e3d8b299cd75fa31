"""tinynet.models.GPT against an independent PyTorch GPT (written here from torch.nn
layers), on the same float64 weights: logits, loss, every gradient, and AdamW
steps with nanoGPT's schedule and clipping."""
import math
import zipfile

import numpy as np
import pytest

import tinynet
from tinynet.models import GPT, GPTConfig

torch = pytest.importorskip("torch")
tnn = torch.nn


class TorchBlock(tnn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.pre, self.n_head = c.placement == "pre", c.n_head
        self.ln_1 = torch_norm(c)
        self.attn = tnn.Module()
        self.attn.c_attn = tnn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
        self.attn.c_proj = tnn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.ln_2 = torch_norm(c)
        self.mlp = tnn.Module()
        self.mlp.c_fc = tnn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
        self.mlp.c_proj = tnn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)

    def attention(self, x):
        b, t, ch = x.shape
        q, k, v = self.attn.c_attn(x).split(ch, dim=2)
        q, k, v = (z.view(b, t, self.n_head, ch // self.n_head).transpose(1, 2)
                   for z in (q, k, v))
        # written out, not torch's fused kernel: (q kᵀ / √d) masked, softmax, times v
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        y = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        return self.attn.c_proj(y.transpose(1, 2).reshape(b, t, ch))

    def mlp_branch(self, x):
        return self.mlp.c_proj(torch.nn.functional.gelu(self.mlp.c_fc(x)))

    def forward(self, x):
        if self.pre:
            x = x + self.attention(self.ln_1(x))
            return x + self.mlp_branch(self.ln_2(x))
        x = self.ln_1(x + self.attention(x))
        return self.ln_2(x + self.mlp_branch(x))


def torch_norm(c):
    if c.norm == "layer":
        return tnn.LayerNorm(c.n_embd, bias=c.bias)
    if c.norm == "rms":
        return tnn.RMSNorm(c.n_embd, eps=1e-5)
    return tnn.Identity()


class TorchGPT(tnn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.transformer = tnn.ModuleDict(dict(
            wte=tnn.Embedding(c.vocab_size, c.n_embd), wpe=tnn.Embedding(c.block_size, c.n_embd),
            h=tnn.ModuleList([TorchBlock(c) for _ in range(c.n_layer)]),
            ln_f=torch_norm(c) if c.placement == "pre" else tnn.Identity()))
        self.lm_head = tnn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        t = self.transformer
        x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
        for block in t.h:
            x = block(x)
        logits = self.lm_head(t.ln_f(x))
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                                 targets.view(-1), ignore_index=-1)
        return logits, loss


def small_config(**options):
    return GPTConfig(**{**dict(block_size=8, vocab_size=13, n_layer=2, n_head=2, n_embd=8),
                        **options})


def twin_models(config):
    tinynet.manual_seed(0)
    ours = GPT(config).double()
    theirs = TorchGPT(config).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def batch(config, seed=0, size=3, ignore=False):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, config.vocab_size, (size, config.block_size))
    targets = rng.integers(0, config.vocab_size, (size, config.block_size))
    if ignore:
        targets[0, :3] = -1
    return idx, targets


def assert_close(ours, theirs, what, tol=1e-10):
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=tol, atol=tol, err_msg=what)


CONFIGS = [dict(), dict(placement="post"), dict(norm="rms"), dict(norm="none"),
           dict(bias=False), dict(norm="rms", placement="post")]


@pytest.mark.parametrize("options", CONFIGS, ids=str)
def test_logits_loss_and_every_gradient_match_torch(options):
    config = small_config(**options)
    ours, theirs = twin_models(config)
    idx, targets = batch(config, ignore=True)
    logits, loss = ours(tinynet.tensor(idx), tinynet.tensor(targets))
    loss.backward()
    ref_logits, ref_loss = theirs(torch.tensor(idx), torch.tensor(targets))
    ref_loss.backward()
    assert_close(logits.numpy(), ref_logits, "logits")
    assert_close(loss.numpy(), ref_loss, "loss")
    ref_params = dict(theirs.named_parameters())
    names = [name for name, _ in ours.named_parameters()]
    assert names == list(ref_params), "parameter names or order differ from torch's"
    for name, p in ours.named_parameters():
        assert_close(p.grad.numpy(), ref_params[name].grad, f"gradient of {name}")


def nanogpt_lr(it, lr=1e-3, min_lr=1e-4, warmup=3, decay=15):
    """nanoGPT's train.py get_lr: linear warm-up, then cosine decay to min_lr."""
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay:
        return min_lr
    ratio = (it - warmup) / (decay - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_twenty_adamw_steps_with_schedule_and_clipping_match_torch(placement):
    config = small_config(placement=placement)
    ours, theirs = twin_models(config)
    optimizer = ours.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
    decay = [p for p in theirs.parameters() if p.dim() >= 2]
    no_decay = [p for p in theirs.parameters() if p.dim() < 2]
    ref_optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                       {"params": no_decay, "weight_decay": 0.0}],
                                      lr=1e-3, betas=(0.9, 0.99))
    for it in range(20):
        idx, targets = batch(config, seed=it)
        for group in optimizer.param_groups:
            group["lr"] = nanogpt_lr(it)
        for group in ref_optimizer.param_groups:
            group["lr"] = nanogpt_lr(it)
        _, loss = ours(tinynet.tensor(idx), tinynet.tensor(targets))
        loss.backward()
        norm = tinynet.nn.utils.clip_grad_norm_(ours.parameters(), 0.5)
        optimizer.step()
        optimizer.zero_grad()
        _, ref_loss = theirs(torch.tensor(idx), torch.tensor(targets))
        ref_loss.backward()
        ref_norm = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5)
        ref_optimizer.step()
        ref_optimizer.zero_grad()
        assert_close(loss.numpy(), ref_loss, f"loss at step {it}", tol=1e-9)
        assert_close(np.asarray(norm.item()), ref_norm, f"gradient norm at step {it}", tol=1e-9)
    ref_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.numpy(), ref_params[name], f"{name} after 20 steps", tol=1e-9)


def test_weight_tying_one_parameter_counted_and_saved_once(tmp_path):
    model = GPT(small_config())
    wte, head = model.transformer["wte"].weight, model.lm_head.weight
    assert wte is head
    params = list(model.parameters())
    assert sum(p is head for p in params) == 1
    assert model.get_num_params(non_embedding=False) == sum(p.numel() for p in params)
    npz, pt = tmp_path / "gpt.npz", tmp_path / "gpt.pt"
    tinynet.save(model.state_dict(), npz, format="tinynet")
    with np.load(npz) as archive:
        stored = [name for name in archive.files if archive[name].shape == tuple(head.shape)]
    assert len(stored) == 1, "the tied weight was stored more than once"
    tinynet.save(model.state_dict(), pt)                      # PyTorch's format
    with zipfile.ZipFile(pt) as archive:
        records = [i for i in archive.infolist() if i.file_size == head.numpy().nbytes]
    assert len(records) == 1, "the tied weight was stored more than once"
    for path in (npz, pt):
        other = GPT(small_config())
        other.load_state_dict(tinynet.load(path))
        assert other.transformer["wte"].weight is other.lm_head.weight
        np.testing.assert_array_equal(other.lm_head.weight.numpy(), head.numpy())


def test_gpt2_initialisation():
    config = small_config(n_embd=64, n_layer=4, vocab_size=50, block_size=32)
    model = GPT(config)
    for name, p in model.named_parameters():
        values = p.numpy()
        if name.endswith("c_proj.weight"):
            assert values.std() == pytest.approx(0.02 / math.sqrt(2 * 4), rel=0.1), name
        elif p.ndim == 2:
            assert values.std() == pytest.approx(0.02, rel=0.1), name
        elif name.endswith("bias"):
            assert not values.any(), name
        else:
            assert (values == 1).all(), name          # norm gains


def test_configure_optimizers_decays_matrices_only():
    model = GPT(small_config())
    groups = model.configure_optimizers(0.1, 1e-3).param_groups
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0]
    assert all(p.ndim >= 2 for p in groups[0]["params"])
    assert all(p.ndim < 2 for p in groups[1]["params"])
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))


def test_generation_is_repeatable_with_a_seeded_generator_and_respects_top_k():
    config = small_config()
    model = GPT(config)
    start = tinynet.tensor(np.zeros((2, 1), dtype=np.int64))

    def sample(seed, **options):
        return model.generate(start, 12, generator=tinynet.Generator().manual_seed(seed),
                              **options).numpy()
    first, again, other = sample(1), sample(1), sample(2)
    assert first.shape == (2, 13) and (first[:, 0] == 0).all()
    np.testing.assert_array_equal(first, again)
    assert (first != other).any()
    greedy = sample(3, top_k=1)
    np.testing.assert_array_equal(greedy, sample(4, top_k=1))  # top_k=1 is argmax
    # the context is cropped to block_size: generating past it still works
    assert model.generate(start, config.block_size + 3).shape == (2, config.block_size + 4)


def test_generation_does_not_record_a_graph():
    model = GPT(small_config())
    out = model.generate(tinynet.tensor(np.zeros((1, 1), dtype=np.int64)), 2)
    assert out.grad_fn is None and not out.requires_grad


@pytest.mark.parametrize("bad", [dict(norm="batch"), dict(placement="middle"),
                                 dict(n_embd=10, n_head=3), dict(n_layer=0),
                                 dict(dropout=1.0)])
def test_bad_configuration_is_named(bad):
    with pytest.raises(ValueError, match="GPTConfig"):
        small_config(**bad)


def test_too_long_a_sequence_is_an_error():
    config = small_config()
    model = GPT(config)
    with pytest.raises(ValueError, match="block_size"):
        model(tinynet.tensor(np.zeros((1, config.block_size + 1), dtype=np.int64)))


def test_dropout_is_off_in_eval_mode_and_on_in_training():
    config = small_config(dropout=0.3)
    model = GPT(config)
    idx, targets = batch(config)
    idx, targets = tinynet.tensor(idx), tinynet.tensor(targets)
    model.eval()
    a, b = model(idx, targets)[1].item(), model(idx, targets)[1].item()
    assert a == b
    model.train()
    c, d = model(idx, targets)[1].item(), model(idx, targets)[1].item()
    assert c != d
