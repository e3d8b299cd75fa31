"""The part of torchvision that MNIST programs use, on tinynet: ``datasets.MNIST``
and ``transforms.Compose``, ``ToTensor``, ``Normalize``, ``Lambda``.

``datasets.MNIST(root, train, transform, target_transform, download)`` reads
the four IDX files from torchvision's place for them, ``root/MNIST/raw``, and
otherwise from where :func:`tinynet.data.load_mnist` finds them
(``$TINYNET_DATA/mnist``, ``~/.cache/tinynet/mnist``); ``download=True`` fetches
them into ``root/MNIST/raw`` when neither has them. An item is (image, label):
the image a (28, 28) uint8 array where torchvision gives a PIL image (its
transforms take either), the label an int.
"""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np

from ..data import Dataset, download_mnist, load_mnist
from ..data.mnist import _has_split

__all__ = ["datasets", "transforms", "MNIST", "Compose", "ToTensor", "Normalize", "Lambda"]


class MNIST(Dataset):
    """MNIST's training set (60,000 images) or test set (10,000), as torchvision's."""

    def __init__(self, root, train: bool = True, transform=None, target_transform=None,
                 download: bool = False):
        self.root, self.train = Path(root).expanduser(), bool(train)
        self.transform, self.target_transform = transform, target_transform
        raw = self.root / "MNIST" / "raw"
        if _has_split(raw, self.train):
            found = load_mnist(raw, self.train, flatten=False)
        else:
            try:
                found = load_mnist(None, self.train, allow_sample=False, flatten=False)
            except FileNotFoundError:
                if not download:
                    raise FileNotFoundError(
                        f"MNIST not found in {raw} nor where tinynet keeps it "
                        "($TINYNET_DATA/mnist, ~/.cache/tinynet/mnist); use "
                        "download=True") from None
                found = load_mnist(download_mnist(raw), self.train, flatten=False)
        self.data, self.targets = found.images, found.labels

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class Compose:
    """Apply the transforms in turn."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class ToTensor:
    """An image, (H, W) or (H, W, C) of uint8 (or a PIL image), as a float32 tensor
    (C, H, W) in [0, 1]."""

    def __call__(self, image):
        from ..creation import tensor
        pixels = np.asarray(image)
        if pixels.ndim == 2:
            pixels = pixels[:, :, None]
        scaled = pixels.astype(np.float32)
        if pixels.dtype == np.uint8:
            scaled /= np.float32(255)
        return tensor(np.ascontiguousarray(scaled.transpose(2, 0, 1)))


class Normalize:
    """(x − mean) / std per channel of a (C, H, W) tensor."""

    def __init__(self, mean, std, inplace: bool = False):
        self.mean = np.asarray(mean, np.float32).reshape(-1, 1, 1)
        self.std = np.asarray(std, np.float32).reshape(-1, 1, 1)

    def __call__(self, image):
        from ..creation import tensor
        return tensor((image.numpy() - self.mean) / self.std)


class Lambda:
    """A function as a transform."""

    def __init__(self, function):
        self.function = function

    def __call__(self, image):
        return self.function(image)


datasets = types.ModuleType("tinynet.as_torch.torchvision.datasets", "torchvision.datasets")
datasets.MNIST = MNIST
transforms = types.ModuleType("tinynet.as_torch.torchvision.transforms",
                              "torchvision.transforms")
vars(transforms).update(Compose=Compose, ToTensor=ToTensor, Normalize=Normalize, Lambda=Lambda)
