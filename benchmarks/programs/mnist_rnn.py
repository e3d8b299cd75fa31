"""An MNIST classifier that reads each image as a sequence of its 28 rows (nn.LSTM):

    python benchmarks/programs/mnist_rnn.py [--cell lstm|rnn] [--steps 30 --warmup 5]

The training images from ``mnist/`` (the gzipped IDX files; see harness.data_dir), read
with NumPy, in a shuffling DataLoader of batch 64; an LSTM (or tanh RNN) of hidden 128
over the rows, a linear head on its last output, Adam lr 1e-3.
"""
import argparse
import gzip

import numpy as np
import torch
import torch.nn as nn
from harness import arguments, data_dir, train
from torch.utils.data import DataLoader, TensorDataset


def read_idx(path):
    """An IDX file (gzipped): a magic number whose last byte is the rank, the sizes, uint8."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    rank = raw[3]
    shape = np.frombuffer(raw, dtype=">u4", count=rank, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank).reshape(shape)


class RowRNN(nn.Module):
    def __init__(self, cell="lstm", hidden=128, classes=10):
        super().__init__()
        layer = nn.LSTM if cell == "lstm" else nn.RNN
        self.rnn = layer(28, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, images):                     # (batch, 28, 28): 28 rows of 28 pixels
        out, _ = self.rnn(images)
        return self.head(out[:, -1])


def batches(loader):
    while True:
        yield from loader


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", choices=("lstm", "rnn"), default="lstm")
    parser.add_argument("--batch-size", type=int, default=64)
    args = arguments(__doc__, parser)
    folder = data_dir("mnist")
    if not (folder / "train-images-idx3-ubyte.gz").is_file():
        raise SystemExit(f"mnist_rnn.py: no MNIST in {folder} (set TINYNET_DATA)")
    images = read_idx(folder / "train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    labels = read_idx(folder / "train-labels-idx1-ubyte.gz").astype(np.int64)
    dataset = TensorDataset(torch.from_numpy((images - 0.1307) / 0.3081),
                            torch.from_numpy(labels))
    loader = batches(DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                drop_last=True))
    model = RowRNN(args.cell)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()

    def step():
        x, y = next(loader)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    train(step, args, 10)


if __name__ == "__main__":
    main()
