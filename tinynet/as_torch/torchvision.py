"""The part of torchvision that MNIST programs use, on tinynet: ``datasets.MNIST``,
``transforms.Compose``, ``ToTensor``, ``Normalize``, ``Lambda``, and
``utils.make_grid`` and ``utils.save_image`` (a PNG, written without an image library).

``datasets.MNIST(root, train, transform, target_transform, download)`` reads
the four IDX files from torchvision's place for them, ``root/MNIST/raw``, and
otherwise from where :func:`tinynet.data.load_mnist` finds them
(``$TINYNET_DATA/mnist``, ``~/.cache/tinynet/mnist``); ``download=True`` fetches
them into ``root/MNIST/raw`` when neither has them. An item is (image, label):
the image a (28, 28) uint8 array where torchvision gives a PIL image (its
transforms take either), the label an int.
"""
from __future__ import annotations

import struct
import types
import zlib
from pathlib import Path

import numpy as np

from ..data import Dataset, download_mnist, load_mnist
from ..data.mnist import _has_split

__all__ = ["datasets", "transforms", "utils", "MNIST", "Compose", "ToTensor", "Normalize",
           "Lambda", "make_grid", "save_image"]


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


def make_grid(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range=None, scale_each: bool = False, pad_value: float = 0.0):
    """Images (B, C, H, W) tiled ``nrow`` to a row with ``padding`` pixels of
    ``pad_value`` around each, as one (3, H', W') tensor (one channel is repeated to
    three, as torchvision does); ``normalize`` rescales to [0, 1] by ``value_range``
    (default: the images' min and max), each image alone with ``scale_each``."""
    from ..creation import tensor as make
    images = np.asarray(tensor.detach().cpu().numpy() if hasattr(tensor, "detach")
                        else tensor, dtype=np.float32)
    if images.ndim == 2:
        images = images[None]
    if images.ndim == 3:
        images = images[None] if images.shape[0] in (1, 3) else images[:, None]
    if images.shape[1] == 1:
        images = np.repeat(images, 3, axis=1)
    if normalize:
        def rescale(x):
            low, high = value_range if value_range is not None else (x.min(), x.max())
            return np.clip((x - low) / max(high - low, 1e-5), 0, 1)
        images = (np.stack([rescale(x) for x in images]) if scale_each else rescale(images))
    count, channels, height, width = images.shape
    columns = min(nrow, count)
    rows = -(-count // columns)
    cell_h, cell_w = height + padding, width + padding
    grid = np.full((channels, rows * cell_h + padding, columns * cell_w + padding), pad_value,
                   np.float32)
    for i, image in enumerate(images):
        top, left = (i // columns) * cell_h + padding, (i % columns) * cell_w + padding
        grid[:, top:top + height, left:left + width] = image
    return make(grid)


def save_image(tensor, fp, format=None, **grid_options):
    """Write images (B, C, H, W), or one (C, H, W), as a PNG grid (:func:`make_grid`'s
    options), values in [0, 1] as 0-255, to a path or a binary file object."""
    grid = make_grid(tensor, **grid_options).numpy()
    pixels = np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    height, width, _ = pixels.shape
    rows = b"".join(b"\x00" + row.tobytes() for row in pixels)    # filter 0: none

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n"
           + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    if hasattr(fp, "write"):
        fp.write(png)
    else:
        Path(fp).write_bytes(png)


datasets = types.ModuleType("tinynet.as_torch.torchvision.datasets", "torchvision.datasets")
datasets.MNIST = MNIST
transforms = types.ModuleType("tinynet.as_torch.torchvision.transforms",
                              "torchvision.transforms")
vars(transforms).update(Compose=Compose, ToTensor=ToTensor, Normalize=Normalize, Lambda=Lambda)
utils = types.ModuleType("tinynet.as_torch.torchvision.utils", "torchvision.utils")
vars(utils).update(make_grid=make_grid, save_image=save_image)
