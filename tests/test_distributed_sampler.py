"""DistributedSampler in one process (explicit num_replicas and rank), with
torch.utils.data.DistributedSampler as the oracle where it can be one."""
import itertools
import math

import numpy as np
import pytest

from tinynet.data import DataLoader, DistributedSampler, TensorDataset


def shards(size, num_replicas, **options):
    """Every rank's list of indices for one epoch."""
    return [list(DistributedSampler(range(size), num_replicas, rank, **options))
            for rank in range(num_replicas)]


@pytest.mark.parametrize("size, num_replicas", [(10, 2), (10, 3), (11, 4), (3, 5), (1, 2)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_are_equal_and_cover_the_dataset_padded_from_its_start(size, num_replicas,
                                                                      shuffle):
    parts = shards(size, num_replicas, shuffle=shuffle, seed=7)
    per_rank = math.ceil(size / num_replicas)
    assert [len(part) for part in parts] == [per_rank] * num_replicas
    # Rank r holds positions r, r + R, r + 2R... of one list: the order, then its start again.
    order = [parts[position % num_replicas][position // num_replicas]
             for position in range(per_rank * num_replicas)]
    assert sorted(order[:size]) == list(range(size))
    assert order[size:] == (order[:size] * num_replicas)[:per_rank * num_replicas - size]


@pytest.mark.parametrize("size, num_replicas", [(10, 2), (10, 3), (11, 4), (3, 5)])
def test_drop_last_trims_to_a_multiple_and_shards_are_disjoint(size, num_replicas):
    parts = shards(size, num_replicas, shuffle=True, drop_last=True)
    kept = [index for part in parts for index in part]
    assert [len(part) for part in parts] == [size // num_replicas] * num_replicas
    assert len(set(kept)) == len(kept) == size // num_replicas * num_replicas


def test_the_order_depends_on_seed_and_epoch_only():
    def epoch_order(seed, epoch):
        sampler = DistributedSampler(range(50), num_replicas=2, rank=1, seed=seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert epoch_order(0, 3) == epoch_order(0, 3)
    assert epoch_order(0, 3) != epoch_order(0, 4)
    assert epoch_order(0, 3) != epoch_order(1, 3)
    assert epoch_order(0, 3) != list(range(1, 50, 2))


def test_without_set_epoch_every_epoch_is_the_same():
    sampler = DistributedSampler(range(20), num_replicas=2, rank=0)
    assert list(sampler) == list(sampler) and len(sampler) == 10


def test_unshuffled_shards_match_pytorch_index_for_index():
    torch_data = pytest.importorskip("torch.utils.data")
    for size, num_replicas, drop_last in itertools.product(
            [0, 1, 7, 10, 11, 16], [1, 2, 3, 4, 5], [False, True]):
        for rank in range(num_replicas):
            ours = DistributedSampler(range(size), num_replicas, rank, shuffle=False,
                                      drop_last=drop_last)
            theirs = torch_data.DistributedSampler(range(size), num_replicas, rank,
                                                   shuffle=False, drop_last=drop_last)
            assert list(ours) == list(theirs), (size, num_replicas, rank, drop_last)
            assert len(ours) == len(theirs)
            assert (ours.num_samples, ours.total_size) == (theirs.num_samples,
                                                           theirs.total_size)


def test_a_data_loader_visits_its_shard_in_batches():
    labels = np.arange(9)
    dataset = TensorDataset(labels.astype(np.float32)[:, None], labels)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=1, seed=5)
    sampler.set_epoch(2)
    batches = [batch_labels.numpy().tolist()
               for _, batch_labels in DataLoader(dataset, batch_size=2, sampler=sampler)]
    assert [index for batch in batches for index in batch] == list(sampler)
    assert [len(batch) for batch in batches] == [2, 2, 1]


@pytest.mark.parametrize("arguments, error, message", [
    (dict(num_replicas=2, rank=2), ValueError, r"Invalid rank 2, .* \[0, 1\]"),
    (dict(num_replicas=2, rank=-1), ValueError, r"Invalid rank -1"),
    (dict(num_replicas=0, rank=0), ValueError, "num_replicas must be at least 1"),
    (dict(num_replicas=2.0, rank=0), TypeError, "num_replicas must be an integer"),
    (dict(num_replicas=2, rank="0"), TypeError, "rank must be an integer"),
    (dict(num_replicas=2, rank=0, seed=-1), ValueError, "seed must be at least 0"),
    (dict(num_replicas=2, rank=0, shuffle="yes"), TypeError, "shuffle must be a bool"),
    (dict(num_replicas=2, rank=0, drop_last=None), TypeError, "drop_last must be a bool"),
])
def test_bad_arguments_are_named(arguments, error, message):
    with pytest.raises(error, match=message):
        DistributedSampler(range(4), **arguments)


def test_set_epoch_wants_a_count():
    sampler = DistributedSampler(range(4), num_replicas=2, rank=0)
    with pytest.raises(TypeError, match="epoch must be an integer"):
        sampler.set_epoch(1.5)
    with pytest.raises(ValueError, match="epoch must be at least 0"):
        sampler.set_epoch(-1)
