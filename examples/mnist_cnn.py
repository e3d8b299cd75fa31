"""Train a small MNIST convnet with batch, layer, group, instance or no normalization.

    python examples/mnist_cnn.py --norm group --batch-size 4 --out runs/cnn-group4

The paper's §6.7 question on its own ground: two stages of 3×3 convolution,
norm, ReLU and 2×2 max pooling, then a linear classifier
(:class:`tinynet.models.ConvNet`; 1×28×28 → 16×14×14 → 32×7×7 → 10).
``--norm layer`` normalizes each sample's C·H·W units of a layer together, as
the paper applies LayerNorm to a convnet; ``group`` normalizes groups of 4
channels (Wu & He, 2018); ``instance`` single channels; ``batch`` each channel
over the batch.

Everything else is examples/mnist_mlp.py's recipe and machinery: the same
55,000 training images and one-epoch budget, Adam (lr 1e-3), evaluation on the
10,000 test images, ``--out`` with its atomic checkpoint and ``--resume``,
``--device cuda``, the median step time.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mnist_mlp  # noqa: E402  (examples/)


def build_parser():
    return mnist_mlp.build_parser("cnn", __doc__)


def main(argv=None) -> dict:
    return mnist_mlp.main(argv, model="cnn", description=__doc__)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
