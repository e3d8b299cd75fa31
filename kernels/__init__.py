"""LayerNorm kernels (installed as ``tinynet.kernels``).

Three modules share one calling convention over 2-D (rows, H) arrays:

* ``tinynet.kernels.reference``: plain NumPy/CuPy array code, the spec;
* ``tinynet.kernels.cpu``: Numba CPU kernels, used by the NumPy backend;
* ``tinynet.kernels.cuda``: Numba CUDA kernels, used by the CuPy backend.

Each exposes ``layer_norm_forward(x, gain, bias, eps) -> (y, mean, rstd)`` and
``layer_norm_backward(dy, x, mean, rstd, gain) -> (dx, dgain, dbias)``. The
backends' kernel tables (``tinynet.backend``) pick them up; nothing here is
imported (or compiled) until first use.
"""
