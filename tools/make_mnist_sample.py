"""Build the MNIST sample bundled with tinynet from a full copy of MNIST.

    python tools/make_mnist_sample.py DIR [--out tinynet/data/sample]

DIR holds the four standard files (train-images-idx3-ubyte.gz, ...). Their
content is checked against the known digests first. The sample is the first
10,000 training examples and the whole test set, in the same four files;
the output is the same bytes every time (gzip without a timestamp).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from tinynet.data.files import gunzipped_sha256
from tinynet.data.idx import read_mnist, write_idx
from tinynet.data.mnist import MNIST_SHA256, TEST_FILES, TRAIN_FILES

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_TRAIN_SIZE = 10_000


def verify_source(source: Path) -> None:
    """Stop unless every file in ``source`` has MNIST's content."""
    for name, expected in MNIST_SHA256.items():
        found = gunzipped_sha256(source / name)
        if found != expected:
            raise SystemExit(f"{source / name}: not the MNIST data (uncompressed "
                             f"SHA-256 {found}, expected {expected})")


def copy_split(source: Path, out: Path, files: tuple[str, str], count: int | None) -> None:
    """Copy the first ``count`` examples (all when None) of one split's pair of files."""
    images, labels = read_mnist(*(source / name for name in files))
    for name, array in zip(files, (images[:count], labels[:count].astype("u1")), strict=True):
        write_idx(out / name, array)
        print(f"{out / name}: {len(array):,} examples, {(out / name).stat().st_size:,} bytes")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="directory holding the full MNIST files")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "tinynet" / "data" / "sample",
                        help="where to write the sample (default: %(default)s)")
    args = parser.parse_args(argv)
    verify_source(args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    copy_split(args.source, args.out, TRAIN_FILES, SAMPLE_TRAIN_SIZE)
    copy_split(args.source, args.out, TEST_FILES, None)


if __name__ == "__main__":
    main()
