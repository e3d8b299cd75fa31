"""tinynet.models.CharLSTM, char-rnn's LSTM language model (plain and LN-LSTM), with
the GPT's calling convention; the shared sampling loop; matching a parameter count."""
import numpy as np
import pytest

import tinynet
from tinynet import testing
from tinynet.models import GPT, CharLSTM, GPTConfig
from tinynet.models.char_lstm import lstm_params, match_hidden_size
from tinynet.models.generation import generate
from tinynet.nn import functional as F

NORMS = [None, "layer"]
norm_ids = pytest.mark.parametrize("norm", NORMS, ids=["lstm", "ln-lstm"])


def tiny_model(norm=None, vocab=7, hidden=5, layers=1, embedding_dim=None, seed=0):
    tinynet.manual_seed(seed)
    return CharLSTM(vocab, hidden, layers, norm=norm, embedding_dim=embedding_dim).double()


def tokens(shape, vocab=7, seed=0):
    return tinynet.tensor(np.random.default_rng(seed).integers(0, vocab, shape))


# ------------------------------------------------------------------ forward

@norm_ids
@pytest.mark.parametrize("layers", [1, 2])
def test_shapes_follow_the_gpt_convention(norm, layers):
    model = tiny_model(norm, layers=layers)
    idx = tokens((3, 6))
    logits, loss = model(idx)
    assert logits.shape == (3, 1, 7) and loss is None          # the last position only
    logits, loss = model(idx, tokens((3, 6), seed=1))
    assert logits.shape == (3, 6, 7) and loss.shape == ()      # every position
    np.testing.assert_allclose(model(idx)[0].numpy(), logits.numpy()[:, -1:, :], rtol=1e-12)
    with pytest.raises(ValueError, match="token ids"):
        model(tinynet.tensor(np.zeros(4, dtype=np.int64)))


@norm_ids
def test_the_loss_is_the_cross_entropy_of_its_logits_ignoring_minus_one(norm):
    model = tiny_model(norm)
    idx, targets = tokens((2, 5)), tokens((2, 5), seed=1).numpy().copy()
    targets[0, :2] = -1
    logits, loss = model(idx, tinynet.tensor(targets))
    expected = F.cross_entropy(logits.reshape(-1, 7), tinynet.tensor(targets.reshape(-1)),
                               ignore_index=-1)
    assert loss.item() == expected.item()
    z = logits.numpy().reshape(-1, 7)              # and by hand: −log softmax at the target
    log_p = z - z.max(1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
    kept = targets.reshape(-1) >= 0
    by_hand = -log_p[kept, targets.reshape(-1)[kept]].mean()
    assert loss.item() == pytest.approx(by_hand, rel=1e-12)


def test_a_plain_char_lstm_matches_torch_logits_loss_and_gradients():
    torch = pytest.importorskip("torch")
    model = tiny_model(None, layers=2, embedding_dim=3)
    ref = torch.nn.Module()
    ref.embed = torch.nn.Embedding(7, 3)
    ref.lstm = torch.nn.LSTM(3, 5, 2, batch_first=True)
    ref.head = torch.nn.Linear(5, 7)
    ref = ref.double()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    idx, targets = tokens((3, 6)), tokens((3, 6), seed=1)
    logits, loss = model(idx, targets)
    loss.backward()
    t_idx = torch.tensor(idx.numpy())
    ref_logits = ref.head(ref.lstm(ref.embed(t_idx))[0])
    ref_loss = torch.nn.functional.cross_entropy(ref_logits.reshape(-1, 7),
                                                 torch.tensor(targets.numpy()).reshape(-1))
    ref_loss.backward()
    np.testing.assert_allclose(logits.numpy(), ref_logits.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-12)
    ref_params = dict(ref.named_parameters())
    assert [n for n, _ in model.named_parameters()] == list(ref_params)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref_params[name].grad.numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


@pytest.mark.parametrize("norm, layers", [(None, 2), ("layer", 1), ("layer", 2)],
                         ids=["lstm-2", "ln-lstm-1", "ln-lstm-2"])
def test_gradcheck_of_the_loss_in_every_parameter(norm, layers):
    model = tiny_model(norm, vocab=5, hidden=3, layers=layers, embedding_dim=2)
    idx, targets = tokens((2, 4), vocab=5), tokens((2, 4), vocab=5, seed=1).numpy().copy()
    targets[1, 0] = -1
    targets = tinynet.tensor(targets)
    params = list(model.parameters())
    assert testing.gradcheck(lambda *_: model(idx, targets)[1], params)


def test_gradcheck_of_the_last_logits():
    model = tiny_model("layer", vocab=4, hidden=3, embedding_dim=2)
    idx = tokens((2, 3), vocab=4)
    assert testing.gradcheck(lambda *_: model(idx)[0], list(model.parameters()))


# ------------------------------------------------------------------ causality

@norm_ids
@pytest.mark.parametrize("layers", [1, 2])
def test_changing_later_tokens_leaves_earlier_logits_unchanged(norm, layers):
    model = tiny_model(norm, vocab=11, hidden=6, layers=layers)
    idx = tokens((3, 10), vocab=11).numpy()
    full = model(tinynet.tensor(idx), tinynet.tensor(idx))[0].numpy()
    rng = np.random.default_rng(5)
    for t in range(9):
        changed = idx.copy()
        changed[:, t + 1:] = (idx[:, t + 1:] + rng.integers(1, 11, idx[:, t + 1:].shape)) % 11
        logits = model(tinynet.tensor(changed), tinynet.tensor(changed))[0].numpy()
        np.testing.assert_array_equal(logits[:, :t + 1], full[:, :t + 1], err_msg=f"t={t}")
        assert (logits[:, t + 1:] != full[:, t + 1:]).any()          # the future did change


@norm_ids
def test_check_causal_passes(norm):
    if not hasattr(testing, "check_causal"):
        pytest.skip("tinynet.testing has no check_causal")
    model = tiny_model(norm, vocab=11, hidden=6, layers=2)
    assert testing.check_causal(lambda idx: model(idx, targets=idx)[0], tokens((2, 8), 11))


# ------------------------------------------------------------------ generation

@norm_ids
def test_generation_is_repeatable_with_a_seeded_generator_and_respects_top_k(norm):
    model = tiny_model(norm, vocab=9, hidden=8)
    start = tinynet.tensor(np.zeros((2, 1), dtype=np.int64))

    def sample(seed, **options):
        return model.generate(start, 30, generator=tinynet.Generator().manual_seed(seed),
                              **options).numpy()
    first, again, other = sample(1), sample(1), sample(2)
    assert first.shape == (2, 31) and (first[:, 0] == 0).all()
    np.testing.assert_array_equal(first, again)
    assert (first != other).any()
    np.testing.assert_array_equal(sample(3, top_k=1), sample(4, top_k=1))    # argmax
    with pytest.raises(ValueError, match="temperature"):
        model.generate(start, 1, temperature=0)


def test_generation_does_not_record_a_graph():
    model = tiny_model("layer")
    out = model.generate(tinynet.tensor(np.zeros((1, 1), dtype=np.int64)), 3)
    assert out.grad_fn is None and not out.requires_grad


@norm_ids
def test_the_carried_state_gives_the_logits_of_reading_everything_again(norm):
    """CharLSTM.generate steps its (h, c); reading the whole text at every step (the
    GPT's way) draws the same tokens from the same generator."""
    model = tiny_model(norm, vocab=9, hidden=8, layers=2)
    prompt = tokens((2, 3), vocab=9)

    def rereading(idx):
        return model(idx)[0][:, -1, :]
    stepped = model.generate(prompt, 25, temperature=0.7, top_k=5,
                             generator=tinynet.Generator().manual_seed(7)).numpy()
    again = generate(rereading, prompt, 25, temperature=0.7, top_k=5,
                     generator=tinynet.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(stepped, again)
    next_logits = model.next_logits()
    for length in (3, 4, 9):
        ids = tinynet.tensor(stepped[:, :length])
        np.testing.assert_allclose(next_logits(ids).numpy(), rereading(ids).numpy(),
                                   rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------ parameters and optimizer

@pytest.mark.parametrize("vocab, hidden, layers, norm, embedding_dim", [
    (7, 5, 1, None, None), (7, 5, 2, "layer", 3), (65, 31, 3, None, 10), (65, 1, 1, "layer", 1)])
def test_the_closed_form_count_is_the_models(vocab, hidden, layers, norm, embedding_dim):
    model = CharLSTM(vocab, hidden, layers, norm=norm, embedding_dim=embedding_dim)
    count = sum(p.numel() for p in model.parameters())
    assert lstm_params(vocab, hidden, layers, norm, embedding_dim) == count
    assert model.get_num_params() == model.get_num_params(non_embedding=False) == count


GPT_SIZES = {"cpu": dict(n_layer=4, n_head=4, n_embd=128, block_size=64, bias=False),
             "tiny": dict(n_layer=2, n_head=2, n_embd=32, block_size=32, bias=False)}


@pytest.mark.parametrize("preset", sorted(GPT_SIZES))
@pytest.mark.parametrize("norm", NORMS, ids=["lstm", "ln-lstm"])
@pytest.mark.parametrize("layers", [1, 2])
def test_the_matched_hidden_size_gives_the_gpts_count_within_ten_percent(preset, norm, layers):
    target = GPT(GPTConfig(vocab_size=65, **GPT_SIZES[preset])).get_num_params()
    hidden = match_hidden_size(target, 65, layers, norm)
    count = CharLSTM(65, hidden, layers, norm=norm).get_num_params()
    assert abs(count - target) <= 0.1 * target
    neighbours = [lstm_params(65, h, layers, norm) for h in (hidden - 1, hidden + 1)]
    assert all(abs(n - target) >= abs(count - target) for n in neighbours)   # the closest
    if preset == "cpu":                          # nanoGPT's 0.80M
        assert round(target / 1e6, 2) == 0.80 and round(count / 1e6, 2) in (0.79, 0.80, 0.81)


def test_a_count_no_hidden_size_can_match_is_an_error():
    with pytest.raises(ValueError, match="within 10%"):
        match_hidden_size(10, 65)
    with pytest.raises(ValueError, match="positive"):
        match_hidden_size(0, 65)
    assert match_hidden_size(lstm_params(65, 1), 65) == 1


def test_configure_optimizers_decays_matrices_only():
    model = CharLSTM(9, 4, 2, norm="layer")
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
    groups = optimizer.param_groups
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0]
    assert all(p.ndim >= 2 for p in groups[0]["params"])
    assert all(p.ndim < 2 for p in groups[1]["params"])
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
    assert groups[0]["betas"] == (0.9, 0.99) and groups[0]["lr"] == 1e-3


def test_the_configuration_rebuilds_the_model_and_bad_norms_are_named():
    model = CharLSTM(9, 4, 2, norm="layer", embedding_dim=3, dropout=0.1)
    twin = CharLSTM(**model.get_config())
    assert model.get_config() == dict(vocab_size=9, hidden_size=4, num_layers=2, norm="layer",
                                      embedding_dim=3, dropout=0.1)
    twin.load_state_dict(model.state_dict())
    for bad in ("batch", "none", "rms"):
        with pytest.raises(ValueError, match="norm must be one of"):
            CharLSTM(9, 4, norm=bad)
