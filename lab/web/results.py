"""The lab's results as the page's JSON: what `window.bertLab` resolves to is what `as_json`
makes of lab.inspect.explore's result for the same view (docs/web.md documents the fields).

    from lab.web.results import run_view
    run_view(model, tokenizer, "fill-mask", {"text": "the [MASK] sat ."})
    # -> {"predictions": [[["cat", 0.41], ...]], "tokens": [...], "mask_positions": [3], "truncated": 0}

The export writes each view's opening example computed this way (openings.json): the page draws
it at once, before the runtime and the model have arrived, and computes everything after that
itself. The tests hold the page's numbers against these.
"""

from __future__ import annotations

import dataclasses

from lab.inspect import explore

# Each view's opening example: the page's inputs when its address names none.
OPENINGS = {
    "fill-mask": {"text": "the captain of the [MASK] looked at me and smiled .", "k": 5},
    "next-sentence": {
        "a": "the ship sailed out of the harbour at dawn .",
        "b": "by noon the coast had vanished behind us .",
    },
    "attention": {"a": "the cat was sitting on the mat because it was tired .", "b": "", "layer": 0, "head": 0},
    "answer": {
        "question": "Who built the Nautilus?",
        "context": "The Nautilus was a submarine built by Captain Nemo on a desert island. "
        "It was driven by electricity.",
    },
    "classify": {"text": "a gripping , funny and deeply moving film ."},
    "tag": {"text": "Elizabeth Bennet met Mr. Darcy at Netherfield in Hertfordshire ."},
}
ANSWER_TOP_K = 5  # the page's n-best


def _pairs(items) -> list:
    return [[token, float(p)] for token, p in items]


def fill_mask(model, tokenizer, text: str, k: int = 5) -> dict:
    r = explore.fill_mask(model, tokenizer, text, top_k=int(k))
    return {
        "predictions": [_pairs(guesses) for guesses in r],
        "tokens": list(r.tokens),
        "mask_positions": list(r.mask_positions),
        "truncated": r.truncated,
    }


def next_sentence(model, tokenizer, a: str, b: str) -> dict:
    enc = tokenizer.encode(a, b, max_length=model.config.max_position_embeddings)
    return {
        "is_next": explore.next_sentence(model, tokenizer, a, b),
        "tokens": list(enc.tokens),
        "sentence_b_start": enc.sentence_b_start,
        "truncated": enc.num_truncated,
    }


def attention(model, tokenizer, a: str, b: str | None = None, **_) -> dict:
    r = explore.attention(model, tokenizer, a, b or None)
    return {
        "tokens": list(r.tokens),
        "attentions": [layer[0].tolist() for layer in r.attentions],  # [L][A][T][T]
        "sentence_b_start": r.sentence_b_start,
        "truncated": r.truncated,
    }


def classify(model, tokenizer, text: str, pair: str | None = None) -> dict:
    probs = explore.classify(model, tokenizer, text, pair or None)
    enc = tokenizer.encode(text, pair or None, max_length=model.config.max_position_embeddings)
    return {"probabilities": probs, "labels": list(probs), "truncated": enc.num_truncated}


def answer(model, tokenizer, question: str, context: str, top_k: int = ANSWER_TOP_K) -> dict:
    r = explore.answer(model, tokenizer, question, context, top_k=top_k)
    return {
        "spans": [dataclasses.asdict(s) for s in r.spans],
        "tokens": list(r.tokens),
        "start_probs": list(r.start_probs),
        "end_probs": list(r.end_probs),
        "offsets": [list(o) if o is not None else None for o in r.offsets],
        "window_index": r.window_index,
        "num_windows": r.num_windows,
        "question_truncated": r.question_truncated,
    }


def tag(model, tokenizer, text) -> dict:
    r = explore.tag(model, tokenizer, text)
    return {
        "words": [{**w._asdict(), "pieces": list(w.pieces)} for w in r],
        "num_windows": r.num_windows,
        "num_pieces": r.num_pieces,
        "max_seq_length": r.max_seq_length,
        "doc_stride": r.doc_stride,
    }


VIEWS = {
    "fill-mask": lambda m, t, v: fill_mask(m, t, v["text"], v.get("k", 5)),
    "next-sentence": lambda m, t, v: next_sentence(m, t, v["a"], v["b"]),
    "attention": lambda m, t, v: attention(m, t, v["a"], v.get("b")),
    "answer": lambda m, t, v: answer(m, t, v["question"], v["context"]),
    "classify": lambda m, t, v: classify(m, t, v["text"], v.get("pair")),
    "tag": lambda m, t, v: tag(m, t, v["text"]),
}


def run_view(model, tokenizer, view: str, inputs: dict) -> dict:
    """The page's JSON for `view` on these inputs, computed by the lab."""
    return VIEWS[view](model, tokenizer, inputs)
