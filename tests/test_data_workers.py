"""DataLoader worker processes (num_workers > 0), IterableDataset and the lazy
RandomSampler, with the single-process loader and torch.utils.data as oracles."""
import collections
import gc
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest

import tinynet
from tinynet.data import DataLoader, Dataset, RandomSampler, TensorDataset
from tinynet.data.dataset import IterableDataset
from tinynet.data.workers import get_worker_info

GUARD = 30      # seconds: the loader's timeout in tests that must never hang


@pytest.fixture
def torch_data():
    return pytest.importorskip("torch").utils.data


def labelled(n):
    """n examples: features (i, i) as float32, label i as int64."""
    x = np.repeat(np.arange(n, dtype=np.float32)[:, None], 2, axis=1)
    return TensorDataset(x, np.arange(n, dtype=np.int64))


def batches(loader):
    """Every batch of one epoch, as nested lists of plain numbers."""
    return [[t.numpy().tolist() for t in batch] for batch in loader]


def worker_processes():
    """The DataLoader workers still running (other tests may have children of their own)."""
    return [p for p in multiprocessing.active_children()
            if p.name.startswith("DataLoader worker")]


def no_workers_left():
    """Whether every DataLoader worker has gone, once the collector has run."""
    gc.collect()
    return worker_processes() == []


class Items(Dataset):
    """A generic dataset (no get_batch): items are (float32 vector, Python int)."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return np.full(2, index, dtype=np.float32), index


class Slow(Items):
    """Items that take ``delay`` seconds each."""

    def __init__(self, n, delay):
        super().__init__(n)
        self.delay = delay

    def __getitem__(self, index):
        time.sleep(self.delay)
        return super().__getitem__(index)


class SlowFirst(Items):
    """Item 0 takes a while: the first batch comes last."""

    def __getitem__(self, index):
        if index == 0:
            time.sleep(0.3)
        return super().__getitem__(index)


class WhoMadeIt(Items):
    """Items that say which worker made them, and what that worker's start-up saw."""

    def __getitem__(self, index):
        info = get_worker_info()
        return (index, info.id, info.num_workers, info.seed, _initialized_as,
                type(info.dataset).__name__)


_initialized_as = -1


def remember_worker(worker_id):
    """A worker_init_fn: the worker's items will show its id."""
    global _initialized_as
    _initialized_as = worker_id


class Draws(Items):
    """Items drawn from the generators each worker seeds: random, NumPy, tinynet."""

    def __getitem__(self, index):
        return (random.random(), np.random.random(), float(tinynet.rand(1).numpy()[0]),
                get_worker_info().id)


class Failing(Items):
    """Item ``bad`` raises ``error``."""

    def __init__(self, n, bad, error):
        super().__init__(n)
        self.bad, self.error = bad, error

    def __getitem__(self, index):
        if index == self.bad:
            raise self.error
        return super().__getitem__(index)


class TwoArgumentError(Exception):
    def __init__(self, code, detail):
        super().__init__(f"{code}: {detail}")


class Numbers(IterableDataset):
    """0 .. n-1, shared out between the workers by get_worker_info."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        worker = get_worker_info()
        if worker is None:
            return iter(range(self.n))
        return iter(range(worker.id, self.n, worker.num_workers))


class SizedNumbers(Numbers):
    def __len__(self):
        return self.n


# ------------------------------------------------------ the same batches as one process
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("options", [dict(batch_size=4), dict(batch_size=3, drop_last=True),
                                     dict(batch_size=5, shuffle=True, generator=7),
                                     dict(batch_size=4, shuffle=True, generator=2,
                                          drop_last=True)])
def test_workers_give_the_single_process_batches_in_order(workers, options):
    single = DataLoader(labelled(23), **options)
    multi = DataLoader(labelled(23), num_workers=workers, timeout=GUARD, **options)
    for _ in range(2):                      # two epochs: new orders, still the same
        assert batches(multi) == batches(single)
    assert len(multi) == len(single)


def test_batches_that_come_early_wait_their_turn():
    loader = DataLoader(SlowFirst(12), batch_size=2, num_workers=3, timeout=GUARD)
    assert batches(loader) == batches(DataLoader(SlowFirst(12), batch_size=2))


def test_a_generic_dataset_and_a_collate_fn_go_through_workers_too():
    assert batches(DataLoader(Items(7), batch_size=3, num_workers=2)) == \
        batches(DataLoader(Items(7), batch_size=3))

    def labels_only(items):
        return [label for _, label in items]

    assert list(DataLoader(Items(7), batch_size=3, num_workers=2, collate_fn=labels_only)) == \
        [[0, 1, 2], [3, 4, 5], [6]]


def test_without_a_seed_the_workers_shuffle_from_tinynets_generator():
    tinynet.manual_seed(4)
    single = batches(DataLoader(labelled(30), batch_size=4, shuffle=True))
    tinynet.manual_seed(4)
    assert batches(DataLoader(labelled(30), batch_size=4, shuffle=True, num_workers=2)) == single


def test_in_order_false_still_gives_every_batch_once():
    loader = DataLoader(Items(20), batch_size=3, num_workers=3, in_order=False)
    labels = sorted(label for _, y in loader for label in y.numpy().tolist())
    assert labels == list(range(20))


def test_tensors_cross_processes_with_their_dtypes_and_without_grad():
    def as_tensors(items):
        labels = [label for _, label in items]
        return (tinynet.tensor(np.array(labels, dtype=np.int8)),
                tinynet.tensor(np.array(labels, dtype=np.float16)))

    for small, half in DataLoader(Items(4), batch_size=2, num_workers=1, collate_fn=as_tensors):
        assert isinstance(small, tinynet.Tensor) and small.dtype == np.int8
        assert half.dtype == np.float16 and not half.requires_grad


# ------------------------------------------------------------- inside the workers
def test_worker_init_fn_and_get_worker_info_in_each_worker():
    assert get_worker_info() is None
    loader = DataLoader(WhoMadeIt(8), batch_size=2, num_workers=2,
                        worker_init_fn=remember_worker)
    seeds = {}
    for _, worker, workers, seed, initialized_as, dataset in loader:
        assert (worker.numpy() == initialized_as.numpy()).all()     # its own init ran
        assert set(workers.numpy().tolist()) == {2} and dataset == ["WhoMadeIt"] * 2
        for w, s in zip(worker.numpy().tolist(), seed.numpy().tolist(), strict=True):
            seeds.setdefault(w, set()).add(s)
    assert sorted(seeds) == [0, 1]
    (seed0,), (seed1,) = seeds[0], seeds[1]
    assert seed1 == seed0 + 1                  # the base seed + the worker's id
    assert get_worker_info() is None and _initialized_as == -1


def test_workers_are_seeded_repeatably_differently_and_anew_each_epoch():
    def epochs(seed):
        tinynet.manual_seed(seed)
        loader = DataLoader(Draws(4), batch_size=1, num_workers=2)
        return [batches(loader) for _ in range(2)]

    first, again, other = epochs(5), epochs(5), epochs(6)
    assert first == again
    assert first != other
    assert first[0] != first[1]
    draws = {tuple(value for field in batch[:3] for value in field) for batch in first[0]}
    assert len(draws) == 4                      # no two workers drew the same numbers


class FirstDraws(Items):
    """What a worker's generators give first, and the seeds it was given."""

    def __getitem__(self, index):
        info = get_worker_info()
        return (info.id, info.seed, random.random(), np.random.random(),
                tinynet.rand(1, dtype=np.float64).numpy()[0])


def test_each_worker_seeds_random_numpy_and_tinynet_as_torch_does():
    worker = pytest.importorskip("torch.utils.data._utils.worker")
    loader = DataLoader(FirstDraws(3), batch_size=1, num_workers=3,
                        collate_fn=lambda items: items[0])
    for worker_id, seed, python, numpy, ours in loader:
        base_seed = seed - worker_id
        assert python == random.Random(seed).random()                 # base seed + id
        assert ours == np.random.default_rng(seed).random()
        # NumPy's global generator: PyTorch's hash of the base seed and the worker id.
        state = worker._generate_state(base_seed, worker_id)
        assert numpy == np.random.RandomState(state).random_sample()


# ------------------------------------------------------------------------ failures
def test_an_exception_in_a_worker_is_raised_with_its_type_worker_and_traceback():
    loader = DataLoader(Failing(8, 5, ValueError("item 5 is broken")), batch_size=2,
                        num_workers=2)
    with pytest.raises(ValueError) as caught:
        list(loader)
    message = str(caught.value)
    del caught                                  # its traceback holds the iterator
    assert message.startswith("Caught ValueError in DataLoader worker process 0.\n")
    assert "Original Traceback (most recent call last)" in message
    assert "item 5 is broken" in message and "__getitem__" in message
    assert no_workers_left()


@pytest.mark.parametrize("error, kind", [(KeyError("missing"), KeyError),
                                         (TwoArgumentError(3, "odd"), RuntimeError)])
def test_a_key_error_keeps_its_lines_and_an_odd_exception_becomes_a_runtime_error(error,
                                                                                 kind):
    with pytest.raises(kind, match=f"Caught {type(error).__name__} in DataLoader worker "
                       "process 0") as caught:
        list(DataLoader(Failing(2, 1, error), batch_size=2, num_workers=1))
    assert "\n  File" in str(caught.value)      # the traceback keeps its lines


def test_a_failing_worker_init_fn_and_an_unpicklable_batch_are_reported():
    def refuse(worker_id):
        raise OSError(f"worker {worker_id} cannot open its file")

    with pytest.raises(OSError, match=r"(?s)in DataLoader worker process 0.*cannot open"):
        list(DataLoader(Items(4), batch_size=2, num_workers=1, worker_init_fn=refuse))
    with pytest.raises(Exception, match="in DataLoader worker process 0"):
        list(DataLoader(Items(4), batch_size=2, num_workers=1,
                        collate_fn=lambda items: lambda: items))
    assert no_workers_left()


def test_a_killed_worker_is_a_clear_runtime_error_not_a_hang():
    iterator = iter(DataLoader(Slow(200, 0.01), batch_size=2, num_workers=2, timeout=GUARD))
    next(iterator)
    os.kill(iterator._workers[1].pid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=r"DataLoader worker process 1 \(pid \d+\) exited "
                       "unexpectedly: killed by signal SIGKILL"):
        for _ in iterator:
            pass
    del iterator
    assert no_workers_left()


def test_timeout_bounds_the_wait_for_a_batch():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.1 seconds"):
        list(DataLoader(Slow(1, 0.5), batch_size=1, num_workers=1, timeout=0.1))
    assert no_workers_left()


# --------------------------------------------------------------------- clean-up
def test_workers_stop_at_the_end_of_the_epoch_and_when_the_iterator_goes():
    loader = DataLoader(labelled(40), batch_size=2, num_workers=2, timeout=GUARD)
    iterator = iter(loader)
    list(iterator)
    assert worker_processes() == []             # exhausted: stopped, though still referenced
    del iterator
    for _ in loader:
        break
    assert no_workers_left()
    iterator = iter(loader)
    next(iterator)
    assert len(worker_processes()) == 2
    del iterator
    assert worker_processes() == []             # no cycle: stopped as the last reference went


def test_persistent_workers_serve_every_epoch_until_the_loader_goes():
    loader = DataLoader(labelled(12), batch_size=5, shuffle=True, generator=1, num_workers=2,
                        persistent_workers=True, timeout=GUARD)
    single = DataLoader(labelled(12), batch_size=5, shuffle=True, generator=1)
    expected = [batches(single) for _ in range(3)]
    assert batches(loader) == expected[0]
    pids = sorted(p.pid for p in worker_processes())
    assert len(pids) == 2
    for _ in loader:                            # an epoch left early...
        break
    assert batches(loader) == expected[2]       # ...then a whole one, in its order
    assert sorted(p.pid for p in worker_processes()) == pids
    assert expected[0] != expected[2]
    del loader
    assert no_workers_left()


def running(pid):
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


PROGRAM = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from tinynet.data import DataLoader, TensorDataset
    dataset = TensorDataset(np.arange(1000.0))
    endless = iter(DataLoader(dataset, batch_size=2, num_workers=2))
    kept = DataLoader(dataset, batch_size=2, num_workers=2, persistent_workers=True)
    next(endless), next(iter(kept))
    print(*(w.pid for w in endless._workers + kept._iterator._workers), flush=True)
    if sys.argv[1] == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["exits", "killed"])
def test_workers_stop_when_the_program_exits_or_is_killed(how):
    finished = subprocess.run([sys.executable, "-c", PROGRAM, how], capture_output=True,
                              text=True, timeout=GUARD)
    assert finished.returncode == (0 if how == "exits" else -signal.SIGKILL), finished.stderr
    pids = [int(pid) for pid in finished.stdout.split()]
    assert len(pids) == 4
    if how == "exits":                          # stopped before the program ended
        assert not any(running(pid) for pid in pids)
    deadline = time.monotonic() + GUARD         # orphans notice their parent has gone
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running(pid) for pid in pids)


# ------------------------------------------------------------- the makemore pattern
def test_an_endless_random_sampler_with_workers_as_makemore_uses_it():
    dataset = labelled(100)
    tracemalloc.start()
    try:
        sampler = RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        loader = DataLoader(dataset, sampler=sampler, pin_memory=True, batch_size=32,
                            num_workers=4, timeout=GUARD)
        iterator = iter(loader)
        drawn = [next(iterator) for _ in range(5)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20
    assert len(loader) == -(-10**10 // 32)
    for x, y in drawn:
        assert x.shape == (32, 2) and y.dtype == np.int64
        assert ((0 <= y.numpy()) & (y.numpy() < 100)).all()
        np.testing.assert_array_equal(x.numpy()[:, 0], y.numpy())
    del iterator
    assert no_workers_left()


def test_random_sampler_with_replacement_draws_lazily(torch_data):
    tracemalloc.start()
    try:
        sampler = RandomSampler(range(7), replacement=True, num_samples=10**10, generator=0)
        indices = iter(sampler)
        first = [next(indices) for _ in range(5000)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(sampler) == 10**10 == len(torch_data.RandomSampler(range(7), True, 10**10))
    assert peak < 2**20 and set(first) == set(range(7))
    again = RandomSampler(range(7), replacement=True, num_samples=5000, generator=0)
    assert list(again) == first                 # the same draws, epoch length aside


@pytest.mark.parametrize("num_samples", [0, -1, 2.5, 1e10, "3"])
def test_random_sampler_num_samples_is_a_positive_int_as_in_torch(torch_data, num_samples):
    with pytest.raises(ValueError):
        torch_data.RandomSampler(range(3), replacement=True, num_samples=num_samples)
    with pytest.raises(ValueError, match="RandomSampler: num_samples should be a positive "
                       "integer value"):
        RandomSampler(range(3), replacement=True, num_samples=num_samples)


# ----------------------------------------------------------------- IterableDataset
def test_an_iterable_dataset_in_one_process_batches_its_items_as_torch(torch_data):
    import torch

    class TorchNumbers(torch_data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

    for drop_last in (False, True):
        ours = [b.numpy().tolist() for b in DataLoader(Numbers(10), 3, drop_last=drop_last)]
        theirs = [b.tolist() for b in torch.utils.data.DataLoader(TorchNumbers(), 3,
                                                                  drop_last=drop_last)]
        assert ours == theirs


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_an_iterable_dataset_shared_out_by_get_worker_info(workers):
    loader = DataLoader(Numbers(11), batch_size=2, num_workers=workers, timeout=GUARD)
    epoch = [b.numpy().tolist() for b in loader]
    assert sorted(sum(epoch, [])) == list(range(11))
    # Worker w's batches come at turns w, w + workers, ... until it runs out.
    assert epoch[0] == [0, workers]
    assert [b.numpy().tolist() for b in loader] == epoch
    assert no_workers_left()


def test_an_iterable_dataset_with_persistent_workers_starts_over_each_epoch():
    loader = DataLoader(Numbers(9), batch_size=2, num_workers=2, persistent_workers=True,
                        drop_last=True, timeout=GUARD)
    first = [b.numpy().tolist() for b in loader]
    assert first == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert [b.numpy().tolist() for b in loader] == first
    del loader
    assert no_workers_left()


def test_an_iterable_dataset_takes_no_sampler_and_its_len_is_its_own(torch_data):
    class TorchNumbers(torch_data.IterableDataset):
        def __iter__(self):
            return iter(range(4))

    for keywords in (dict(shuffle=True), dict(sampler=[0, 1]), dict(batch_sampler=[[0]])):
        with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected "
                           "unspecified"):
            DataLoader(Numbers(4), **keywords)
        with pytest.raises(ValueError, match="expected unspecified"):
            torch_data.DataLoader(TorchNumbers(), **keywords)
    with pytest.raises(TypeError, match="object of type 'Numbers' has no len()"):
        len(DataLoader(Numbers(4), batch_size=2))
    assert Numbers(4)                           # truth does not ask for a len
    assert len(DataLoader(SizedNumbers(5), batch_size=2)) == 3
    assert len(DataLoader(SizedNumbers(5), batch_size=2, drop_last=True)) == 2


# ------------------------------------------------------------------ torch's behaviour
Point = collections.namedtuple("Point", "x y")


class Records(Dataset):
    """Items of every container kind that default_collate takes apart."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return {"image": np.full((2, 2), i, dtype=np.float32), "label": i, "name": f"n{i}",
                "pair": (np.int64(i), np.arange(3) + i), "point": Point(i, 2 * i)}


def plain(batch):
    """A batch as plain Python: containers as lists and dicts, tensors as (dtype, values)."""
    if isinstance(batch, dict):
        return {key: plain(value) for key, value in batch.items()}
    if isinstance(batch, (tuple, list)):
        return [plain(value) for value in batch]
    if isinstance(batch, str):
        return batch
    array = batch.numpy()
    return str(array.dtype), array.tolist()


def test_default_collate_makes_torchs_structure(torch_data):
    ours = [plain(b) for b in DataLoader(Records(), batch_size=3, num_workers=2)]
    theirs = [plain(b) for b in torch_data.DataLoader(Records(), batch_size=3)]
    assert ours == theirs
    point = next(iter(DataLoader(Records(), batch_size=2)))["point"]
    assert isinstance(point, Point) and point.y.numpy().tolist() == [0, 2]


def test_worker_options_are_checked_as_torch_checks_them(torch_data):
    for keywords, error in [(dict(num_workers=1, multiprocessing_context="nope"), ValueError),
                            (dict(num_workers=1, multiprocessing_context=5), TypeError),
                            (dict(multiprocessing_context="spawn"), ValueError),
                            (dict(num_workers=1, prefetch_factor=0), ValueError)]:
        if "prefetch_factor" not in keywords:       # torch refuses 0 only when iterating
            with pytest.raises(error):
                torch_data.DataLoader([1, 2], **keywords)
        with pytest.raises(error, match="DataLoader: .*(multiprocessing_context|prefetch)"):
            DataLoader([1, 2], **keywords)
    ours = DataLoader([1, 2], num_workers=2, multiprocessing_context="fork")
    theirs = torch_data.DataLoader([1, 2], num_workers=2)
    assert ours.prefetch_factor == theirs.prefetch_factor == 2
    assert ours.multiprocessing_context.get_start_method() == "fork"
    assert DataLoader([1], timeout=5).timeout == torch_data.DataLoader([1], timeout=5).timeout


def test_spawned_workers_get_the_dataset_by_pickling():
    loader = DataLoader(Items(5), batch_size=2, num_workers=1, multiprocessing_context="spawn",
                        worker_init_fn=remember_worker, timeout=GUARD)
    assert batches(loader) == batches(DataLoader(Items(5), batch_size=2))
    with pytest.raises(RuntimeError, match="could not start worker process 0 with the "
                       "'spawn' start method"):
        iter(DataLoader(Items(5), num_workers=1, multiprocessing_context="spawn",
                        collate_fn=lambda items: items))
    assert no_workers_left()
