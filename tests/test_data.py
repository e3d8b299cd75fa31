"""Datasets and the DataLoader: batching, shuffling, seeds, subsets, collation."""
import numpy as np
import pytest

import tinynet
from tinynet import backend
from tinynet.data import DataLoader, Dataset, Subset, TensorDataset, random_split


def numbered_dataset(n=10, features=3):
    """Example i has features (i, i, ...) as float32 and the label i as int64."""
    x = np.repeat(np.arange(n, dtype=np.float32)[:, None], features, axis=1)
    return TensorDataset(x, np.arange(n, dtype=np.int64))


def epoch_labels(loader):
    """The labels of one epoch, in the order the loader gave them."""
    return np.concatenate([y.numpy() for _, y in loader])


class ArraysOnly(TensorDataset):
    """A TensorDataset whose items must not be read one by one (the fast path)."""

    def __getitem__(self, index):
        raise AssertionError("the loader gathered a batch item by item")


class Squares(Dataset):
    """A generic dataset: items are (a float32 vector, a Python int)."""

    def __len__(self):
        return 5

    def __getitem__(self, index):
        return np.full(2, index, dtype=np.float32), index * index


# ------------------------------------------------------------------ TensorDataset
def test_tensor_dataset_items_and_length():
    dataset = TensorDataset(tinynet.tensor([[1.0, 2.0], [3.0, 4.0]]), np.array([7, 8]))
    assert len(dataset) == 2
    x, y = dataset[1]
    np.testing.assert_array_equal(x, [3.0, 4.0])
    assert y == 8


def test_tensor_dataset_size_mismatch_names_the_sizes():
    with pytest.raises(ValueError, match=r"same size.*\[3, 4\]"):
        TensorDataset(np.zeros((3, 2)), np.zeros(4))


def test_tensor_dataset_refuses_no_tensors_and_scalars():
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(np.float32(1.0))


# --------------------------------------------------------------------- DataLoader
def test_batches_are_tensors_with_shapes_dtypes_and_values_in_order():
    batches = list(DataLoader(numbered_dataset(10), batch_size=4))
    assert [tuple(x.shape) for x, _ in batches] == [(4, 3), (4, 3), (2, 3)]
    for x, y in batches:
        assert isinstance(x, tinynet.Tensor) and isinstance(y, tinynet.Tensor)
        assert x.dtype == np.float32 and y.dtype == np.int64
        np.testing.assert_array_equal(x.numpy()[:, 0], y.numpy())
    np.testing.assert_array_equal(batches[-1][1].numpy(), [8, 9])


@pytest.mark.parametrize("n, batch_size, drop_last, expected", [
    (10, 4, False, 3), (10, 4, True, 2), (8, 4, False, 2), (8, 4, True, 2),
    (3, 5, False, 1), (3, 5, True, 0), (0, 2, False, 0), (7, 1, False, 7),
])
def test_len_is_the_number_of_batches(n, batch_size, drop_last, expected):
    loader = DataLoader(numbered_dataset(n), batch_size=batch_size, drop_last=drop_last)
    assert len(loader) == expected
    assert len(list(loader)) == expected


def test_drop_last_keeps_only_full_batches():
    loader = DataLoader(numbered_dataset(10), batch_size=4, shuffle=True, drop_last=True)
    sizes = [len(y) for _, y in loader]
    assert sizes == [4, 4]


def test_shuffle_gives_every_index_once_per_epoch_in_a_new_order():
    loader = DataLoader(numbered_dataset(100), batch_size=7, shuffle=True)
    first, second = epoch_labels(loader), epoch_labels(loader)
    for epoch in (first, second):
        np.testing.assert_array_equal(np.sort(epoch), np.arange(100))
    assert not np.array_equal(first, np.arange(100))
    assert not np.array_equal(first, second)


def test_a_seed_gives_the_same_epochs_whatever_else_draws_numbers():
    def three_epochs(loader):
        epochs = []
        for _ in range(3):
            epochs.append(epoch_labels(loader))
            tinynet.randn(5)            # other users of the global generator
        return epochs

    a = three_epochs(DataLoader(numbered_dataset(50), batch_size=8, shuffle=True, seed=7))
    b = three_epochs(DataLoader(numbered_dataset(50), batch_size=8, shuffle=True, seed=7))
    c = three_epochs(DataLoader(numbered_dataset(50), batch_size=8, shuffle=True, seed=8))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[1])
    assert not np.array_equal(a[0], c[0])


def test_without_a_seed_the_order_comes_from_tinynets_generator():
    tinynet.manual_seed(3)
    expected = backend.get_backend("cpu").rng.permutation(30)
    tinynet.manual_seed(3)
    got = epoch_labels(DataLoader(numbered_dataset(30), batch_size=4, shuffle=True))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("batch_size, error", [(0, ValueError), (-1, ValueError),
                                               (2.5, TypeError), (None, TypeError)])
def test_batch_size_must_be_a_positive_integer(batch_size, error):
    with pytest.raises(error, match="batch_size"):
        DataLoader(numbered_dataset(), batch_size=batch_size)


def test_array_datasets_are_gathered_whole_not_item_by_item():
    dataset = ArraysOnly(np.arange(12.0).reshape(6, 2), np.arange(6))
    x, y = next(iter(DataLoader(dataset, batch_size=4)))
    np.testing.assert_array_equal(x.numpy(), [[0, 1], [2, 3], [4, 5], [6, 7]])
    x, y = next(iter(DataLoader(Subset(dataset, [5, 1]), batch_size=2)))
    np.testing.assert_array_equal(y.numpy(), [5, 1])


# -------------------------------------------------------------- generic datasets
def test_generic_items_are_stacked_field_by_field():
    x, y = next(iter(DataLoader(Squares(), batch_size=3)))
    np.testing.assert_array_equal(x.numpy(), [[0, 0], [1, 1], [2, 2]])
    assert x.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), [0, 1, 4])
    assert y.dtype == np.int64


def test_a_list_of_tuples_and_bare_items_work_too():
    x, y = next(iter(DataLoader([(0.5, 1), (1.5, 2)], batch_size=2)))
    assert x.dtype == np.float32 and y.dtype == np.int64
    np.testing.assert_array_equal(x.numpy(), [0.5, 1.5])
    batch = next(iter(DataLoader([np.ones(3), np.zeros(3)], batch_size=2)))
    assert isinstance(batch, tinynet.Tensor) and batch.shape == (2, 3)


def test_dataset_base_class_asks_for_its_methods():
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]
    with pytest.raises(NotImplementedError, match="__len__"):
        len(Dataset())


# ----------------------------------------------------------- Subset, random_split
def test_subset_items_batches_and_nesting():
    subset = Subset(numbered_dataset(10), [9, 2, 4, 6])
    assert len(subset) == 4
    assert subset[0][1] == 9
    np.testing.assert_array_equal(epoch_labels(DataLoader(subset, batch_size=3)),
                                  [9, 2, 4, 6])
    nested = Subset(subset, [3, 0])
    np.testing.assert_array_equal(epoch_labels(DataLoader(nested, batch_size=2)), [6, 9])


def test_subset_refuses_out_of_range_indices():
    with pytest.raises(IndexError, match="10 is out of range .* 10 items"):
        Subset(numbered_dataset(10), [0, 10])
    with pytest.raises(IndexError, match="-1"):
        Subset(numbered_dataset(10), [-1])


def test_random_split_partitions_the_dataset_reproducibly():
    parts = random_split(numbered_dataset(20), [15, 5], seed=1)
    assert [len(p) for p in parts] == [15, 5]
    labels = [epoch_labels(DataLoader(p, batch_size=20)) for p in parts]
    np.testing.assert_array_equal(np.sort(np.concatenate(labels)), np.arange(20))
    again = random_split(numbered_dataset(20), [15, 5], seed=1)
    np.testing.assert_array_equal(again[1].indices, parts[1].indices)


def test_random_split_lengths_must_add_up():
    with pytest.raises(ValueError, match="add up to the dataset's 20 items"):
        random_split(numbered_dataset(20), [15, 4])


def test_loader_generator_state_replays_an_epoch():
    loader = DataLoader(TensorDataset(np.arange(20.0)), batch_size=5, shuffle=True, seed=4)
    list(loader)
    state = loader.generator_state()
    second = [b[0].numpy().tolist() for b in loader]
    third = [b[0].numpy().tolist() for b in loader]
    loader.set_generator_state(state)
    assert [b[0].numpy().tolist() for b in loader] == second != third
