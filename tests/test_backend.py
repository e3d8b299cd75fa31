"""Backends: array modules, devices, the kernel table and its reference switch."""
import numpy as np
import pytest

import tinynet
from tinynet import backend


def test_get_array_module_is_numpy_for_cpu_arrays():
    assert backend.get_array_module(np.ones(2), 3.0) is np
    assert tinynet.get_array_module(tinynet.ones(2).data) is np


def test_unknown_device_is_refused():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        tinynet.ones(2, device="tpu")


@pytest.mark.skipif(backend.cuda_is_available(), reason="a GPU is present")
def test_cuda_without_gpu_raises_a_clear_runtime_error():
    with pytest.raises(RuntimeError, match="CuPy|GPU"):
        tinynet.ones(2).to("cuda")
    with pytest.raises(RuntimeError, match="CuPy|GPU"):
        tinynet.zeros(2, device="cuda")


def test_missing_cupy_is_named(monkeypatch):
    monkeypatch.setattr(backend, "_cupy", None)
    monkeypatch.setattr(backend, "_cupy_checked", True)
    monkeypatch.delitem(backend._backends, "cuda", raising=False)
    with pytest.raises(RuntimeError, match="needs CuPy, which is not installed"):
        tinynet.ones(2).cuda()


def test_kernel_table_lookup_register_and_reference_switch():
    table = backend.KernelTable("cpu")
    table.register("layer_norm_forward", lambda *a: "fast")
    assert table.layer_norm_forward() == "fast"
    with tinynet.use_reference_kernels():
        assert table.layer_norm_forward.__module__ == "tinynet.kernels.ladder.reference"
    assert table.layer_norm_forward() == "fast"
    with pytest.raises(AttributeError, match="no kernel named"):
        table.missing_kernel


def test_the_default_rung_and_a_chosen_one():
    import importlib

    from tinynet.kernels import ladder

    def kernel(rung, name):
        return getattr(importlib.import_module(rung.module), name)

    table = backend.KernelTable("cpu")
    rungs = {r.name: r for r in ladder.LADDERS["cpu"]}
    assert table.layer_norm_forward is kernel(rungs[ladder.DEFAULT["cpu"]], "layer_norm_forward")
    for rung in ladder.LADDERS["cpu"]:
        with tinynet.use_kernels(rung.name):
            assert table.layer_norm_forward is kernel(rung, "layer_norm_forward")
            below = [r for r in ladder.LADDERS["cpu"][:ladder.rung_names("cpu").index(rung.name)
                                                     + 1] if "rms_norm_forward" in r.kernels]
            assert table.rms_norm_forward is kernel(below[-1], "rms_norm_forward")
    with tinynet.use_kernels("reference"):
        assert table.adam_step.__module__ == "tinynet.kernels.ops.adam_spec"
    assert table.adam_step.__module__ == "tinynet.kernels.ops.adam_cpu"


def test_an_unknown_rung_is_named():
    with pytest.raises(ValueError, match="unknown kernel rung 'fastest'.*cpu: reference"):
        with tinynet.use_kernels("fastest"):
            pass
    table = backend.KernelTable("cuda")
    with tinynet.use_kernels("textbook"):
        with pytest.raises(ValueError, match="no kernel rung 'textbook' on cuda"):
            table.layer_norm_forward


def test_mixed_devices_are_named(monkeypatch):
    """Simulate a second device with a stand-in array type."""

    class FakeGPUArray:
        shape = (2,)

    class FakeCupy:
        ndarray = FakeGPUArray

    monkeypatch.setattr(backend, "_cupy", FakeCupy)
    a = tinynet.ones(2)
    b = tinynet.Tensor._make(FakeGPUArray())
    with pytest.raises(RuntimeError, match="same device.*cpu and cuda"):
        a + b


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cuda_is_available(), reason="needs CuPy and a GPU")
def test_cuda_round_trip_and_gradients():
    x = tinynet.randn(3, 4, requires_grad=True)
    y = (x.cuda() * 2).relu().sum()
    y.backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (x.numpy() > 0))
