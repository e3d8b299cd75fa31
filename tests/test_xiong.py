"""Xiong et al. (2020) in their setting: the encoder–decoder (tinynet.models.Seq2SeqTransformer),
the reversed-words task (tinynet.data.ReversedWords), the gradient measurement of their
Figure 3 (examples/xiong.py's ffn_grad_norms, against PyTorch when it is installed), the
runner, the report and the page's blocks."""
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.data import CharCorpus, ReversedWords, reverse_words
from tinynet.data.text import SAMPLE_PATH, TINYSHAKESPEARE_CHARS
from tinynet.models import GPT, GPTConfig, Seq2SeqTransformer
from tinynet.nn.utils import parameter_grad_norms
from tinynet.testing import gradcheck

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import page_blocks  # noqa: E402
import xiong  # noqa: E402
import xiong_report  # noqa: E402

TINY = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=12)


@pytest.fixture(scope="module")
def task():
    """The task on the bundled excerpt, whichever Tiny Shakespeare this machine has."""
    return ReversedWords(CharCorpus(SAMPLE_PATH, chars=TINYSHAKESPEARE_CHARS))


def tiny_model(task, norm_first=False, activation="relu", seed=0, **sizes):
    tinynet.manual_seed(seed)
    return Seq2SeqTransformer(task.vocab_size, **dict(TINY, **sizes), activation=activation,
                              norm_first=norm_first, dtype=np.float64)


def tensors(arrays):
    return tuple(tinynet.tensor(a) for a in arrays)


# ------------------------------------------------------------------------ the task

def test_reverse_words_reverses_the_order_and_keeps_each_word():
    assert reverse_words("First Citizen:") == "Citizen: First"
    assert reverse_words("  a  b\tc ") == "c b a"
    assert reverse_words("one") == "one"


def test_a_batch_pads_at_the_end_and_shifts_the_target(task):
    lines = ["To be, or not", "Ay me"]
    src, tgt_in, tgt_out = task.batch(lines)
    assert src.dtype == tgt_in.dtype == tgt_out.dtype == np.int64
    assert src.shape == (2, len(lines[0]) + 1) and tgt_in.shape == tgt_out.shape == src.shape
    assert [task.decode(r) for r in src] == lines
    assert [task.decode(r) for r in tgt_out] == ["not or be, To", "me Ay"]
    assert (tgt_in[:, 0] == task.bos_idx).all()
    shifted = tgt_in[:, 1:] != task.pad_idx
    assert (tgt_in[:, 1:] == tgt_out[:, :-1])[shifted].all() and shifted[1].sum() == 5
    assert src[1, len(lines[1])] == task.eos_idx and (src[1, len(lines[1]) + 1:] == 0).all()
    assert task.vocab_size == 68 and task.pad_idx == 0


def test_lines_split_in_order_and_batches_repeat_with_their_seed(task):
    train, val = task.lines["train"], task.lines["val"]
    assert train[0] == "First Citizen:" and len(train) == int(0.9 * (len(train) + len(val)))
    assert all(len(line.split()) >= 2 and len(line) <= 64 for line in train + val)
    first = task.get_batch("train", 5, 7, as_numpy=True)
    again = task.get_batch("train", 5, np.random.default_rng(7), as_numpy=True)
    other = task.get_batch("train", 5, 8, as_numpy=True)
    assert all((a == b).all() for a, b in zip(first, again, strict=True))
    assert first[0].shape != other[0].shape or (first[0] != other[0]).any()
    with pytest.raises(ValueError, match="split"):
        task.get_batch("test", 2, 0)


def test_characters_outside_tiny_shakespeare_are_refused(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("Où est le roi\nHere he is\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not Tiny"):
        ReversedWords(CharCorpus(path))


# ------------------------------------------------------------------------ the model

def test_shapes_loss_and_the_two_placements(task):
    src, tgt_in, tgt_out = tensors(task.batch(["a b c", "Then go, my lord"]))
    for norm_first in (False, True):
        model = tiny_model(task, norm_first)
        logits, loss = model(src, tgt_in, tgt_out)
        assert logits.shape == (2, tgt_in.shape[1], task.vocab_size) and loss.ndim == 0
        real = tgt_out.numpy() != 0
        scores = logits.numpy()
        log_p = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
        picked = np.take_along_axis(log_p, tgt_out.numpy()[..., None], -1)[..., 0]
        assert loss.item() == pytest.approx(-picked[real].mean(), rel=1e-12)
        stacks = model.transformer.encoder, model.transformer.decoder
        assert all((s.norm is not None) == norm_first for s in stacks)
        assert [len(v) for v in model.ffn_layers().values()] == [2, 3]


def test_xavier_on_the_matrices_and_embeddings_of_variance_one_over_d(task):
    model = tiny_model(task, d_model=16, dim_feedforward=64)
    for name, p in model.named_parameters():
        if p.ndim == 2 and "tok_emb" not in name:
            assert np.abs(p.numpy()).max() <= math.sqrt(6 / sum(p.shape)), name
    emb = model.src_tok_emb.weight.numpy()
    assert emb.std() == pytest.approx(16 ** -0.5, rel=0.1)
    assert all((p.numpy() == 0).all() for n, p in model.named_parameters() if n.endswith("bias"))


def test_source_padding_and_later_targets_do_not_change_the_logits(task):
    model = tiny_model(task, norm_first=True)
    src, tgt_in, _ = task.batch(["Go, my lord", "Ay"])
    logits = model(*tensors((src, tgt_in)))[0].numpy()
    longer = np.concatenate([src, np.zeros((2, 3), np.int64)], axis=1)
    assert np.allclose(model(*tensors((longer, tgt_in)))[0].numpy(), logits, atol=1e-12)
    changed = tgt_in.copy()
    changed[:, 4:] = 7
    after = model(*tensors((src, changed)))[0].numpy()
    assert np.allclose(after[:, :4], logits[:, :4], atol=1e-12)
    assert not np.allclose(after[:, 4:], logits[:, 4:])
    with pytest.raises(ValueError, match="same N"):
        model(*tensors((src, tgt_in[:1])))


def test_gradients_of_the_ffn_weights_by_finite_differences(task):
    model = tiny_model(task, d_model=4, nhead=1, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=3)
    src, tgt_in, tgt_out = tensors(task.batch(["Go, my lord", "Ay me"]))
    layer = model.transformer.decoder.layers[0]
    assert gradcheck(lambda w1, w2, emb: model(src, tgt_in, tgt_out)[1],
                     [layer.linear1.weight, layer.linear2.weight,
                      model.transformer.encoder.layers[0].linear1.weight], atol=1e-7)


# ------------------------------------------------------------------ the measurement

def test_the_measurement_is_the_norm_of_the_gradient_averaged_over_batches(task):
    model = tiny_model(task)
    batches = [tensors(task.get_batch("train", 3, s, as_numpy=True)) for s in (0, 1)]
    norms = xiong.ffn_grad_norms(model, batches)
    assert list(norms) == ["encoder", "decoder"]
    assert [len(v) for v in norms.values()] == [2, 3]
    grads = []
    for batch in batches:
        model.zero_grad()
        model(*batch)[1].backward()
        grads.append({n: p.grad.numpy() for n, p in model.named_parameters()})
    for name, (stack, layer, w) in {"transformer.encoder.layers.1.linear1.weight":
                                    ("encoder", 1, 0),
                                    "transformer.decoder.layers.2.linear2.weight":
                                    ("decoder", 2, 1)}.items():
        mean = (grads[0][name] + grads[1][name]) / 2
        assert norms[stack][layer][w] == pytest.approx(np.linalg.norm(mean), rel=1e-12)
        assert norms[stack][layer][w] < np.mean([np.linalg.norm(g[name]) for g in grads])
    single = xiong.ffn_grad_norms(model, batches[1:])
    assert single["decoder"][2][1] == pytest.approx(
        parameter_grad_norms(model)["transformer.decoder.layers.2.linear2.weight"], rel=1e-12)


def test_the_gpt_measurement_reads_its_mlp_weights():
    tinynet.manual_seed(0)
    model = GPT(GPTConfig(block_size=6, vocab_size=9, n_layer=3, n_head=2, n_embd=8)).double()
    idx = tinynet.tensor(np.random.default_rng(0).integers(0, 9, (2, 6)))
    norms = xiong.ffn_grad_norms(model, [(idx, idx)])
    by_name = parameter_grad_norms(model)
    assert norms["decoder"][1] == pytest.approx(
        [by_name["transformer.h.1.mlp.c_fc.weight"],
         by_name["transformer.h.1.mlp.c_proj.weight"]], rel=1e-12)


def torch_twin(model, torch):
    """The same encoder–decoder in PyTorch, with model's weights: torch.nn.Transformer's
    layers, its own embedding, sinusoids and loss."""
    first = model.transformer.encoder.layers[0]
    d, nf = model.d_model, model.norm_first
    act = "relu" if first.activation is nn.functional.relu else "gelu"
    options = dict(d_model=d, nhead=first.self_attn.num_heads, dropout=0.0, activation=act,
                   dim_feedforward=first.linear1.out_features, batch_first=True,
                   norm_first=nf, dtype=torch.float64)
    encoder = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(**options), len(model.transformer.encoder.layers),
        torch.nn.LayerNorm(d, dtype=torch.float64) if nf else None, enable_nested_tensor=False)
    decoder = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(**options), len(model.transformer.decoder.layers),
        torch.nn.LayerNorm(d, dtype=torch.float64) if nf else None)
    twin = torch.nn.Module()
    twin.transformer = torch.nn.Transformer(d, first.self_attn.num_heads, custom_encoder=encoder,
                                            custom_decoder=decoder, batch_first=True)
    vocab = model.generator.out_features
    twin.src_tok_emb = torch.nn.Embedding(vocab, d, dtype=torch.float64)
    twin.tgt_tok_emb = torch.nn.Embedding(vocab, d, dtype=torch.float64)
    twin.generator = torch.nn.Linear(d, vocab, dtype=torch.float64)
    twin.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    return twin


def torch_norms(twin, batches, torch):
    d = twin.generator.in_features
    stacks = {"encoder": twin.transformer.encoder, "decoder": twin.transformer.decoder}

    def embed(embedding, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.float64)[:, None]
        angle = pos / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
        table = torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(len(pos), d)
        return embedding(ids) * d ** 0.5 + table

    grads = {k: [[0.0, 0.0] for _ in s.layers] for k, s in stacks.items()}
    for src, tgt_in, tgt_out in batches:
        src, tgt_in, tgt_out = (torch.tensor(a.numpy()) for a in (src, tgt_in, tgt_out))
        twin.zero_grad()
        mask = torch.nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1],
                                                                    dtype=torch.float64)
        out = twin.transformer(embed(twin.src_tok_emb, src), embed(twin.tgt_tok_emb, tgt_in),
                               tgt_mask=mask, src_key_padding_mask=src == 0,
                               memory_key_padding_mask=src == 0)
        logits = twin.generator(out)
        torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                          tgt_out.reshape(-1), ignore_index=0).backward()
        for k, s in stacks.items():
            for i, layer in enumerate(s.layers):
                grads[k][i][0] += layer.linear1.weight.grad.clone() / len(batches)
                grads[k][i][1] += layer.linear2.weight.grad.clone() / len(batches)
    return {k: [[float(torch.linalg.matrix_norm(g)) for g in pair] for pair in layers]
            for k, layers in grads.items()}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "relu"),
                                                    (False, "gelu")])
def test_the_measurement_against_pytorch(task, norm_first, activation):
    torch = pytest.importorskip("torch")
    model = tiny_model(task, norm_first, activation)
    batches = [tensors(task.get_batch("train", 3, s, as_numpy=True)) for s in (0, 1, 2)]
    ours = xiong.ffn_grad_norms(model, batches)
    theirs = torch_norms(torch_twin(model, torch), batches, torch)
    for stack in ("encoder", "decoder"):
        np.testing.assert_allclose(ours[stack], theirs[stack], rtol=1e-10, err_msg=stack)


# -------------------------------------------------------- the runner and the report

def test_the_runner_skips_what_it_has_and_the_records_read_back(tmp_path, task):
    corpus = CharCorpus(SAMPLE_PATH, chars=TINYSHAKESPEARE_CHARS)
    config = dict(model="gpt", n_embd=8, n_head=2, n_layer=2, block_size=6, batch_size=2,
                  batches=1, dtype="float64", norm_first=False, activation="relu",
                  init="xavier", seed=0)
    calls = []

    def work(c):
        calls.append(c)
        return xiong.measure(c, task, corpus)

    first = xiong.run_part("gpt", [config], str(tmp_path), work, log=lambda _: None)
    again = xiong.run_part("gpt", [config, dict(config, seed=1)], str(tmp_path), work,
                           log=lambda _: None)
    assert len(calls) == 2 and calls[1]["seed"] == 1
    assert again[0] == first[0] == xiong.read_records(tmp_path / "gpt.jsonl")[0]
    assert len(again[0]["norms"]["decoder"]) == 2 and again[0]["data"] == "excerpt"


def test_training_lowers_the_loss_and_keeps_a_curve(task):
    config = dict(xiong.TRAIN, d_model=8, nhead=2, dim_feedforward=12, layers=1,
                  batch_size=8, steps=4, eval_every=2, warmup=2, lr=3e-3, eval_lines=16,
                  seed=0, norm_first=True, activation="relu", dtype="float32")
    record = xiong.train(config, task, log=lambda _: None)
    assert [row[0] for row in record["curve"]] == [0, 2, 4]
    assert record["final"][2] < record["curve"][0][2]
    json.dumps(record)
    assert xiong.learning_rate(0, config) == pytest.approx(config["lr"] / 2)
    assert xiong.learning_rate(5, config) == config["lr"]


@pytest.mark.skipif(tinynet.cuda_is_available(), reason="a GPU is here: cuda would run")
def test_device_cuda_without_cupy_or_a_gpu_stops_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        xiong.main(["--device", "cuda", "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "device 'cuda' needs CuPy" in error or "no CUDA GPU is available" in error
    assert not (tmp_path / "out").exists()


def fake_records():
    def norms(layers, growth):
        return {s: [[growth ** i, 2 * growth ** i] for i in range(layers)]
                for s in ("encoder", "decoder")}
    grad = [dict(model="seq2seq", layers=2, norm_first=nf, activation="relu", seed=s,
                 norms=norms(2, 3.0 if not nf else 0.5 + s), seconds=1.0)
            for nf in (False, True) for s in (0, 1)]
    depth = [dict(r, layers=4, norms=norms(4, 3.0 if not r["norm_first"] else 0.5))
             for r in grad]
    gpt = [dict(model="gpt", init="xavier", activation=a, norm_first=nf, seed=0,
                norms={"decoder": norms(2, 1.5)["decoder"]}, seconds=1.0)
           for a in ("gelu", "relu") for nf in (False, True)]
    train = [dict(norm_first=nf, warmup=w, seed=s, seconds=120.0,
                  curve=[[0, None, 4.0, 0.0], [50, 3.0, 2.9, 0.2], [100, 2.0, 2.1 + s, 0.4]],
                  final=[100, 2.0, 2.1 + s, 0.4])
             for nf, w in ((False, 10), (False, 0), (True, 0)) for s in (0, 1)]
    return dict(grad=grad, depth=depth, gpt=gpt, train=train)


def test_the_report_tables_from_fake_records():
    records = fake_records()
    figure3 = xiong_report.figure3_block(records["grad"])
    assert "| Post-LN | decoder | W¹ | 3.00 |" in figure3
    assert "| Pre-LN | encoder | W² | 1.00 (0.50–1.50) |" in figure3
    depth = xiong_report.depth_block(records["grad"], records["depth"])
    assert "| Post-LN | decoder | W¹ | 9.00 |" in depth and "4 + 4 over 2 + 2" in depth
    gpt = xiong_report.gpt_block(records["gpt"])
    assert "| GPT (decoder only) | ReLU | Xavier | 1.50 | 1.50 | 1.50 | 1.50 |" in gpt
    warm = xiong_report.warmup_block(records["train"])
    assert "| Post-LN, warm-up 10 | 0–1 | 2.90 | 2.60 (2.10–3.10) |" in warm


def test_the_report_rewrites_its_blocks_and_draws_the_figures(tmp_path, capsys):
    folder = tmp_path / "runs" / "xiong"
    folder.mkdir(parents=True)
    for part, records in fake_records().items():
        (folder / f"{part}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    page = tmp_path / "page.md"
    page.write_text("Intro\n" + "".join(f"<!-- xiong_report: {b} -->\nold\n"
                                        f"<!-- /xiong_report: {b} -->\n"
                                        for b in xiong_report.BLOCKS))
    figures = tmp_path / "figures"
    argv = ["--runs", str(tmp_path / "runs"), "--page", str(page), "--figures", str(figures)]
    assert xiong_report.main(argv) == 0
    text = page.read_text()
    assert "old" not in text and "](figures/xiong_grad_norms.png)" in text
    assert (figures / "xiong_grad_norms.png").stat().st_size > 1000
    assert (figures / "xiong_warmup.png").stat().st_size > 1000
    (folder / "train.jsonl").unlink()
    page.write_text(text.replace("Intro", "Intro!"))
    assert xiong_report.main(argv) == 0
    assert "warmup: no results" in capsys.readouterr().out
    assert page_blocks.block_text(page.read_text(), "xiong_report", "warmup") == \
        page_blocks.block_text(text, "xiong_report", "warmup")


# ---------------------------------------------------------------- the page and make

def test_the_page_holds_the_reports_blocks_after_the_make_target():
    text = (ROOT / xiong_report.PAGE).read_text(encoding="utf-8")
    assert page_blocks.find_blocks(text, xiong_report.TAG) == list(xiong_report.BLOCKS)
    first = text.index(page_blocks.markers(xiong_report.TAG, "figure3")[0])
    assert "make experiments-xiong" in text[:first]
    for name in xiong_report.BLOCKS:
        block = page_blocks.block_text(text, xiong_report.TAG, name)
        tables = [t.splitlines() for t in block.split("\n\n") if t.strip().startswith("|")]
        assert tables, name
        for table in tables:
            assert len(table) >= 3 and re.fullmatch(r"\|(---\|)+", table[1]), name
            assert len({line.count("|") for line in table}) == 1, name
    for figure in ("xiong_grad_norms.png", "xiong_warmup.png"):
        assert f"(figures/{figure})" in text and (ROOT / "docs" / "figures" / figure).exists()


def test_the_make_target_runs_the_experiment_and_the_report():
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"^EXPERIMENTS := (.*?)(?<!\\)$", makefile, re.M | re.S)[1]
    assert "experiments-xiong" in listed.replace("\\\n", " ").split()
    recipe = makefile.split("\nexperiments-xiong:")[1].split("\n\n")[0]
    text = (ROOT / xiong_report.PAGE).read_text(encoding="utf-8")
    commands = [line.strip().replace("$(PY)", "python").replace("$(RUNS)", "runs")
                for line in recipe.splitlines()[1:]]
    assert any("examples/xiong.py" in c for c in commands)
    assert any("examples/xiong_report.py" in c for c in commands)
    assert all(c in text for c in commands)
    assert "examples/xiong_report.py" in makefile.split("\npages:")[1].split("\n\n")[0]
    assert os.path.exists(ROOT / "examples" / "xiong.py")
