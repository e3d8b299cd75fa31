"""``torch.utils.tensorboard.SummaryWriter``, as a plain log.

TensorBoard's own files are protocol buffers that need the tensorboard package;
this writer keeps what a training program logs, each scalar a line of
``scalars.tsv`` in its log directory (tag, step, value, wall time), and the
text a program adds in ``text.tsv``. Other records (histograms, images) are
accepted and not kept.
"""
from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

__all__ = ["SummaryWriter"]


class SummaryWriter:
    """Logs scalars to ``log_dir/scalars.tsv`` (default ``runs/DATE_HOST``, as
    PyTorch's); ``add_scalar``, ``add_scalars``, ``add_text``, ``flush``, ``close``."""

    def __init__(self, log_dir=None, comment: str = "", **_unused):
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{os.uname().nodename}{comment}")
        self.log_dir = str(log_dir)
        Path(self.log_dir).mkdir(parents=True, exist_ok=True)
        self._files = {}

    def _write(self, name, *fields):
        if name not in self._files:
            self._files[name] = open(Path(self.log_dir) / name, "a", encoding="utf-8")
        self._files[name].write("\t".join(str(f) for f in fields) + "\n")

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, **_unused):
        value = scalar_value.item() if hasattr(scalar_value, "item") else float(scalar_value)
        self._write("scalars.tsv", tag, global_step, value, walltime or time.time())

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        for tag, value in tag_scalar_dict.items():
            self.add_scalar(f"{main_tag}/{tag}", value, global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._write("text.tsv", tag, global_step, repr(text_string), walltime or time.time())

    def __getattr__(self, name):
        if name.startswith("add_"):          # histograms, images, graphs: not kept
            return lambda *args, **kwargs: None
        raise AttributeError(f"tinynet has no SummaryWriter.{name}")

    def flush(self):
        for file in self._files.values():
            file.flush()

    def close(self):
        for file in self._files.values():
            file.close()
        self._files.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
