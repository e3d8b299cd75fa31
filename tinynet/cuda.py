"""``torch.cuda``'s queries, answered for tinynet's GPU (CuPy arrays).

Programs ask these before they choose a device (``"cuda" if
torch.cuda.is_available() else "cpu"``): the answers are true for this machine,
and the seeding and synchronizing calls do what they say where there is a GPU.
"""
from __future__ import annotations

from . import backend as _backend
from .lacking import lacking

__all__ = ["is_available", "device_count", "current_device", "get_device_name",
           "manual_seed", "manual_seed_all", "synchronize", "empty_cache", "is_bf16_supported"]


def is_available() -> bool:
    """Whether tinynet can compute on a GPU here: CuPy installed and a CUDA GPU found."""
    return _backend.cuda_is_available()


def device_count() -> int:
    """The number of GPUs tinynet can use: 1 where one is available (tinynet uses one)."""
    return int(is_available())


def current_device() -> int:
    """The index of the GPU tinynet uses, 0; an error without one."""
    _backend._require_cuda()
    return 0


def get_device_name(device=None) -> str:
    """The GPU's name, as CUDA reports it."""
    cupy = _backend._require_cuda()
    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


def manual_seed(seed: int) -> None:
    """Seed the GPU's random generator (where there is none, nothing to seed)."""
    if is_available():
        _backend.get_backend("cuda").seed(int(seed))


manual_seed_all = manual_seed     # one GPU


def synchronize(device=None) -> None:
    """Wait until the GPU has finished all queued work (nothing to wait for without one)."""
    if is_available():
        _backend._require_cuda().cuda.get_current_stream().synchronize()


def empty_cache() -> None:
    """Give CuPy's cached, unused GPU memory back to the driver."""
    if is_available():
        _backend._require_cuda().get_default_memory_pool().free_all_blocks()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: tinynet computes in float16, float32 and float64, not bfloat16."""
    return False

__getattr__ = lacking("torch.cuda")
