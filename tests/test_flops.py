"""lab.training.flops: FLOP counts from the shape (checked against torch's counter), the paper's total,
a timing that leaves the model as it was, random batches of a real batch's shape."""

import torch

import lab
from lab.data.batch import Batch
from lab.data.instances import SpecialIds
from lab.training import flops
from tests.conftest import tiny_config

TEXT = [
    "the cat sat on the mat .",
    "the dog ran in the park .",
    "a bird sang in the tree .",
    "the sun was warm and the sky was blue .",
]


def test_forward_flops_match_flop_counter():
    from torch.utils.flop_counter import FlopCounterMode

    cfg = tiny_config(vocab_size=101)
    model = lab.BertForPreTraining(cfg)
    B, T = 3, 10
    ids = torch.randint(5, 101, (B, T))
    labels = torch.full_like(ids, -100)
    labels[:, 2:4] = ids[:, 2:4]  # 6 predictions
    with FlopCounterMode(display=False) as counter:  # output_attentions: explicit matmuls, counted
        out = model(ids, mlm_labels=labels, nsp_label=torch.zeros(B, dtype=torch.long), output_attentions=True)
    assert counter.get_total_flops() == flops.forward_flops(cfg, B, T, predictions=6)
    with FlopCounterMode(display=False) as counter:
        out.loss.backward()
    assert counter.get_total_flops() == 2 * flops.forward_flops(cfg, B, T, predictions=6)
    assert flops.training_flops(cfg, B, T, 6) == 3 * flops.forward_flops(cfg, B, T, 6)


def test_pretraining_flops_of_bert_base():
    base = lab.BertConfig.preset("base")
    total = flops.pretraining_flops(base)
    # about 6 x parameters x tokens (~43 billion tokens), plus attention and the MLM head
    tokens = 256 * (900_000 * 128 + 100_000 * 512)
    assert 6 * 85e6 * tokens < total < 6 * 110e6 * tokens * 1.2


def test_measure_flop_rate_does_not_change_the_model():
    from lab.data.instances import collate, create_instances

    tok = lab.Tokenizer.train(iter(TEXT * 20), vocab_size=80, show_progress=False)
    special = SpecialIds.from_vocab(tok.vocab)
    docs = [[tok.encode(s, add_special_tokens=False).input_ids for s in TEXT]] * 3
    batch = collate(create_instances(docs, special, max_seq_length=16), special, torch.Generator().manual_seed(0))
    model = lab.BertForPreTraining(tiny_config(vocab_size=tok.vocab_size))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rate = flops.measure_flop_rate(model, batch, steps=2, threads=1)
    assert rate["flop_per_s"] > 0 and rate["seconds_per_step"] > 0
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_random_batch():
    cfg = lab.BertConfig.preset("tiny", vocab_size=300)
    b = flops.random_batch(cfg, batch_size=3, seq_len=16, predictions_per_seq=4)
    assert isinstance(b, Batch)
    assert b.input_ids.shape == (3, 16) and int((b.mlm_labels != -100).sum()) == 12 and int(b.input_ids.max()) < 300
    assert b.token_type_ids[0].tolist() == [0] * 9 + [1] * 7
    out = lab.BertForPreTraining(cfg)(**b)
    assert out.mlm_logits.shape == (12, 300) and torch.isfinite(out.loss)
    rate = flops.measure_flop_rate(lab.BertForPreTraining(cfg), b, steps=1, precision="fp32", threads=1)
    assert rate["flops_per_step"] == flops.training_flops(cfg, 3, 16, 12)
