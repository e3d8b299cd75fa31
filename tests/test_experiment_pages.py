"""The generated blocks of the experiment pages: examples/page_blocks.py (the markers),
the report steps of examples/experiments_report.py, data_parallel_report.py and
gpt_report.py on small fake results, and the committed pages and Makefile targets that
produce them."""
import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import char_lm_report  # noqa: E402
import data_parallel_report  # noqa: E402
import data_parallel_sweep  # noqa: E402
import experiments_report  # noqa: E402
import gpt_report  # noqa: E402
import page_blocks  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
TEXT = ("# Page\n\nProse before, with <!-- doctest: skip (a comment) -->.\n\n"
        "<!-- r: one -->\nold one\n<!-- /r: one -->\n\nBetween.\n\n"
        "<!-- other: one -->\nnot ours\n<!-- /other: one -->\n\n"
        "<!-- r: two --><!-- /r: two -->\nProse after.\n")


def flat(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as single spaces."""
    return " ".join(text.split())


def rows_of(text: str, first_cell: str) -> list[list[str]]:
    """The cells of the table rows of ``text`` that start with ``first_cell``."""
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith(f"| {first_cell} |")]


# ------------------------------------------------------------------ the markers

def test_replace_block_changes_only_the_text_between_its_markers():
    text = page_blocks.replace_block(TEXT, "r", "one", "NEW")
    assert text == TEXT.replace("<!-- r: one -->\nold one\n", "<!-- r: one -->\nNEW\n")
    text = page_blocks.replace_block(text, "r", "two", "\nTWO\n")
    assert text.endswith("<!-- r: two -->\n\nTWO\n\n<!-- /r: two -->\nProse after.\n")
    assert "<!-- other: one -->\nnot ours\n<!-- /other: one -->" in text
    assert page_blocks.block_text(text, "r", "one") == "\nNEW\n"
    # again: the same page
    assert page_blocks.replace_block(text, "r", "one", "NEW") == text


def test_replace_block_without_its_pair_is_none_and_twice_is_an_error():
    assert page_blocks.replace_block(TEXT, "r", "three", "x") is None
    assert page_blocks.replace_block(TEXT, "s", "one", "x") is None
    assert page_blocks.replace_block("<!-- /r: a --> <!-- r: a -->", "r", "a", "x") is None
    with pytest.raises(ValueError, match="twice"):
        page_blocks.replace_block(TEXT + "<!-- r: one -->", "r", "one", "x")


def test_find_blocks_names_them_and_rejects_malformed_markers():
    assert page_blocks.find_blocks(TEXT, "r") == ["one", "two"]
    assert page_blocks.find_blocks(TEXT, "other") == ["one"]
    assert page_blocks.find_blocks(TEXT, "doctest") == []
    for bad, message in [("<!-- r: a -->", "never closed"),
                         ("<!-- /r: a -->", "not open"),
                         ("<!-- r: a --><!-- /r: a --><!-- r: a --><!-- /r: a -->", "twice"),
                         ("<!-- r: a --><!-- r: b --><!-- /r: b --><!-- /r: a -->", "inside"),
                         ("<!-- r: a --><!-- /r: b -->", "not open")]:
        with pytest.raises(ValueError, match=message):
            page_blocks.find_blocks(bad, "r")


def test_rewrite_page_logs_blocks_it_cannot_place(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(TEXT)
    log = []
    placed = page_blocks.rewrite_page(str(page), "r", {"one": "NEW", "three": "THREE"},
                                      log.append)
    assert placed == ["one"]
    assert page.read_text() == page_blocks.replace_block(TEXT, "r", "one", "NEW")
    assert len(log) == 1 and "has no <!-- r: three --> markers" in log[0]
    assert log[0].endswith("THREE")
    with pytest.raises(FileNotFoundError):
        page_blocks.rewrite_page(str(tmp_path / "missing.md"), "r", {})
    page.write_text(TEXT + "<!-- r: four -->\n")
    with pytest.raises(ValueError, match="never closed"):
        page_blocks.rewrite_page(str(page), "r", {"one": "x"})
    assert page.read_text() == TEXT + "<!-- r: four -->\n"


def test_rewrite_page_is_atomic_and_leaves_an_unchanged_page_alone(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(TEXT)

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        page_blocks.rewrite_page(str(page), "r", {"one": "NEW"})
    assert page.read_text() == TEXT                     # untouched,
    assert os.listdir(tmp_path) == ["page.md"]          # and no temporary file left
    # a block that is already there: nothing is written at all
    assert page_blocks.rewrite_page(str(page), "r", {"one": "old one"}) == ["one"]
    assert page.read_text() == TEXT


# -------------------------------------------------------- experiments_report.py

def sweep_record(norm, batch, seed, error) -> dict:
    """A result as batch_size_sweep.py writes it into results.jsonl."""
    return dict(norm=norm, batch_size=batch, seed=seed, budget=1024, examples=1024, lr=1e-3,
                data="full MNIST", optimizer="adam", schedule="none", test_error=error,
                test_nll=10 * error, valid_error=error, train_seconds=10.0,
                examples_per_second=100.0 * batch + seed, median_step_seconds=0.01,
                device="cpu", curve=[[512, 0.3], [1024, 10 * error]])


def lstm_result(task, norm, curve, **final) -> dict:
    """A result.json as ln_lstm.py writes it."""
    setup = dict(task=task, norm=norm, steps=curve[-1][0], seed=0, batch_size=64, hidden=128,
                 lr=1e-3, device="cpu", eval_every=curve[0][0],
                 data="full MNIST" if task == "mnist" else "random sequences")
    setup |= {"length": 30} if task == "adding" else {"eval_images": 2000}
    return dict(setup, **final, seconds_per_step=0.02, median_step_seconds=0.0125,
                wall_seconds=30.0, curve=curve)


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


PAGE = ("# Experiments\n\nIntro.\n\n## Sweep\n\n<!-- experiments_report: sweep -->\nstale\n"
        "<!-- /experiments_report: sweep -->\n\nSweep prose.\n\n## LSTM\n\n"
        "<!-- experiments_report: lstm -->\n<!-- /experiments_report: lstm -->\n\n"
        "## Adding\n\n<!-- experiments_report: adding -->\nkept\n"
        "<!-- /experiments_report: adding -->\n\nThe end.\n")


@pytest.fixture
def experiments(tmp_path):
    runs, docs = tmp_path / "runs", tmp_path / "docs"
    docs.mkdir()
    (docs / "experiments.md").write_text(PAGE)
    errors = {("none", 4): (0.040, 0.036), ("batch", 4): (0.060, 0.050),
              ("layer", 4): (0.030, 0.031), ("none", 128): (0.030, 0.031),
              ("batch", 128): (0.026, 0.027), ("layer", 128): (0.0355, 0.0365)}
    records = [sweep_record(n, b, s, e[s]) for (n, b), e in errors.items() for s in (0, 1)]
    (runs / "paper").mkdir(parents=True)
    (runs / "paper" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    curves = {"none": [[2, 0.5], [4, 0.7], [6, 0.9]], "layer": [[2, 0.6], [4, 0.7], [6, 0.95]],
              "batch": [[2, 0.4], [4, 0.5], [6, 0.6]]}
    for norm, curve in curves.items():
        final = {"test_accuracy": curve[-1][1] - 0.01}
        if norm == "batch":
            final["test_accuracy_batch_statistics"] = 0.97
        write_json(runs / "lstm" / norm / "result.json", lstm_result("mnist", norm, curve, **final))
    argv = ["--runs", str(runs), "--page", str(docs / "experiments.md"),
            "--figures", str(docs / "figures")]
    return runs, docs, argv


def test_experiments_page_from_fake_results(experiments, capsys):
    runs, docs, argv = experiments
    assert experiments_report.main(argv) == 0
    out, text = capsys.readouterr().out, (docs / "experiments.md").read_text()
    sweep = page_blocks.block_text(text, "experiments_report", "sweep")
    assert "stale" not in sweep and "![Figure 6](figures/figure6.png)" in sweep
    assert "| batch | no norm: test error % | batch norm | layer norm | examples/s (LN) |" in sweep
    # mean over the seeds, each seed in parentheses at both ends, the row's lowest in bold
    assert rows_of(sweep, "4")[0] == ["4", "3.80 (4.00, 3.60)", "5.50 (6.00, 5.00)",
                                      "**3.05** (3.00, 3.10)", "400"]
    assert rows_of(sweep, "128")[0][2:4] == ["**2.65** (2.60, 2.70)", "3.60 (3.55, 3.65)"]
    assert "Test NLL at batch 4: none 0.380, BN 0.550, LN 0.305; at batch 128:" in flat(sweep)
    assert "differ by up to 1.00 points (batch norm, batch 4)" in flat(sweep)
    assert "12 runs on full MNIST, 120 s of training" in flat(sweep)
    assert "[figures/sweep_paper.csv](figures/sweep_paper.csv)" in flat(sweep)
    assert "*partial: 12 of the paper preset's 36 runs (missing: ('none', 8, 0)," in flat(sweep)
    assert (docs / "figures" / "figure6.png").read_bytes()[:8] == PNG
    assert (docs / "figures" / "sweep_paper.csv").read_text().startswith("norm,batch_size,")

    lstm = page_blocks.block_text(text, "experiments_report", "lstm")
    assert "| cell | 2 steps | 4 | 6 | final, 10,000 images | ms / step |" in lstm
    assert rows_of(lstm, "LSTM")[0] == ["LSTM", "50.0", "**70.0**", "90.0", "89.00", "12.5"]
    assert rows_of(lstm, "LN-LSTM")[0] == ["LN-LSTM", "**60.0**", "**70.0**", "**95.0**",
                                           "**94.00**", "12.5"]
    assert "ahead of the LSTM at 2 of the 3 evaluations (level at 1)" in flat(lstm)
    assert "running averages: 97.00 % against 59.00 % with them" in flat(lstm)
    assert "LSTM 30 s, LN-LSTM 30 s, BN-LSTM 30 s; 1.5 minutes in all" in flat(lstm)
    assert (docs / "figures" / "lstm_mnist.png").read_bytes()[:8] == PNG

    # no results for adding: reported, its block kept; the prose untouched
    assert "adding: no results in" in out
    assert "<!-- experiments_report: adding -->\nkept\n" in text
    assert not (docs / "figures" / "lstm_adding.png").exists()
    for prose in ("# Experiments\n\nIntro.\n\n## Sweep\n\n", "\n\nSweep prose.\n\n## LSTM\n\n",
                  "<!-- /experiments_report: adding -->\n\nThe end.\n"):
        assert prose in text
    assert experiments_report.main(argv) == 0             # regenerated: the same page
    assert (docs / "experiments.md").read_text() == text


def test_adding_block_and_partial_cells(experiments, capsys):
    runs, docs, argv = experiments
    write_json(runs / "adding" / "none" / "result.json", lstm_result(
        "adding", "none", [[100, 0.05], [200, 0.02], [300, 0.009]],
        mse_at_T=0.009, mse_at_2T=0.011, mse_at_4T=0.04, baseline_mse=1 / 6))
    write_json(runs / "adding" / "layer" / "result.json", lstm_result(
        "adding", "layer", [[100, 0.005], [200, 0.03], [300, 0.002]],
        mse_at_T=0.002, mse_at_2T=0.3, mse_at_4T=1.1, baseline_mse=1 / 6))
    assert experiments_report.main(argv + ["--section", "adding"]) == 0
    text = (docs / "experiments.md").read_text()
    adding = page_blocks.block_text(text, "experiments_report", "adding")
    assert ("| cell | steps to MSE < 0.01 (at T) | MSE at T = 30 | at 2T = 60 | at 4T = 120 "
            "| ms / step |") in adding
    assert rows_of(adding, "LSTM")[0] == ["LSTM", "300", "0.0090", "**0.0110**", "**0.0400**",
                                          "12.5"]
    assert rows_of(adding, "LN-LSTM")[0][1:3] == ["100, then 0.002–0.030", "**0.0020**"]
    assert "Worse than always answering 1: LN-LSTM at 2T (0.3000), LN-LSTM at 4T" in flat(adding)
    assert "*partial: 2 of 3 cells (no result for BN-LSTM)*" in flat(adding)
    assert "![adding problem](figures/lstm_adding.png)" in adding
    # the other sections were not asked for: left as they were
    assert "<!-- experiments_report: sweep -->\nstale\n" in text
    assert experiments_report.first_solved([[100, 0.2], [200, 0.05]]) == \
        "not reached (best 0.0500)"


def test_shown_steps():
    curve = [[s, 0.5] for s in range(100, 2001, 100)]
    assert experiments_report.shown_steps({"none": {"curve": curve}}) == [
        100, 300, 500, 1000, 1500, 2000]
    curve = [[s, 0.5] for s in range(2, 41, 2)]            # none of SHOWN_STEPS: six of them
    assert experiments_report.shown_steps({"none": {"curve": curve}}) == [2, 10, 18, 24, 32, 40]


def test_experiments_report_without_a_page_is_an_error(experiments):
    _, docs, argv = experiments
    (docs / "experiments.md").unlink()
    with pytest.raises(SystemExit):
        experiments_report.main(argv)


# ------------------------------------------------------ data_parallel_report.py

def dp_result(model, norm, batch, world, seed, error) -> dict:
    """A result.json as data_parallel.py writes it."""
    traffic = {} if world == 1 else {"gradients": dict(
        all_reduces_per_step=1, bytes_per_step=7.2e6, seconds_per_step=0.004)}
    if norm == "syncbatch" and world > 1:
        traffic["batch statistics"] = dict(all_reduces_per_step=4, bytes_per_step=6e4,
                                           seconds_per_step=0.001)
    return dict(model=model, norm=norm, world_size=world, per_worker_batch=batch,
                global_batch=world * batch, seed=seed, steps=10, examples=10 * world * batch,
                threads_per_rank=1, test_error=error, seconds_per_step=0.01 * world,
                communicating=0.4 if world > 1 else 0.0, traffic=traffic)


DP_PAGE = ("# Distributed\n\n<!-- data_parallel_report: errors -->\nold\n"
           "<!-- /data_parallel_report: errors -->\n\nProse.\n\n"
           "<!-- data_parallel_report: traffic -->\nold\n<!-- /data_parallel_report: traffic -->"
           "\n\nMore prose.\n")


def test_distributed_page_from_fake_results(tmp_path, capsys):
    runs, page = tmp_path / "dp", tmp_path / "docs" / "distributed.md"
    page.parent.mkdir()
    page.write_text(DP_PAGE)
    for seed in (0, 1):
        for norm, world in (("batch", 1), ("batch", 2), ("syncbatch", 2)):
            run = dp_result("mlp", norm, 4, world, seed, 0.05 + 0.01 * seed)
            write_json(runs / f"mlp-{norm}-B4-W{world}-s{seed}" / "result.json", run)
    write_json(runs / "lstm-layer-B32-W2-s0" / "result.json",
               dp_result("lstm", "layer", 32, 2, 0, 0.04))
    figure = tmp_path / "docs" / "figures" / "data_parallel.png"
    argv = [str(runs), "--page", str(page), "--plot", str(figure)]
    assert data_parallel_report.main(argv) == 0
    out, text = capsys.readouterr().out, page.read_text()
    errors = page_blocks.block_text(text, "data_parallel_report", "errors")
    assert "| norm | B per rank | W = 1 | W = 2 |" in errors
    assert rows_of(errors, "batch")[0] == ["batch", "4", "5.50 (4)", "5.50 (8)"]
    assert rows_of(errors, "syncbatch")[0] == ["syncbatch", "4", "-", "5.50 (8)"]
    assert "![test error against the number of ranks](figures/data_parallel.png)" in errors
    assert "*partial: 7 of the 52 runs of examples/data_parallel_sweep.py" in errors
    traffic = page_blocks.block_text(text, "data_parallel_report", "traffic")
    assert traffic.splitlines()[2] == "| " + " | ".join(data_parallel_report.TRAFFIC_HEADER) + " |"
    # the MLP on 2 ranks of 4 and every LSTM run; not the MLP on one rank
    assert [r[:4] for r in rows_of(traffic, "mlp")] == [["mlp", "batch", "4", "2"],
                                                        ["mlp", "syncbatch", "4", "2"]]
    assert rows_of(traffic, "mlp")[1][7:] == ["1", "4", "7.26 MB", "20.0", "40%"]
    assert rows_of(traffic, "lstm")[0][:7] == ["lstm", "layer", "32", "2", "64", "4.00", "1"]
    assert text.startswith("# Distributed\n\n") and text.endswith("\n\nMore prose.\n")
    assert "\n\nProse.\n\n" in text and "old" not in text
    assert figure.read_bytes()[:8] == PNG
    assert "partial: 7 of the 52 runs" in out
    assert data_parallel_report.main(argv) == 0
    assert page.read_text() == text


def test_distributed_report_without_results_keeps_the_blocks(tmp_path, capsys):
    page = tmp_path / "distributed.md"
    page.write_text(DP_PAGE)
    assert data_parallel_report.main([str(tmp_path / "none"), "--page", str(page)]) == 0
    assert page.read_text() == DP_PAGE
    assert "errors: no results in" in capsys.readouterr().out


def test_data_parallel_sweep_plan_and_resume(tmp_path, capsys):
    names = [data_parallel_sweep.name(run) for run in data_parallel_sweep.GRID]
    assert len(names) == len(set(names)) == 52
    assert "mlp-syncbatch-B32-W4-s1" in names and "lstm-layer-B64-W1-s0" in names
    write_json(tmp_path / "mlp-layer-B4-W1-s0" / "result.json", {})
    assert data_parallel_sweep.main(["--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("52 runs: 1 already done, 51 to run\n")
    assert "mlp-layer-B4-W1-s0" not in out
    first = out.splitlines()[1].split()
    assert first[1:3] == ["-n", "1"] and first[-2:] == ["--out", str(tmp_path / names[1])]


# -------------------------------------------------------------- gpt_report.py

GPT_PAGE = ("# Transformers\n\nProse.\n\n<!-- gpt_report: losses -->\nold\n"
            "<!-- /gpt_report: losses -->\n\nMiddle.\n\n<!-- gpt_report: grad-norms -->\nold\n"
            "<!-- /gpt_report: grad-norms -->\n\nThe end.\n")


@pytest.fixture
def gpt_runs(tmp_path, monkeypatch):
    """Seeds 1337 and 1338 of char_lm.py (1339 missing), nanoGPT's reference CSVs, a page."""
    runs, figures, page = tmp_path / "runs", tmp_path / "figures", tmp_path / "transformers.md"
    for seed, (train, val) in {1337: (1.80, 1.92), 1338: (1.78, 1.88)}.items():
        path = runs / f"gpt-seed{seed}" / "curves.csv"
        path.parent.mkdir(parents=True)
        path.write_text(f"iter,train_loss,val_loss,lr\n0,4.2,4.2,1e-5\n{2000},{train},{val},1e-4\n"
                        f"1000,2.0,2.1,5e-4\n")
    figures.mkdir()
    (figures / "nanogpt_curves.csv").write_text(
        "seed,iter,train_loss,val_loss\n1337,0,4.1,4.1\n1337,2000,1.76,1.89\n"
        "1338,1000,2.0,2.1\n1338,2000,1.77,1.87\n1339,2000,1.7,1.9\n")
    (figures / "nanogpt_fixed_batches.csv").write_text("seed,val_loss\n1337,1.90\n1338,1.91\n")
    page.write_text(GPT_PAGE)
    monkeypatch.setattr(gpt_report, "grad_norms_blocks",
                        lambda seeds: {"grad-norms": "| a |\n|---|\n| b |", "grad-depth": "x"})
    monkeypatch.setattr(gpt_report, "plot_block_norms",
                        lambda path, seeds: open(path, "wb").write(PNG))
    return runs, figures, page, ["--runs", str(runs), "--page", str(page),
                                 "--figures", str(figures)]


def test_gpt_losses_table_from_fake_runs(gpt_runs, capsys, monkeypatch):
    runs, figures, page, argv = gpt_runs
    monkeypatch.setenv("HOME", str(runs))                   # no Tiny Shakespeare anywhere
    monkeypatch.setenv("TINYNET_DATA", str(runs / "no-data"))
    assert gpt_report.main(argv) == 0
    out, text = capsys.readouterr().out, page.read_text()
    losses = page_blocks.block_text(text, "gpt_report", "losses")
    assert losses.splitlines()[2] == "| " + " | ".join(gpt_report.LOSS_HEADER) + " |"
    # the last evaluation (iteration 2000, not the last line), nanoGPT's at the same one
    assert rows_of(losses, "1337")[0] == ["1337", "1.9200", "1.8900", "1.8000", "1.7600", "-",
                                          "1.9000"]
    assert rows_of(losses, "1338")[0][1:5] == ["1.8800", "1.8700", "1.7800", "1.7700"]
    assert rows_of(losses, "1339") == []
    # mean (sample sd): the fixed-batch column of tinynet has no numbers
    assert rows_of(losses, "mean (sd)")[0] == ["mean (sd)", "1.900 (0.028)", "1.880 (0.014)",
                                               "1.790 (0.014)", "1.765 (0.007)", "-",
                                               "1.905 (0.007)"]
    assert "*no run of seed 1339" in losses and "no last.npz for seed 1337, 1338" in out
    assert (figures / "gpt_curves.png").read_bytes()[:8] == PNG
    assert (figures / "grad_norms.png").read_bytes()[:8] == PNG
    grad = page_blocks.block_text(text, "gpt_report", "grad-norms")
    assert grad == "\n\n| a |\n|---|\n| b |\n\n"
    assert "has no <!-- gpt_report: grad-depth --> markers" in out
    assert text.startswith("# Transformers\n\nProse.\n\n") and "\n\nMiddle.\n\n" in text
    assert text.endswith("\n\nThe end.\n") and "old" not in text
    assert gpt_report.main(argv) == 0                     # regenerated: the same page
    assert page.read_text() == text


def test_gradient_norm_figure_is_drawn_from_the_models(tmp_path):
    path = tmp_path / "grad_norms.png"
    gpt_report.plot_block_norms(str(path), seeds=(0,))
    assert path.read_bytes()[:8] == PNG and path.stat().st_size > 10_000


def test_gpt_fixed_batch_losses_and_missing_data(gpt_runs, monkeypatch, capsys):
    runs, _, page, argv = gpt_runs
    for seed in (1337, 1338):
        (runs / f"gpt-seed{seed}" / "last.npz").write_bytes(b"")
    monkeypatch.setenv("HOME", str(runs))
    monkeypatch.setenv("TINYNET_DATA", str(runs / "no-data"))
    assert gpt_report.main(argv) == 0                     # checkpoints, but no corpus
    assert "not computed, it needs the full Tiny Shakespeare" in capsys.readouterr().out
    scored = {}
    monkeypatch.setattr(gpt_report, "fixed_batch_loss",
                        lambda paths, data: scored.setdefault("paths", paths) and [1.91, 1.89])
    assert gpt_report.main(argv) == 0
    assert [os.path.basename(os.path.dirname(p)) for p in scored["paths"]] == [
        "gpt-seed1337", "gpt-seed1338"]
    losses = page_blocks.block_text(page.read_text(), "gpt_report", "losses")
    assert rows_of(losses, "1337")[0][5] == "1.9100"
    assert rows_of(losses, "mean (sd)")[0][5] == "1.900 (0.014)"
    assert "Tiny Shakespeare" not in losses


def test_gpt_report_without_runs_keeps_the_losses_block(gpt_runs, capsys):
    runs, _, page, argv = gpt_runs
    assert gpt_report.main(argv[:1] + [str(runs / "none")] + argv[2:]) == 0
    assert "<!-- gpt_report: losses -->\nold\n" in page.read_text()
    assert "losses: no results in" in capsys.readouterr().out


def test_gradient_norm_tables_at_initialisation():
    """One seed of the measurement: Post-LN flat at GPT-2's initialisation, Pre-LN falling;
    with Xavier, the last c_fc gradient shrinks with depth only for Pre-LN."""
    blocks = gpt_report.grad_norms_blocks(seeds=(0,))
    text = blocks["grad-norms"] + "\n\n" + blocks["grad-depth"]
    rows = {(r[0], r[1]): [float(x) for x in r[2].split("–") + r[3].split("–")]
            for r in (line.strip("|").split("|") for line in text.splitlines()
                      if line.startswith("| GPT") or line.startswith("| Xavier"))
            for r in [[c.strip() for c in r]]}
    assert len(rows) == 4
    assert all(0.95 < x < 1.05 for x in rows["GPT-2's (the model's own)", "post"])
    assert all(0.72 < x < 0.95 for x in rows["GPT-2's", "pre"])
    assert all(x < 0.6 for x in rows["Xavier on the block matrices", "pre"])
    depth = {r[0]: float(r[1].split("–")[0]) for r in
             ([c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
              if line.startswith(("| post", "| pre")))}
    assert 0.8 < depth["post"] < 1.25 and depth["pre"] < 0.65


# ----------------------------------------------------- the committed pages

# Each page, the tag of a script that writes it, its blocks, and the make target of
# each block's section (a page may have blocks of several scripts).
PAGES = [
    (experiments_report.PAGE, experiments_report.TAG, {
        "sweep": "experiments-sweep", "lstm": "experiments-lstm",
        "adding": "experiments-adding", "convnet": "experiments-convnet"}),
    (data_parallel_report.PAGE, data_parallel_report.TAG, {
        "errors": "experiments-distributed", "traffic": "experiments-distributed"}),
    (char_lm_report.PAGE, char_lm_report.TAG, {
        grid: "experiments-transformers" for grid in char_lm_report.GRIDS}),
    (gpt_report.PAGE, gpt_report.TAG, {
        "losses": "experiments-gpt", "grad-norms": "experiments-gpt",
        "grad-depth": "experiments-gpt"}),
]
PAGE_IDS = [f"{page}:{tag}" for page, tag, _ in PAGES]


def makefile_recipes() -> dict[str, list[str]]:
    """Each Makefile target's commands, with $(PY) as python and $(RUNS) as runs."""
    recipes, target = {}, None
    for line in (ROOT / "Makefile").read_text().splitlines():
        rule = re.match(r"([\w.-]+):(?!=)", line)
        if rule:
            target = rule[1]
            recipes[target] = []
        elif line.startswith("\t") and target:
            recipes[target].append(line.strip().replace("$(PY)", "python")
                                   .replace("$(RUNS)", "runs"))
        elif not line.strip() or line.startswith("#"):
            continue
        else:
            target = None
    return recipes


@pytest.mark.parametrize(("page", "tag", "sections"), PAGES, ids=PAGE_IDS)
def test_every_generated_block_is_on_its_page(page, tag, sections):
    text = (ROOT / page).read_text(encoding="utf-8")
    assert page_blocks.find_blocks(text, tag) == list(sections)
    for name in sections:
        block = page_blocks.block_text(text, tag, name)
        table = [line for line in block.splitlines() if line.startswith("|")]
        assert len(table) >= 3, f"{page}, block {name}: no table"
        widths = {line.count("|") for line in table}
        assert len(widths) == 1, f"{page}, block {name}: rows of different widths"
        assert re.fullmatch(r"\|(---\|)+", table[1]), f"{page}, block {name}: no header rule"


@pytest.mark.parametrize(("page", "tag", "sections"), PAGES, ids=PAGE_IDS)
def test_each_section_shows_its_make_target_and_commands(page, tag, sections):
    """The page names the target that reruns a section before its block, and shows every
    command of the target's recipe; the Makefile runs them all under `make experiments`."""
    text = (ROOT / page).read_text(encoding="utf-8")
    recipes = makefile_recipes()
    experiments = re.search(r"^EXPERIMENTS := (.*?)(?<!\\)$", (ROOT / "Makefile").read_text(),
                            re.M | re.S)[1].replace("\\\n", " ").split()
    for name, target in sections.items():
        assert target in experiments and target in recipes
        assert f"make {target}" in text[:text.index(page_blocks.markers(tag, name)[0])], (
            f"{page}: `make {target}` is not shown before block {name}")
        for command in recipes[target]:
            assert command.split(" # ")[0] in text, f"{page} does not show `{command}`"
        reports = {m[0] for c in recipes[target] for m in [re.search(r"examples/\w+_report\.py", c)]
                   if m}
        assert reports and all(r in " ".join(recipes["pages"]) for r in reports)
