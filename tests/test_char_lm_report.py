"""examples/char_lm_report.py on small fake sweep results: tables, figures, page markers."""
import json
import math
import os
import sys
from dataclasses import asdict

import pytest

import tinynet
from tinynet.data.text import SAMPLE_PATH, CharCorpus
from tinynet.models import GPT, GPTConfig

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import char_lm_report  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
INTRO = "# Transformers\n\nSome prose before.\n\n"
OUTRO = "\n\nSome prose after, with <!-- an unrelated comment -->.\n"


def record(seed, val, train=None, early=(2.6, 2.3), **config) -> dict:
    """A result as examples/char_lm_sweep.py writes it (its curve ends at ``val``)."""
    train = val - 0.1 if train is None else train
    base = dict(preset="cpu", model="gpt", norm="layer", placement="pre", norm_axis="features",
                n_layer=4, warmup_iters=100, max_iters=1000, lr_decay_iters=1000,
                eval_interval=250, eval_iters=20, seed=seed, device="cpu",
                data="bundled excerpt")
    base.update(config)
    curve = [[0, 4.2, 4.2, 1e-5], [250, early[0] - 0.05, early[0], 9e-4],
             [500, early[1] - 0.05, early[1], 7e-4], [750, 2.1, 2.1, 4e-4],
             [1000, train, val, 1e-4]]
    return dict(base, params=795904 + 10 * base["n_layer"], curve=curve, final_train_loss=train,
                final_val_loss=val, best_val_loss=min(v for _, _, v, _ in curve),
                median_iteration_ms=100.0 + seed, train_seconds=60.0, description="fake")


def write_grid(runs, grid, records) -> None:
    os.makedirs(runs / f"exp-{grid}", exist_ok=True)
    with open(runs / f"exp-{grid}" / "results.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith(f"| {first_cell} |")]


@pytest.fixture
def setup(tmp_path):
    runs = tmp_path / "runs"
    write_grid(runs, "placement", [
        record(0, 1.90, placement="pre", warmup_iters=100, n_layer=6),
        record(1, 1.94, placement="pre", warmup_iters=100, n_layer=6),
        record(0, 2.40, placement="post", warmup_iters=0, n_layer=6, early=(3.0, 2.9)),
        record(1, math.nan, train=math.nan, placement="post", warmup_iters=0, n_layer=6,
               early=(3.4, math.inf))])
    write_grid(runs, "norm", [record(s, 1.9 + s / 50, norm=n) for n in ("layer", "rms")
                              for s in (0, 1)])
    write_grid(runs, "time-axis", [record(s, v, norm_axis=a) for a, v in
                                   (("features", 1.9), ("time", 1.7)) for s in (0, 1)])
    page = tmp_path / "docs" / "transformers.md"
    page.parent.mkdir()
    page.write_text(INTRO + "<!-- char_lm_report: placement -->\nstale table\n"
                    "<!-- /char_lm_report: placement -->\n\nBetween.\n\n"
                    "<!-- char_lm_report: time-axis -->\n<!-- /char_lm_report: time-axis -->"
                    + OUTRO)
    argv = ["--runs", str(runs), "--page", str(page), "--figures", str(page.parent / "figures")]
    return runs, page, argv


def test_page_tables_and_figures(setup, capsys):
    runs, page, argv = setup
    assert char_lm_report.main(argv) == 0
    out, text = capsys.readouterr().out, page.read_text()
    assert text.startswith(INTRO + "<!-- char_lm_report: placement -->\n")
    assert text.endswith("<!-- /char_lm_report: time-axis -->" + OUTRO)
    assert "\n<!-- /char_lm_report: placement -->\n\nBetween.\n\n" in text
    assert "stale table" not in text
    assert "![Validation loss of the placement grid](figures/char_lm_placement.png)" in text

    pre, post = table_rows(text, "pre")[0], table_rows(text, "post")[0]
    # placement, warm-up, layers, seeds, params, val @ 250, val @ 500, val, spread, train, ms
    assert pre[:5] == ["pre", "100", "6", "2", "795,964"]
    assert pre[5:11] == ["2.6000", "2.3000", "1.9200", "0.0400", "1.8200", "100.5"]
    assert pre[-1] == ""
    assert post[5:7] == ["3.2000", "inf"]
    assert post[7:9] == ["nan", "nan"] and post[-1] == "diverged (1 of 2 seeds)"
    features, time = table_rows(text, "features")[0], table_rows(text, "time")[0]
    assert features[-4:] == ["-", "-", "-", ""] and time[3] == "1.7000"
    assert "time-axis: prefix-only loss: not computed" in out
    assert "partial: 2 of 8 configurations, 4 runs" in out and "*partial: 2 of 8" in text

    # no markers for norm: its table is printed; no results for lstm: reported
    assert "has no <!-- char_lm_report: norm --> markers" in out
    assert [r[:4] for r in table_rows(out, "layer")] == [["layer", "2", "795,944", "1.9100"]]
    assert table_rows(out, "rms")[0][4] == "0.0200"
    assert "lstm: no results" in out
    for grid in ("placement", "norm", "time-axis"):
        assert (page.parent / "figures" / f"char_lm_{grid}.png").read_bytes()[:8] == PNG
    assert not (page.parent / "figures" / "char_lm_lstm.png").exists()

    char_lm_report.main(argv)                                 # regenerated: the same page
    assert page.read_text() == text


def test_missing_page_is_an_error(setup):
    _, page, argv = setup
    page.unlink()
    with pytest.raises(SystemExit):
        char_lm_report.main(argv)


def test_prefix_only_loss_from_checkpoints(tmp_path, monkeypatch):
    """A causal model scores the same from its prefixes; the time-axis norm does not."""
    monkeypatch.setenv("HOME", str(tmp_path))                 # the data: the bundled excerpt
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "no-data"))
    vocab = CharCorpus(SAMPLE_PATH).vocab_size
    records = []
    for axis in ("features", "time"):
        config = GPTConfig(block_size=16, vocab_size=vocab, n_layer=1, n_head=2, n_embd=16,
                           bias=False, norm_axis=axis)
        tinynet.manual_seed(0)
        tinynet.save({"model": GPT(config).state_dict(), "config": {"model": "gpt",
                                                                     **asdict(config)}},
                     tmp_path / f"{axis}.npz")
        records.append(dict(record(0, 2.0, norm_axis=axis), checkpoint=f"{axis}.npz"))
    rows = char_lm_report.summarize(records, "time-axis")
    assert char_lm_report.add_prefix_scores(rows, str(tmp_path), None) is None
    features, time = (row["runs"][0] for row in rows)
    assert features["causal"] and not time["causal"]
    assert features["prefix_only"] == pytest.approx(features["teacher_forced"], abs=1e-5)
    assert abs(time["prefix_only"] - time["teacher_forced"]) > 1e-4
    text = char_lm_report.table(rows, "time-axis")
    assert table_rows(text, "features")[0][-2] == "yes"
    assert table_rows(text, "time")[0][-2] == "no"
