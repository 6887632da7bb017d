"""Named batches and step-indexed sampling (lab/data/batch.py)."""

import pytest
import torch

from lab.data.batch import Batch, pad_rows, step_indices, steps_per_epoch


def test_batch_is_a_dict_with_names():
    b = Batch(input_ids=torch.ones(2, 3, dtype=torch.long), attention_mask=torch.tensor([[1, 1, 0], [1, 0, 0]]))
    assert len(b) == 2 and b.num_tokens == 3 and b.input_ids is b["input_ids"]
    assert set(b.to("cpu")) == {"input_ids", "attention_mask"} and isinstance(b.rows(slice(1)), Batch)
    with pytest.raises(AttributeError, match="no field 'labels'"):
        _ = b.labels


def test_pad_rows_worked_example():
    ids, mask = pad_rows([[5, 6, 7], [8]], pad_id=0, pad_to_multiple_of=4)
    assert ids.tolist() == [[5, 6, 7, 0], [8, 0, 0, 0]] and mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0]]
    assert pad_rows([[1] * 7], 0, 8, max_length=7)[0].shape == (1, 7)  # never beyond max_length
    with pytest.raises(ValueError, match="more than max_length"):
        pad_rows([[1] * 9], 0, 8, max_length=8)


def test_step_indices_cover_each_epoch_and_split_over_ranks():
    n, b = 10, 2
    assert steps_per_epoch(n, b * 2) == 2
    # ranks 0 and 1 together give the global batch of one process with batch 4
    for step in range(6):
        whole = step_indices(n, 4, step, seed=3)
        assert (
            step_indices(n, b, step, 3, rank=0, world_size=2) + step_indices(n, b, step, 3, rank=1, world_size=2)
            == whole
        )
    # one epoch of a single process visits distinct examples; the next epoch reorders them
    epoch0 = [i for s in range(5) for i in step_indices(n, 2, s, seed=0)]
    epoch1 = [i for s in range(5, 10) for i in step_indices(n, 2, s, seed=0)]
    assert sorted(epoch0) == sorted(epoch1) == list(range(10)) and epoch0 != epoch1
    assert step_indices(n, 2, 7, seed=0) == step_indices(n, 2, 7, seed=0)  # a pure function
    assert step_indices(3, 4, 0, seed=0, drop_last=False) == [*step_indices(3, 3, 0, 0), step_indices(3, 3, 0, 0)[0]]
    with pytest.raises(ValueError, match="do not fill one global batch"):
        step_indices(3, 4, 0, seed=0)
