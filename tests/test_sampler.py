"""Samplers and the DataLoader's PyTorch arguments, with torch.utils.data as the oracle."""
import numpy as np
import pytest

import tinynet
from tinynet.data import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
)


@pytest.fixture
def torch_data():
    return pytest.importorskip("torch").utils.data


def labelled(n):
    """tinynet's dataset of n examples whose label is their index."""
    return TensorDataset(np.arange(n, dtype=np.float32)[:, None], np.arange(n))


def torch_labelled(torch_data, n):
    import torch
    return torch_data.TensorDataset(torch.arange(n, dtype=torch.float32)[:, None],
                                    torch.arange(n))


def batch_labels(loader):
    """Each batch's labels, as lists: the loader's order, batch by batch."""
    return [labels.numpy().tolist() for _, labels in loader]


def torch_batch_labels(loader):
    return [labels.tolist() for _, labels in loader]


def is_permutation(values, n):
    return sorted(values) == list(range(n))


# ------------------------------------------------------------------------ samplers
@pytest.mark.parametrize("n", [0, 1, 7])
def test_sequential_sampler_is_torchs(torch_data, n):
    ours, theirs = SequentialSampler(range(n)), torch_data.SequentialSampler(range(n))
    assert list(ours) == list(theirs) and len(ours) == len(theirs) == n


@pytest.mark.parametrize("n, batch_size, drop_last", [
    (10, 3, False), (10, 3, True), (9, 3, False), (9, 3, True), (2, 5, False), (2, 5, True),
    (0, 2, False), (5, 1, True)])
def test_batch_sampler_makes_torchs_batches(torch_data, n, batch_size, drop_last):
    indices = [7, 1, 8, 2, 9, 3, 0, 4, 6, 5][:n]      # any iterable of indices
    ours = BatchSampler(indices, batch_size, drop_last)
    theirs = torch_data.BatchSampler(indices, batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs) == len(list(ours))
    assert list(BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)) == \
        list(torch_data.BatchSampler(torch_data.SequentialSampler(range(n)), batch_size,
                                     drop_last))


@pytest.mark.parametrize("batch_size", [0, -2])
def test_batch_sampler_refuses_a_batch_size_below_one_as_torch_does(torch_data, batch_size):
    with pytest.raises(ValueError):
        torch_data.BatchSampler(range(4), batch_size, False)
    with pytest.raises(ValueError, match="BatchSampler: batch_size must be at least 1"):
        BatchSampler(range(4), batch_size, False)
    with pytest.raises(TypeError, match="BatchSampler: drop_last must be a bool"):
        BatchSampler(range(4), 2, "yes")


def test_random_sampler_gives_a_new_permutation_every_epoch(torch_data):
    sampler = RandomSampler(range(50))
    epochs = [list(sampler) for _ in range(3)]
    assert all(is_permutation(epoch, 50) for epoch in epochs)
    assert epochs[0] != epochs[1] != epochs[2] and epochs[0] != list(range(50))
    assert len(sampler) == len(torch_data.RandomSampler(range(50))) == 50


@pytest.mark.parametrize("num_samples", [3, 10, 23])
def test_random_sampler_num_samples_without_replacement_chains_permutations(torch_data,
                                                                           num_samples):
    ours = list(RandomSampler(range(10), num_samples=num_samples))
    theirs = list(torch_data.RandomSampler(range(10), num_samples=num_samples))
    assert len(ours) == len(theirs) == num_samples
    for sequence in (ours, theirs):          # whole permutations, then distinct indices
        blocks = [sequence[i:i + 10] for i in range(0, num_samples, 10)]
        assert all(is_permutation(block, 10) for block in blocks[:num_samples // 10])
        assert len(set(blocks[-1])) == len(blocks[-1])


def test_random_sampler_with_replacement_draws_uniformly(torch_data):
    ours = RandomSampler(range(4), replacement=True, num_samples=4000, generator=0)
    theirs = torch_data.RandomSampler(range(4), replacement=True, num_samples=4000)
    drawn = list(ours)
    assert len(ours) == len(theirs) == len(drawn) == 4000
    counts = np.bincount(drawn, minlength=4)
    assert counts.size == 4 and np.all(np.abs(counts - 1000) < 150)
    assert len(RandomSampler(range(4), replacement=True)) == 4


@pytest.mark.parametrize("keywords, error", [
    (dict(replacement=1), TypeError), (dict(num_samples=0), ValueError),
    (dict(num_samples=-3), ValueError)])
def test_random_sampler_refuses_what_torch_refuses(torch_data, keywords, error):
    with pytest.raises(error):
        torch_data.RandomSampler(range(5), **keywords)
    with pytest.raises(error, match="RandomSampler: (replacement|num_samples)"):
        RandomSampler(range(5), **keywords)


def test_random_sampler_of_nothing_is_an_error_as_in_torch(torch_data):
    with pytest.raises(ValueError):
        torch_data.RandomSampler([])
    with pytest.raises(ValueError, match="RandomSampler: the data source is empty"):
        RandomSampler([])


def test_random_generators_an_int_seed_a_numpy_generator_and_tinynets():
    by_seed = RandomSampler(range(30), generator=4)
    by_generator = RandomSampler(range(30), generator=np.random.default_rng(4))
    first = list(by_seed)
    assert first == list(by_generator) and list(by_seed) == list(by_generator)
    assert list(RandomSampler(range(30), generator=4)) == first
    tinynet.manual_seed(2)
    expected = tinynet.backend.get_backend("cpu").rng.permutation(30).tolist()
    tinynet.manual_seed(2)
    assert list(RandomSampler(range(30))) == expected
    with pytest.raises(TypeError, match="RandomSampler: generator must be None, an int seed"):
        RandomSampler(range(3), generator="4")


def test_subset_random_sampler_permutes_the_given_indices(torch_data):
    indices = [11, 3, 7, 20, 5]
    ours = SubsetRandomSampler(indices, generator=1)
    epochs = [list(ours) for _ in range(4)]
    assert all(sorted(epoch) == sorted(indices) for epoch in epochs)
    assert len({tuple(epoch) for epoch in epochs}) > 1
    assert len(ours) == len(torch_data.SubsetRandomSampler(indices)) == 5


def test_the_sampler_base_class_asks_for_iter():
    with pytest.raises(NotImplementedError, match="__iter__"):
        iter(Sampler())


# ------------------------------------------------ the DataLoader's torch arguments
@pytest.mark.parametrize("n, batch_size, drop_last", [(10, 3, False), (10, 3, True),
                                                      (8, 4, True), (3, 5, True)])
def test_loader_order_and_length_are_torchs(torch_data, n, batch_size, drop_last):
    ours = DataLoader(labelled(n), batch_size, drop_last=drop_last)
    theirs = torch_data.DataLoader(torch_labelled(torch_data, n), batch_size,
                                   drop_last=drop_last)
    assert batch_labels(ours) == torch_batch_labels(theirs)
    assert len(ours) == len(theirs)


def test_a_sampler_sets_the_order(torch_data):
    order = [4, 0, 3, 1, 2]
    ours = DataLoader(labelled(5), batch_size=2, sampler=order)
    theirs = torch_data.DataLoader(torch_labelled(torch_data, 5), batch_size=2, sampler=order)
    assert batch_labels(ours) == torch_batch_labels(theirs) == [[4, 0], [3, 1], [2]]
    assert ours.sampler is order and isinstance(ours.batch_sampler, BatchSampler)


def test_a_batch_sampler_sets_the_batches(torch_data):
    batches = [[3, 1], [0], [2, 4, 5]]
    ours = DataLoader(labelled(6), batch_sampler=batches)
    theirs = torch_data.DataLoader(torch_labelled(torch_data, 6), batch_sampler=batches)
    assert batch_labels(ours) == torch_batch_labels(theirs) == batches
    assert len(ours) == len(theirs) == 3
    assert (ours.batch_size, ours.drop_last) == (theirs.batch_size, theirs.drop_last)


@pytest.mark.parametrize("keywords, message", [
    (dict(shuffle=True, sampler=[0, 1]), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], sampler=[0]), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
    (dict(num_workers=-1), "num_workers"),
    (dict(timeout=-1), "timeout"),
    (dict(prefetch_factor=2), "prefetch_factor"),
    (dict(persistent_workers=True), "persistent_workers"),
])
def test_loader_refuses_what_torch_refuses(torch_data, keywords, message):
    with pytest.raises(ValueError, match=message):
        torch_data.DataLoader(torch_labelled(torch_data, 4), **keywords)
    with pytest.raises(ValueError, match="DataLoader: .*" + message):
        DataLoader(labelled(4), **keywords)


@pytest.mark.parametrize("workers", [1, 2])
def test_worker_processes_give_torchs_batches(torch_data, workers):
    ours = DataLoader(labelled(10), 3, num_workers=workers)
    theirs = torch_data.DataLoader(torch_labelled(torch_data, 10), 3)
    assert batch_labels(ours) == torch_batch_labels(theirs)
    assert ours.num_workers == workers and ours.prefetch_factor == 2


def test_num_workers_zero_pin_memory_and_ignored_worker_options_change_nothing():
    plain = batch_labels(DataLoader(labelled(7), batch_size=3))
    loader = DataLoader(labelled(7), batch_size=3, num_workers=0, pin_memory=True,
                        worker_init_fn=lambda worker: None, pin_memory_device="",
                        in_order=True, timeout=0)
    assert batch_labels(loader) == plain and loader.pin_memory and loader.num_workers == 0


def test_collate_fn_gets_the_list_of_items_as_in_torch(torch_data):
    items = [(float(i), i * i) for i in range(5)]       # the same items for both
    seen, torch_seen = [], []
    ours = DataLoader(items, batch_size=2, collate_fn=lambda batch: seen.append(batch) or "ok")
    theirs = torch_data.DataLoader(items, batch_size=2,
                                   collate_fn=lambda batch: torch_seen.append(batch) or "ok")
    assert list(ours) == list(theirs) == ["ok"] * 3
    assert seen == torch_seen == [items[0:2], items[2:4], items[4:]]


def test_default_collate_given_explicitly_is_the_default():
    dataset = labelled(5)
    default = [[t.numpy().tolist() for t in batch] for batch in DataLoader(dataset, 2)]
    explicit = DataLoader(dataset, 2, collate_fn=default_collate)
    assert [[t.numpy().tolist() for t in batch] for batch in explicit] == default
    assert all(isinstance(t, tinynet.Tensor) for batch in explicit for t in batch)


def test_shuffle_makes_a_random_sampler_driven_by_generator_or_seed():
    loader = DataLoader(labelled(40), batch_size=8, shuffle=True, generator=3)
    assert isinstance(loader.sampler, RandomSampler)
    assert isinstance(loader.batch_sampler, BatchSampler)
    by_seed = DataLoader(labelled(40), batch_size=8, shuffle=True, seed=3)
    by_numpy = DataLoader(labelled(40), batch_size=8, shuffle=True,
                          generator=np.random.default_rng(3))
    epochs = [batch_labels(loader) for _ in range(2)]
    assert epochs[0] != epochs[1]
    assert [batch_labels(by_seed) for _ in range(2)] == epochs
    assert [batch_labels(by_numpy) for _ in range(2)] == epochs
    assert is_permutation(sum(epochs[0], []), 40)


def test_generator_and_seed_together_or_of_another_kind_are_refused():
    with pytest.raises(ValueError, match="DataLoader: give generator or seed"):
        DataLoader(labelled(4), shuffle=True, generator=1, seed=1)
    with pytest.raises(TypeError, match="DataLoader: generator must be None, an int seed"):
        DataLoader(labelled(4), shuffle=True, generator=1.5)
