"""Fewer threads while other processes keep the cores busy (tinynet/runtime/load.py)."""
import importlib
import os

import pytest

import tinynet
from tinynet.runtime import load, threads

linux_only = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads Linux's /proc")


@pytest.mark.parametrize("others, cores, expected", [
    (0.0, 2, 2), (0.3, 2, 2), (0.6, 2, 1), (1.0, 2, 1), (2.5, 2, 1),
    (0.0, 16, 16), (3.4, 16, 13), (3.6, 16, 12), (40.0, 16, 1)])
def test_free_cores(others, cores, expected):
    assert load.free_cores(others, cores) == expected


class FakeMachine:
    """/proc as the machine would show it: ticks (1/100 s) that advance by hand."""

    def __init__(self, monkeypatch, cores=2):
        self.now, self.busy, self.own, self.counts = 1000.0, 10_000, 500, []
        monkeypatch.setattr(load, "_last", None)
        monkeypatch.setattr(load, "_TICKS", 100)
        monkeypatch.setattr(load, "_cpus", lambda: set(range(cores)))
        monkeypatch.setattr(load, "_busy_ticks", lambda cpus: self.busy)
        monkeypatch.setattr(load, "_own_ticks", lambda: self.own)
        monkeypatch.setattr(load.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(threads, "adapt_thread_count", self.counts.append)
        monkeypatch.delenv(load.ADAPT_VARIABLE, raising=False)
        monkeypatch.setattr(threads, "_num_threads", None)
        for name in threads.THREAD_COUNT_VARIABLES:
            monkeypatch.delenv(name, raising=False)

    def run(self, seconds, ours, others):
        """``seconds`` pass with this process on ``ours`` cores and others on ``others``."""
        self.now += seconds
        self.own += int(100 * seconds * ours)
        self.busy += int(100 * seconds * (ours + others))
        load.adapt()


def test_threads_follow_the_cores_other_processes_leave(monkeypatch):
    machine = FakeMachine(monkeypatch)
    machine.run(0, 0, 0)                 # the first look only takes the counts
    assert machine.counts == []
    machine.run(1.0, ours=2, others=0)
    machine.run(1.0, ours=1, others=1)   # one busy process arrives
    machine.run(1.0, ours=1, others=1)
    machine.run(1.0, ours=1, others=0)   # and leaves
    assert machine.counts == [2, 1, 1, 2]


def test_it_looks_at_most_once_an_interval(monkeypatch):
    machine = FakeMachine(monkeypatch)
    machine.run(0, 0, 0)
    for _ in range(10):
        machine.run(load.INTERVAL / 20, ours=1, others=1)
    assert len(machine.counts) == 0
    machine.run(load.INTERVAL, ours=1, others=1)
    assert machine.counts == [1]


@pytest.mark.parametrize("choice", ["set_num_threads", "OMP_NUM_THREADS", "switched off"])
def test_a_thread_count_the_user_chose_is_left_alone(monkeypatch, choice):
    machine = FakeMachine(monkeypatch)
    if choice == "set_num_threads":
        monkeypatch.setattr(threads, "_num_threads", 2)
    elif choice == "OMP_NUM_THREADS":
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
    else:
        monkeypatch.setenv(load.ADAPT_VARIABLE, "0")
    for _ in range(3):
        machine.run(1.0, ours=1, others=1)
    assert machine.counts == []


def test_a_backward_pass_takes_the_look(monkeypatch):
    looks = []
    tensor_module = importlib.import_module("tinynet.tensor")    # not the function tinynet.tensor
    monkeypatch.setattr(tensor_module, "adapt_threads_to_load", lambda: looks.append(1))
    x = tinynet.randn(3, requires_grad=True)
    (x * x).sum().backward()
    assert looks == [1]


def test_the_adapted_count_is_applied_and_reported(monkeypatch):
    from threadpoolctl import threadpool_info
    monkeypatch.setattr(threads, "_num_threads", None)
    for name in threads.THREAD_COUNT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    cores = threads._cores()
    if cores < 2:
        pytest.skip("needs two cores")
    tinynet.ones(2) + 1                  # the CPU backend: its pools started
    try:
        threads.adapt_thread_count(1)
        assert tinynet.get_num_threads() == 1
        blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
        assert blas and set(blas) == {1}
    finally:
        threads.adapt_thread_count(cores)
    assert tinynet.get_num_threads() == cores and threads._adapted is None


@linux_only
def test_the_counts_read_from_proc_move_with_work():
    cpus = load._cpus()
    busy, own = load._busy_ticks(cpus), load._own_ticks()
    for _ in range(100_000):                      # work until /proc counts 0.1 s of it
        sum(range(10_000))
        if load._own_ticks() - own >= 10 and load._busy_ticks(cpus) - busy >= 10:
            break
    assert load._own_ticks() - own >= 10          # in 1/100 s
    assert load._busy_ticks(cpus) - busy >= 10
