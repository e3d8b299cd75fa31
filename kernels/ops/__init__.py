"""The ops' compiled CPU kernels (``*_cpu.py``), each beside its spec (``*_spec.py``),
plain NumPy/CuPy array code that the CUDA table runs and the kernel is tested
against. ``tinynet/kernels/tables.py`` says which runs where."""
