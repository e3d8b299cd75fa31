"""``python -m tinynet.as_torch``: PyTorch programs on tinynet, and the names they need
before they compute (devices, dtypes, random integers, item assignment...).

The programs here are PyTorch programs written for these tests: each runs under
the runner, and where PyTorch is installed, under PyTorch too, to the same numbers.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinynet
from tinynet import as_torch
from tinynet.data.mnist import SAMPLE_ROOT, TEST_FILES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_program(tmp_path, source, *args, under="tinynet"):
    """Run ``source`` as a script: under the runner, or with ``under="torch"`` under
    plain Python (PyTorch). Returns the finished process."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source))
    prefix = ["-m", "tinynet.as_torch"] if under == "tinynet" else []
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, *prefix, str(script), *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)


TRAINING = """
    import argparse
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((64, 8)), dtype=torch.float64)
    y = torch.tensor(rng.integers(0, 3, 64), dtype=torch.long)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.norm = nn.LayerNorm(16)
            self.fc2 = nn.Linear(16, 3)

        def forward(self, x):
            return self.fc2(F.gelu(self.norm(self.fc1(x))))


    model = Net().double().to(device)
    with torch.no_grad():                    # the same weights under both libraries
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.tensor(np.random.default_rng(i).standard_normal(p.shape) * 0.3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    losses = torch.zeros(args.steps, dtype=torch.float64)
    step = 0
    while step < args.steps:
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses[step] = loss.item()       # item assignment
            step += 1
            if step == args.steps:
                break


    @torch.inference_mode()
    def accuracy():
        return (model(x).argmax(dim=1) == y).float().mean()


    print(torch.__name__, f"{losses[-1]:.12f}", f"{accuracy():.4f}", losses[0].item())
"""


def test_a_pytorch_training_program_runs_unmodified(tmp_path):
    done = run_program(tmp_path, TRAINING, "--steps", "20")
    assert done.returncode == 0, done.stderr
    name, last, accuracy, first = done.stdout.split()
    assert name == "tinynet"
    assert float(last) < float(first)


def test_it_gives_pytorchs_numbers(tmp_path):
    pytest.importorskip("torch")
    ours = run_program(tmp_path, TRAINING)
    theirs = run_program(tmp_path, TRAINING, under="torch")
    assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
    assert theirs.stdout.split()[0] == "torch"
    np.testing.assert_allclose([float(v) for v in ours.stdout.split()[1:]],
                               [float(v) for v in theirs.stdout.split()[1:]], rtol=1e-9)


@pytest.mark.parametrize("line, message", [
    ("import torch.fft; torch.fft.rfft(torch.ones(4))", "tinynet has no torch.fft.rfft"),
    ("from torch.distributions import Normal", "tinynet has no torch.distributions"),
    ("import torch; torch.fft.rfft(torch.ones(4))", "tinynet has no torch.fft"),
    ("import torch; torch.nn.Bilinear(2, 2, 2)", "tinynet has no torch.nn.Bilinear"),
    ("import torch.onnx; torch.onnx.export(None, None, 'm.onnx')",
     "tinynet has no torch.onnx.export"),
])
def test_what_tinynet_lacks_fails_by_name(tmp_path, line, message):
    done = run_program(tmp_path, line)
    assert done.returncode != 0
    assert message in done.stderr


def test_the_runner_passes_arguments_and_names_a_missing_script(tmp_path):
    done = run_program(tmp_path, "import sys; print(sys.argv[1:], __name__)", "a", "--b")
    assert done.stdout.strip() == "['a', '--b'] __main__"
    missing = subprocess.run([sys.executable, "-m", "tinynet.as_torch", "nowhere.py"],
                             capture_output=True, text=True, cwd=tmp_path,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    assert missing.returncode != 0 and "no such script: nowhere.py" in missing.stderr


def test_install_in_a_running_interpreter():
    saved = {n: m for n, m in sys.modules.items() if n.partition(".")[0] in ("torch",
                                                                              "torchvision")}
    for name in saved:
        del sys.modules[name]
    try:
        as_torch.install()
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        assert torch is tinynet and F is tinynet.nn.functional
        assert DataLoader is tinynet.data.DataLoader and as_torch.installed()
        import torch.fft  # imports; its names fail when used
        with pytest.raises(AttributeError, match="tinynet has no torch.fft.rfft"):
            torch.fft.rfft(torch.ones(4))
    finally:
        as_torch.uninstall()
        sys.modules.update(saved)
    assert not as_torch.installed()


def test_devices():
    cuda = tinynet.device("cuda:1")
    assert (cuda.type, cuda.index, str(cuda), repr(cuda)) == (
        "cuda", 1, "cuda:1", "device(type='cuda', index=1)")
    assert tinynet.device("cuda", 0) == "cuda:0" and tinynet.device("cpu") == "cpu"
    assert tinynet.device("cuda:0") != tinynet.device("cuda")
    assert tinynet.zeros(2).device == tinynet.device("cpu")
    assert tinynet.zeros(2).device.type == "cpu"
    for bad, message in (("mps", "no 'mps' device"), ("cuda:x", "must be a number"),
                         ("cpu:1", "no device cpu:1")):
        with pytest.raises(ValueError, match=message):
            tinynet.device(bad)


def test_device_queries_tell_the_truth():
    assert tinynet.cuda.is_available() == tinynet.cuda_is_available()
    assert tinynet.cuda.device_count() == int(tinynet.cuda_is_available())
    assert tinynet.accelerator.is_available() == tinynet.cuda_is_available()
    expected = tinynet.device("cuda") if tinynet.cuda_is_available() else None
    assert tinynet.accelerator.current_accelerator() == expected
    assert not tinynet.backends.mps.is_available()
    tinynet.backends.cudnn.benchmark = True            # a flag programs set
    tinynet.cuda.manual_seed_all(0)
    tinynet.cuda.synchronize()


def test_pytorchs_dtype_names():
    assert (tinynet.long, tinynet.int, tinynet.float, tinynet.double, tinynet.half,
            tinynet.short) == (np.int64, np.int32, np.float32, np.float64, np.float16, np.int16)
    assert tinynet.zeros(2, dtype=tinynet.long).dtype == np.int64


def test_randint_and_randperm():
    a = tinynet.randint(5, (3, 4))
    b = tinynet.randint(-2, 2, (1000,), generator=tinynet.Generator().manual_seed(3))
    c = tinynet.randint(-2, 2, (1000,), generator=tinynet.Generator().manual_seed(3))
    assert a.shape == (3, 4) and a.dtype == np.int64 and 0 <= a.min().item() <= a.max().item() < 5
    np.testing.assert_array_equal(b.numpy(), c.numpy())
    assert set(np.unique(b.numpy())) == {-2, -1, 0, 1}
    d = tinynet.randint(3, size=(500,))                  # randint(high, size=...)
    assert d.shape == (500,) and set(np.unique(d.numpy())) == {0, 1, 2}
    assert tinynet.empty(2, device=None).device == tinynet.device("cpu")  # the default
    p = tinynet.randperm(10, generator=tinynet.Generator().manual_seed(1))
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(10))
    r1 = tinynet.rand(4, generator=tinynet.Generator().manual_seed(2))
    r2 = tinynet.rand(4, generator=tinynet.Generator().manual_seed(2))
    np.testing.assert_array_equal(r1.numpy(), r2.numpy())
    with pytest.raises(ValueError, match="low < high"):
        tinynet.randint(3, 3, (2,))
    with pytest.raises(TypeError, match="missing the size"):
        tinynet.randint(3)


def test_a_one_element_tensor_as_an_index_and_a_formatted_number():
    items = list(range(10))
    i = tinynet.tensor(3)
    assert items[i] == 3 and items[i:i + 2] == [3, 4] and len(range(i)) == 3
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        items[tinynet.tensor(1.0)]
    assert f"{tinynet.tensor(2.0) / 3:.4f}" == "0.6667"
    assert f"{tinynet.tensor([1.0, 2.0])}" == str(tinynet.tensor([1.0, 2.0]))


def test_item_assignment():
    t = tinynet.zeros(2, 3)
    t[0] = 1.0
    t[1, tinynet.tensor([0, 2])] = tinynet.tensor([5.0, 6.0])
    t[t > 5] = -1.0
    np.testing.assert_array_equal(t.numpy(), [[1, 1, 1], [5, 0, -1]])
    assert t._version == 3
    ints = tinynet.zeros(3, dtype=tinynet.long)
    ints[1] = 2.7                                   # converted to the tensor's dtype
    assert ints.tolist() == [0, 2, 0]


def test_item_assignment_follows_pytorchs_in_place_rules():
    leaf = tinynet.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[0] = 1.0
    with tinynet.no_grad():
        leaf[0] = 1.0
    assert leaf.tolist() == [1.0, 0.0, 0.0]
    view = (leaf * 2).reshape(3, 1)
    with pytest.raises(RuntimeError, match="memory is a view"):
        view[0] = 0.0


def test_item_assignment_is_recorded_as_pytorch_records_it():
    """y[index] = v on a tensor in the graph, or with a v that requires grad: the
    gradient of the written places goes to v, the rest to y as it was; a node that
    saw y before the assignment keeps it as it was."""
    torch = pytest.importorskip("torch")

    def run(lib):
        w = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        v = lib.tensor([10.0, 20.0], dtype=lib.float64, requires_grad=True)
        y = w * 2
        before = y + 3                       # recorded before the assignment
        y[:, 1] = v
        buffer = lib.zeros(2, 3, dtype=lib.float64)
        buffer[0] = v[0] * y[1]              # a constant buffer joins the graph
        buffer[buffer > 50] = 0.5
        loss = (y * y).sum() + (before * before).sum() + (buffer * w).sum()
        loss.backward()
        return [t.detach().numpy() for t in (loss, w.grad, v.grad)]

    for ours, theirs in zip(run(tinynet), run(torch), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_item_assignment_refuses_what_autograd_cannot_follow():
    x = tinynet.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()                              # exp's backward reads its output
    y[0] = 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y = x * 1
    head = y[:2]                             # a view taken before the assignment
    y[0] = 100.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        head.sum().backward()


def test_inference_mode():
    x = tinynet.ones(2, requires_grad=True)

    @tinynet.inference_mode()
    def called():
        return x * 2

    @tinynet.inference_mode
    def bare():
        return x * 2

    assert not called().requires_grad and not bare().requires_grad
    with tinynet.inference_mode(False):
        assert (x * 2).requires_grad
    with tinynet.inference_mode():
        assert not tinynet.is_grad_enabled()
    assert tinynet.is_grad_enabled()


def test_torchvisions_mnist_and_transforms(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "no data"))    # only root's files
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in TEST_FILES:
        (raw / name).symlink_to(SAMPLE_ROOT / name)
    from tinynet.as_torch import torchvision as tv
    transform = tv.transforms.Compose([tv.transforms.ToTensor(),
                                       tv.transforms.Normalize((0.1307,), (0.3081,))])
    dataset = tv.datasets.MNIST(str(tmp_path), train=False, transform=transform)
    image, label = dataset[7]
    assert len(dataset) == 10000 and isinstance(label, int) and image.shape == (1, 28, 28)
    expected = (dataset.data[7].astype(np.float32) / 255 - np.float32(0.1307)) / np.float32(0.3081)
    np.testing.assert_allclose(image.numpy()[0], expected, rtol=1e-6)
    with pytest.raises(FileNotFoundError, match="download=True"):
        tv.datasets.MNIST(str(tmp_path / "elsewhere"), train=True)


def test_summary_writer_keeps_the_scalars(tmp_path):
    from tinynet.as_torch.tensorboard import SummaryWriter
    with SummaryWriter(log_dir=tmp_path / "log") as writer:
        writer.add_scalar("Loss/train", tinynet.tensor(0.5), 3)
        writer.add_histogram("weights", tinynet.ones(3), 3)      # accepted, not kept
    tag, step, value, _ = (tmp_path / "log" / "scalars.tsv").read_text().split("\t")
    assert (tag, step, float(value)) == ("Loss/train", "3", 0.5)


def test_data_is_pytorchs_a_tensor_of_the_same_memory_outside_the_graph():
    p = tinynet.nn.Parameter(tinynet.ones(3))
    data = p.data
    assert isinstance(data, tinynet.Tensor) and not data.requires_grad
    assert data.array is p.array and isinstance(p.array, np.ndarray)
    p.data.add_(tinynet.tensor([1.0, 2.0, 3.0]), alpha=-0.5)     # an old-style SGD step
    np.testing.assert_array_equal(p.numpy(), [0.5, 0.0, -0.5])
    assert p.requires_grad and p.is_leaf
    p.data = tinynet.zeros(2)                                     # new memory, any shape
    assert p.shape == (2,) and p.requires_grad


def test_the_example_pytorch_program_trains_on_tinynet(tmp_path):
    script = os.path.join(ROOT, "examples", "torch_char_gpt.py")
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, "-m", "tinynet.as_torch", script, "--steps", "4",
                          "--n-layer", "1", "--block-size", "8", "--batch-size", "4"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("tinynet: loss ") and "median step" in run.stdout
    if not tinynet.cuda_is_available():
        cuda = subprocess.run([sys.executable, "-m", "tinynet.as_torch", script, "--device",
                               "cuda"], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=300)
        assert cuda.returncode != 0
        assert "torch.cuda.is_available() is False here" in cuda.stderr


def test_torchvisions_make_grid_and_save_image_write_the_grid_as_a_png(tmp_path):
    import struct
    import zlib

    from tinynet.as_torch import torchvision as tv
    images = tinynet.tensor(np.linspace(0, 1, 3 * 4).reshape(3, 1, 2, 2).astype(np.float32))
    grid = tv.utils.make_grid(images, nrow=2, padding=1, pad_value=0.5).numpy()
    assert grid.shape == (3, 2 * 3 + 1, 2 * 3 + 1)                 # 2 rows of 2 cells
    np.testing.assert_array_equal(grid[0, 1:3, 4:6], images.numpy()[1, 0])
    np.testing.assert_array_equal(grid[2, 4:6, 1:3], images.numpy()[2, 0])
    assert grid[1, 0, 0] == 0.5 and np.all(grid[:, 4:6, 4:6] == 0.5)  # padding, empty cell
    tv.utils.save_image(images, tmp_path / "grid.png", nrow=2, padding=1)
    png = (tmp_path / "grid.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height, depth, color = struct.unpack(">IIBB", png[16:26])
    assert (width, height, depth, color) == (7, 7, 8, 2)
    start = png.index(b"IDAT")
    length = struct.unpack(">I", png[start - 4:start])[0]
    rows = np.frombuffer(zlib.decompress(png[start + 4:start + 4 + length]), np.uint8)
    pixels = rows.reshape(7, 1 + 7 * 3)[:, 1:].reshape(7, 7, 3)
    expected = np.clip(tv.utils.make_grid(images, nrow=2, padding=1).numpy() * 255 + 0.5,
                       0, 255).astype(np.uint8).transpose(1, 2, 0)
    np.testing.assert_array_equal(pixels, expected)
