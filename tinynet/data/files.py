"""Data files on disk: atomic writes, content digests, verified downloads.

A file is never seen half-written: downloads go through
:func:`tinynet.serialization.atomic_write` (a temporary file in the same
directory, renamed over the target only when complete).

Downloads are verified by the SHA-256 of their *uncompressed* content, so a
copy of the same data compressed differently (another mirror, another gzip)
verifies too.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import urllib.error
import urllib.request
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from tqdm import tqdm

from ..serialization import atomic_write

__all__ = ["DownloadError", "ChecksumError", "gunzipped_sha256", "download_files"]

CHUNK_SIZE = 1 << 20
TIMEOUT_SECONDS = 30

# What can go wrong between us and a mirror (a short read is a ConnectionError).
_NETWORK_ERRORS = (urllib.error.URLError, TimeoutError, ConnectionError,
                   http.client.HTTPException)


class DownloadError(OSError):
    """A file could not be fetched from any mirror."""


class ChecksumError(DownloadError):
    """A downloaded file is not the expected one (its SHA-256 differs)."""


def gunzipped_sha256(path) -> str:
    """The SHA-256 (hex) of the uncompressed content of a gzip file.

    Raises :class:`gzip.BadGzipFile`, ``EOFError`` or ``zlib.error`` when the
    file is not a complete, valid gzip stream.
    """
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as file:
        while chunk := file.read(CHUNK_SIZE):
            digest.update(chunk)
    return digest.hexdigest()


def download_files(directory, checksums: Mapping[str, str], mirrors: Sequence[str],
                   progress: bool = True) -> None:
    """Download each gzip file of ``checksums`` that ``directory`` does not hold yet.

    ``checksums`` maps file names to the SHA-256 of their uncompressed content;
    ``mirrors`` are base URLs, tried in order (``file://`` URLs work too). The
    directory is created if needed; files already there are left alone.

    Raises :class:`DownloadError` when a file is on no mirror (the message
    lists each URL and why it failed, and where to put the files by hand), and
    :class:`ChecksumError` when a mirror serves the wrong content. Either way
    no partial file is left behind.
    """
    directory = Path(directory)
    by_hand = (f"To install them by hand, put these files into {directory}: "
               + ", ".join(checksums))
    directory.mkdir(parents=True, exist_ok=True)
    for name, sha256 in checksums.items():
        if not (directory / name).exists():
            _download_from_mirrors(directory / name, sha256, mirrors, progress, by_hand)


def _download_from_mirrors(target: Path, sha256: str, mirrors, progress, by_hand) -> None:
    failures = []
    for mirror in mirrors:
        url = mirror.rstrip("/") + "/" + target.name
        try:
            _download(url, target, sha256, progress)
            return
        except _NETWORK_ERRORS as error:
            failures.append(f"  {url}: {error}")
    raise DownloadError(f"could not download {target.name} from any mirror:\n"
                        + "\n".join(failures or ["  (no mirrors given)"]) + "\n" + by_hand)


def _download(url: str, target: Path, sha256: str, progress: bool) -> None:
    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response, \
            atomic_write(target) as file:
        _copy_with_progress(response, file, target.name, progress)
        file.flush()
        try:
            found = gunzipped_sha256(file.name)
        except (OSError, EOFError, zlib.error) as error:
            raise ChecksumError(f"{url} is not a valid gzip file ({error}); "
                                "nothing was saved") from None
        if found != sha256:
            raise ChecksumError(f"{url} has the wrong content: the SHA-256 of its "
                                f"uncompressed data is {found}, expected {sha256}; "
                                "nothing was saved")


def _copy_with_progress(response, file, name: str, progress: bool) -> None:
    declared = response.headers.get("Content-Length")
    total = int(declared) if declared else None
    received = 0
    with tqdm(total=total, desc=name, unit="B", unit_scale=True, unit_divisor=1024,
              disable=not progress) as bar:
        while chunk := response.read(CHUNK_SIZE):
            file.write(chunk)
            received += len(chunk)
            bar.update(len(chunk))
    if total is not None and received != total:
        raise ConnectionError(f"the connection closed after {received} of {total} bytes")
