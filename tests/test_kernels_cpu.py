"""CPU rung 5 (tinynet.kernels.ladder.cpu_5_typed) and the Adam kernel (adam_cpu)
against the NumPy reference, the spec: the rung's own machinery (typed drivers
that check their arguments, the serial and parallel drivers);
tests/test_kernel_ladder.py runs every rung on the common cases."""
import numpy as np
import pytest

from tinynet.kernels.ladder import cpu_5_typed as cpu
from tinynet.kernels.ladder import reference
from tinynet.kernels.ops import adam_cpu, adam_spec

RTOL = {np.float32: 1e-5, np.float64: 1e-12}
EPS = 1e-5
AWKWARD_H = (1, 7, 31, 32, 33, 1000, 1024, 4097, 65536)
# A few rows of every awkward H, one row, and many rows; the larger ones take
# the parallel path (cpu.PARALLEL_MIN_ELEMENTS), the smaller the serial one.
SHAPES = [(3, H) for H in AWKWARD_H] + [(1, 1), (1, 1024), (300, 256), (2000, 33), (600, 1000),
                                       (9000, 64)]


def layer_norm_inputs(shape, dtype, offset=0.0, seed=0):
    """x (offset + N(0, 1)), gain, bias and dy of one shape and dtype."""
    rng = np.random.default_rng(seed)
    x = (offset + rng.standard_normal(shape)).astype(dtype)
    gain = (1 + 0.5 * rng.standard_normal(shape[1])).astype(dtype)
    bias = rng.standard_normal(shape[1]).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    return x, gain, bias, dy


def assert_close(actual, expected, rtol, scale=None):
    """Elementwise, with a tolerance scaled by the largest expected magnitude."""
    expected = np.asarray(expected)
    if scale is None:
        scale = np.max(np.abs(expected)) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def assert_matches_reference(x, gain, bias, dy, rtol):
    """Forward and backward of the kernels equal the reference's to ``rtol``."""
    y, mean, rstd = cpu.layer_norm_forward(x, gain, bias, EPS)
    ref_y, ref_mean, ref_rstd = reference.layer_norm_forward(x, gain, bias, EPS)
    assert y.dtype == x.dtype and mean.dtype == rstd.dtype == np.float64
    assert y.shape == x.shape and mean.shape == rstd.shape == (x.shape[0],)
    assert_close(y, ref_y, rtol)
    assert_close(mean, ref_mean, rtol, scale=np.max(np.abs(x)))   # μ ≈ 0 is exact only to |x|
    assert_close(rstd, ref_rstd, rtol)

    grads = cpu.layer_norm_backward(dy, x, mean, rstd, gain)
    ref_grads = reference.layer_norm_backward(dy, x, ref_mean, ref_rstd, gain)
    for actual, expected in zip(grads, ref_grads, strict=True):
        if expected is None:
            assert actual is None
        else:
            assert actual.dtype == expected.dtype
            assert_close(actual, expected, rtol)


def run_forward_and_backward(x, gain, bias, dy):
    y, mean, rstd = cpu.layer_norm_forward(x, gain, bias, EPS)
    return (y, mean, rstd) + cpu.layer_norm_backward(dy, x, mean, rstd, gain)


@pytest.mark.parametrize("shape", [(2000, 33), (7, 1024)], ids=str)
def test_serial_and_parallel_drivers_agree(shape, monkeypatch):
    x, gain, bias, dy = layer_norm_inputs(shape, np.float32, offset=3.0)
    results = []
    for parallel in (False, True):
        monkeypatch.setattr(cpu, "_use_parallel", lambda size, parallel=parallel: parallel)
        results.append(run_forward_and_backward(x, gain, bias, dy))
    for serial, parallel in zip(*results, strict=True):
        assert_close(parallel, serial, 1e-6)


@pytest.mark.parametrize("shape", [(64, 128), (3, 4097)], ids=str)
def test_the_same_array_may_be_passed_as_dy_and_x(shape):
    """Arrays the kernels only read may share memory."""
    x, gain, bias, _ = layer_norm_inputs(shape, np.float64, offset=3.0)
    assert_matches_reference(x, gain, bias, x, RTOL[np.float64])


def test_empty_batch():
    x = np.zeros((0, 5), np.float32)
    y, mean, rstd = cpu.layer_norm_forward(x, None, None, EPS)
    assert y.shape == (0, 5) and mean.shape == rstd.shape == (0,)
    dx, dgain, dbias = cpu.layer_norm_backward(x, x, mean, rstd, np.ones(5, np.float32))
    assert dx.shape == (0, 5)
    np.testing.assert_array_equal(dgain, 0)
    np.testing.assert_array_equal(dbias, 0)


def float32_far_from_zero(rows=64, H=256, seed=0):
    """float32 rows x = 10⁴ + 0.01·N(0, 1): μ is 10⁶ σ away from zero."""
    rng = np.random.default_rng(seed)
    return (1e4 + 0.01 * rng.standard_normal((rows, H))).astype(np.float32)


def naive_float32_layer_norm(x):
    """A plain float32 two-pass, unshifted: what the accuracy test must catch."""
    mean = x.mean(axis=1, keepdims=True, dtype=np.float32)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True, dtype=np.float32)
    return (x - mean) / np.sqrt(var + np.float32(EPS))


def assert_accurate_far_from_zero(run, rows=64):
    """``run(x, dy) -> (y, dx)`` on float32 rows 1e4 + 0.01·N(0, 1) gives y and dx
    within 1e-4 of a float64 computation on the same float32 inputs."""
    x = float32_far_from_zero(rows=rows)
    dy = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    exact_y, exact_mean, exact_rstd = reference.layer_norm_forward(
        x.astype(np.float64), None, None, EPS)
    exact_dx, _, _ = reference.layer_norm_backward(
        dy.astype(np.float64), x.astype(np.float64), exact_mean, exact_rstd, None)

    def relative_error(a, exact):
        return np.max(np.abs(a - exact)) / np.max(np.abs(exact))

    assert relative_error(naive_float32_layer_norm(x), exact_y) > 1e-3   # the test can fail
    y, dx = run(x, dy)
    assert relative_error(y, exact_y) < 1e-4
    assert relative_error(dx, exact_dx) < 1e-4


@pytest.mark.parametrize("make, message", [
    (lambda x, g: (x[0], g, g), "2-D"),
    (lambda x, g: (x.astype(np.int32), None, None), "float32 or float64"),
    (lambda x, g: (x, g[:-1], g), r"gain must have shape \(5,\)"),
    (lambda x, g: (x, g, g.astype(np.float64)), "bias must have .*dtype float32"),
    (lambda x, g: (x[:, :0], None, None), "H ≥ 1"),
    (lambda x, g: (x[:, :0], g[:0], g[:0]), "H ≥ 1"),
])
def test_forward_rejects_bad_input(make, message):
    x, gain, _, _ = layer_norm_inputs((3, 5), np.float32)
    with pytest.raises(ValueError, match=message):
        cpu.layer_norm_forward(*make(x, gain), EPS)


@pytest.mark.parametrize("eps, error, message", [
    ("1e-5", TypeError, "eps must be a real number, got str '1e-5'"),
    (None, TypeError, "eps must be a real number, got NoneType"),
    (-1e-5, ValueError, "eps must be >= 0, got -1e-05"),
    (np.nan, ValueError, "eps is NaN"),
])
def test_forward_rejects_an_eps_that_is_no_number_or_negative(eps, error, message):
    x, gain, bias, _ = layer_norm_inputs((3, 5), np.float32)
    assert cpu.layer_norm_forward(x, gain, bias, np.float32(EPS))    # the test can fail
    with pytest.raises(error, match=message):
        cpu.layer_norm_forward(x, gain, bias, eps)


@pytest.mark.parametrize("position, name", [(0, "x"), (1, "gain"), (2, "bias")])
def test_forward_names_an_argument_that_is_not_an_array(position, name):
    x, gain, bias, _ = layer_norm_inputs((3, 5), np.float32)
    arguments = [x, gain, bias]
    arguments[position] = arguments[position].tolist()
    with pytest.raises(TypeError, match=f"NumPy or CuPy arrays; {name} is a list"):
        cpu.layer_norm_forward(*arguments, EPS)


@pytest.mark.parametrize("position, name", [(0, "dy"), (1, "x"), (2, "mean"), (3, "rstd"),
                                            (4, "gain")])
def test_backward_names_an_argument_that_is_not_an_array(position, name):
    x, gain, bias, dy = layer_norm_inputs((3, 5), np.float32)
    _, mean, rstd = cpu.layer_norm_forward(x, gain, bias, EPS)
    arguments = [dy, x, mean, rstd, gain]
    arguments[position] = arguments[position].tolist()
    with pytest.raises(TypeError, match=f"NumPy or CuPy arrays; {name} is a list"):
        cpu.layer_norm_backward(*arguments)


def test_backward_rejects_bad_input():
    x, gain, bias, dy = layer_norm_inputs((3, 5), np.float32)
    _, mean, rstd = cpu.layer_norm_forward(x, gain, bias, EPS)
    with pytest.raises(ValueError, match=r"dy must match x: shape \(3, 5\)"):
        cpu.layer_norm_backward(dy[:2], x, mean, rstd, gain)
    with pytest.raises(ValueError, match="dy must match x.*float64"):
        cpu.layer_norm_backward(dy.astype(np.float64), x, mean, rstd, gain)
    with pytest.raises(ValueError, match=r"mean must have shape \(3,\)"):
        cpu.layer_norm_backward(dy, x, mean[:2], rstd, gain)
    with pytest.raises(ValueError, match="gain must have shape"):
        cpu.layer_norm_backward(dy, x, mean, rstd, gain[:3])


def read_only(*arrays):
    copies = [a.copy() for a in arrays]
    for a in copies:
        a.flags.writeable = False
    return copies


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_read_only_inputs_are_taken_as_they_are(dtype):
    """The drivers' signatures type inputs read-only, so that Numba takes
    read-only arrays (and writable ones) without a refusal and a second try."""
    x, gain, bias, dy = read_only(*layer_norm_inputs((4, 33), dtype, offset=3.0))
    forward = cpu._forward(x, gain, bias, EPS)
    assert forward is not None
    _, mean, rstd = forward
    backward = cpu._backward(dy, x, *read_only(mean, rstd), gain)
    assert backward is not None
    assert_matches_reference(x, gain, bias, dy, RTOL[dtype])


def test_views_that_are_not_c_contiguous_skip_the_drivers(monkeypatch):
    """Numba takes 100-250 µs to refuse arguments of a type no driver was
    compiled for, so views of x and dy are made contiguous before any try."""
    x, gain, bias, dy = layer_norm_inputs((4, 66), np.float32)
    _, mean, rstd = cpu.layer_norm_forward(x, gain, bias, EPS)

    def refuse(driver, *arguments):
        raise AssertionError(f"{driver.__name__} was offered arguments it refuses")

    assert cpu._forward(x, gain, bias, EPS) is not None      # the test can fail
    monkeypatch.setattr(cpu, "_run", refuse)
    assert cpu._forward(x[:, ::2], gain[::2], bias[::2], EPS) is None
    assert cpu._forward(np.asfortranarray(x), gain, bias, EPS) is None
    assert cpu._backward(np.broadcast_to(dy[:1], dy.shape), x, mean, rstd, gain) is None
    assert cpu._backward(dy, x.T.copy().T, mean, rstd, gain) is None


def forward_driver_arguments(x, gain, bias):
    """Arguments of the forward drivers by name, outputs filled with NaN."""
    rows = x.shape[0]
    return dict(x=x, gain=gain, bias=bias, eps=EPS, y=np.full(x.shape, np.nan, x.dtype),
                mean=np.full(rows, np.nan), rstd=np.full(rows, np.nan))


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("misfit", ["gain", "bias", "y", "mean", "H = 0", "eps < 0", "eps NaN"])
def test_the_forward_drivers_refuse_arguments_that_do_not_fit(misfit, parallel):
    x, gain, bias, _ = layer_norm_inputs((4, 33), np.float32)
    arguments = forward_driver_arguments(x, gain, bias)
    if misfit == "H = 0":
        arguments.update(x=x[:, :0].copy(), gain=gain[:0], bias=bias[:0])
    elif misfit.startswith("eps"):
        arguments["eps"] = -EPS if misfit == "eps < 0" else np.nan
    else:
        arguments[misfit] = arguments[misfit][..., :-1].copy()
    driver = cpu._forward_parallel if parallel else cpu._forward_serial
    assert not driver(*arguments.values())
    assert np.all(np.isnan(arguments["mean"]))                # nothing was written
    assert driver(*forward_driver_arguments(x, gain, bias).values())      # the test can fail


@pytest.mark.parametrize("misfit", ["dy", "mean", "rstd", "gain", "dx", "gain_grads"])
def test_the_backward_driver_refuses_shapes_that_do_not_fit(misfit):
    x, gain, bias, dy = layer_norm_inputs((4, 33), np.float64)
    _, mean, rstd = cpu.layer_norm_forward(x, gain, bias, EPS)
    arguments = dict(dy=dy, x=x, mean=mean, rstd=rstd, gain=gain,
                     dx=np.full(x.shape, np.nan), gain_grads=np.full((2, 33), np.nan))
    assert cpu._backward_serial(*arguments.values())                 # the test can fail
    arguments["dx"][:] = np.nan
    arguments[misfit] = arguments[misfit][..., :-1].copy()
    assert not cpu._backward_serial(*arguments.values())
    assert np.all(np.isnan(arguments["dx"])) or misfit == "dx"


def test_the_drivers_refuse_types_they_were_not_compiled_for():
    x, gain, bias, _ = layer_norm_inputs((4, 33), np.float32)
    for bad in (dict(gain=gain.astype(np.float64)), dict(x=x.T.copy().T), dict(bias=None)):
        arguments = {**forward_driver_arguments(x, gain, bias), **bad}
        with pytest.raises(TypeError, match="No matching definition"):
            cpu._forward_serial(*arguments.values())


def test_statistics_of_another_dtype_are_converted():
    x, gain, bias, dy = layer_norm_inputs((4, 33), np.float32)
    _, mean, rstd = cpu.layer_norm_forward(x, gain, bias, EPS)
    mean, rstd = mean.astype(np.float32), rstd.astype(np.float32)
    converted = cpu.layer_norm_backward(dy, x, mean.astype(np.float64),
                                        rstd.astype(np.float64), gain)
    for a, b in zip(cpu.layer_norm_backward(dy, x, mean, rstd, gain), converted, strict=True):
        np.testing.assert_array_equal(a, b)


def adam_state(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    param = rng.standard_normal(shape).astype(dtype)
    return param, np.zeros_like(param), np.zeros_like(param), rng


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight_decay, decay", [(0.0, 1.0), (0.01, 1.0), (0.0, 0.999)],
                         ids=["plain", "L2", "decoupled"])
@pytest.mark.parametrize("shape", [(3, 7), (600, 1000)], ids=["serial", "parallel"])
def test_adam_step_matches_the_reference(shape, weight_decay, decay, dtype):
    param, exp_avg, exp_avg_sq, rng = adam_state(shape, dtype)
    ref = [a.copy() for a in (param, exp_avg, exp_avg_sq)]
    for step in range(1, 4):
        grad = rng.standard_normal(shape).astype(dtype)
        hyper = (step, 1e-2, 0.9, 0.999, 1e-8, weight_decay, decay)
        adam_cpu.adam_step(param, grad, exp_avg, exp_avg_sq, *hyper)
        adam_spec.adam_step(ref[0], grad, ref[1], ref[2], *hyper)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for actual, expected in zip((param, exp_avg, exp_avg_sq), ref, strict=True):
        assert actual.dtype == dtype
        np.testing.assert_allclose(actual, expected, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 7), (600, 1000)], ids=["serial", "parallel"])
def test_adam_step_decay_gives_the_bits_of_decaying_first(shape, dtype):
    """AdamW's θ ← θ (1 − lr λ) inside the step gives the bits of the separate
    in-place product before it, which is what torch.optim.AdamW computes."""
    param, exp_avg, exp_avg_sq, rng = adam_state(shape, dtype)
    fused = [a.copy() for a in (param, exp_avg, exp_avg_sq)]
    decay = 1 - 1e-2 * 0.1
    for step in range(1, 4):
        grad = rng.standard_normal(shape).astype(dtype)
        param *= decay
        adam_cpu.adam_step(param, grad, exp_avg, exp_avg_sq, step, 1e-2, 0.9, 0.99, 1e-8, 0.0)
        adam_cpu.adam_step(fused[0], grad, fused[1], fused[2], step, 1e-2, 0.9, 0.99, 1e-8,
                           0.0, decay)
    for separate, together in zip((param, exp_avg, exp_avg_sq), fused, strict=True):
        np.testing.assert_array_equal(together.view(np.uint8), separate.view(np.uint8))
    assert not np.array_equal(fused[0], adam_state(shape, dtype)[0])


def test_adam_step_rejects_mismatched_or_strided_arrays():
    param, exp_avg, exp_avg_sq, _ = adam_state((4, 6), np.float32)
    with pytest.raises(ValueError, match="grad has shape .* dtype float64"):
        adam_cpu.adam_step(param, param.astype(np.float64), exp_avg, exp_avg_sq, 1, 1e-3,
                      0.9, 0.999, 1e-8, 0.0)
    with pytest.raises(ValueError, match="contiguous"):
        adam_cpu.adam_step(param[:, ::2], param[:, ::2], exp_avg[:, ::2], exp_avg_sq[:, ::2],
                      1, 1e-3, 0.9, 0.999, 1e-8, 0.0)


def test_adam_flushes_subnormal_moments_to_zero():
    """A moment decaying below the smallest normal float becomes 0 (x86 computes
    with subnormals ~15x slower), and the update is unchanged to within 1e-30."""
    from tinynet.kernels.ops import adam_spec
    tiny = np.finfo(np.float32).tiny
    param = np.ones(4, np.float32)
    grad = np.zeros(4, np.float32)
    exp_avg = np.array([tiny, tiny * 0.5, -tiny * 2, 0.0], np.float32)
    exp_avg_sq = np.array([tiny * 0.5, tiny, 0.0, tiny * 4], np.float32)
    expected = [a.copy() for a in (param, grad, exp_avg, exp_avg_sq)]
    adam_spec.adam_step(*expected, 3, 1e-3, 0.9, 0.999, 1e-8, 0.0)
    adam_cpu.adam_step(param, grad, exp_avg, exp_avg_sq, 3, 1e-3, 0.9, 0.999, 1e-8, 0.0)
    assert np.all((exp_avg == 0) | (np.abs(exp_avg) >= tiny))
    assert np.all((exp_avg_sq == 0) | (exp_avg_sq >= tiny))
    assert exp_avg[1] == 0 and exp_avg_sq[0] == 0          # 0.9 · tiny/2 is subnormal
    np.testing.assert_allclose(param, expected[0], rtol=0, atol=1e-30)
