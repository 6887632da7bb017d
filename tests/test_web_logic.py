"""The browser edition's text logic (web/src/text.js, qa.js, tag.js) against the lab's Python.

Each test builds inputs here, runs them through web/test/logic.mjs (one node process per batch)
and compares with lab.tokenizer, lab.data.squad, lab.data.tagging, lab.data.tag_decoding, lab.inference and
lab.inspect.explore: tokens, ids and offsets (code points on both sides) of tens of thousands of
texts, every Unicode code point through the normalizer and the pre-tokenizer, BERT's longest-first
truncation, the [MASK] checks, QA windows and spans and tag windows and decodings on random logits
and on a tiny model's. Needs Node and web/node_modules (`npm ci` in web/); skipped without them
except under CI (BERT_LAB_REQUIRE_BROWSER=1), where it fails. The corpus tests read ../shared/data
and are skipped without it.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import unicodedata
import zipfile

import numpy as np
import pytest
import torch

import lab
from lab.data.squad import Example, collate_features, decode_spans, make_features
from lab.data.tag_decoding import decode_tags
from lab.data.tagging import make_tag_features
from lab.inference import tag_logits
from lab.inspect import explore
from lab.inspect.encoding import MAX_MASKS, mask_positions
from lab.tokenizer import Tokenizer, clean_text
from tests.conftest import ROOT, SHARED_DATA, tiny_config

WEB = ROOT / "web"
HARNESS = WEB / "test" / "logic.mjs"
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
TOL = 1e-5


def _need_node() -> None:
    missing = shutil.which("node") is None or not (WEB / "node_modules" / "@huggingface" / "tokenizers").is_dir()
    if missing:
        if os.environ.get("BERT_LAB_REQUIRE_BROWSER") == "1":
            pytest.fail(
                "Node.js and web/node_modules are required here (BERT_LAB_REQUIRE_BROWSER=1): run npm ci in web/"
            )
        pytest.skip("Node.js or web/node_modules missing (npm ci in web/): the browser's text logic cannot run")


@pytest.fixture(scope="module", autouse=True)
def node():
    _need_node()


def run_js(op: str, cases, tok=None, max_length: int = 512, timeout: int = 120, **entry):
    """web/test/logic.mjs on a batch of cases (tok's tokenizer, a model of max_length positions, and
    `entry`'s fields in its manifest entry: name, task): its JSON answer."""
    request = {"op": op, "cases": cases}
    if tok is not None:
        entry = {**tok.entry, "config": {"max_length": max_length}, **entry}
        request.update(tokenizer=str(tok.json_path), entry=entry)
    out = subprocess.run(
        ["node", str(HARNESS)], input=json.dumps(request), capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _web_tokenizer(name: str, directory) -> Tokenizer:
    """A bundled model's tokenizer with its tokenizer.json as export-web writes it and a manifest entry."""
    tok = Tokenizer.load(ROOT / "models" / name)
    tok.json_path = directory / f"{name}.json"
    tok.json_path.write_text(tok.backend.to_str(pretty=False), encoding="utf-8")
    special = {"cls": tok.cls_token_id, "sep": tok.sep_token_id, "mask": tok.mask_token_id}
    special.update(pad=tok.pad_token_id, unk=tok.unk_token_id)
    tok.entry = {"special": special, "lowercase": tok.lowercase}
    return tok


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    return _web_tokenizer("bert-lab-classroom", tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    return _web_tokenizer("minilm-squad", tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module", params=["bert-lab-classroom", "minilm-squad"])
def tok(request, classroom, minilm):
    return classroom if request.param == "bert-lab-classroom" else minilm


# ----------------------------------------------------------------------------------------------
# Texts: hand-made hard cases, random characters, and the shared corpora
# ----------------------------------------------------------------------------------------------
HARD = [
    "",
    " ",
    "\t\n\r ",
    "Héllo, Wörld! Ça va? naïve café résumé Ångström",
    "I ❤️ emoji 🥰👍🏽 and flags 🇫🇷 and 👨‍👩‍👧 families",
    "中文字符和日本語のテキスト, 한국어 텍스트",
    "مرحبا بالعالم، كيف حالك؟",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "Привет, мир! Ελληνικά ΣΑΣ ΟΔΟΣ",
    "control\x00chars\x01here\x7f and\x85 there\u200b\ufeff zero\u200dwidth",
    "<p>HTML <b>tags</b> &amp; <script>alert('x')</script></p>",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "é" * 101,
    "x" * 300,
    "[MASK] [mask] a[MASK]b [MASK][MASK] [CLS] [SEP] [PAD] [UNK] [MASKED] [[MASK]]",
    "İstanbul ß ﬁ ＡＢＣ１２３ ½ ² Ⅻ ǅ ﬃ ŉ",
    "tab\tsep\u3000ideo\xa0nbsp\u2028line\u2029para\u202fnarrow",
    "e\u0301 a\u0308 combining\u0327 marks \u0300\u0301 alone",
    "Mr. Darcy's house in the U.S. isn't theirs; they'd've gone.",
    "$100 + 50% = <x> ^ ` | ~ § ¶ • … — – « » “quotes” ‘single’",
    "ไทย ภาษา ລາວ ဗမာ ខ្មែរ ᠮᠣᠩᠭᠣᠯ ትግርኛ ᏣᎳᎩ",
    "math 𝐀𝐁𝐂 𝟙𝟚 ∑∫√ ≤≥ ⊂⊃ and music 𝄞",
    "\U0001f600" * 60,
    "\r\n\r\nwindows\r\nlines\r\n",
]


def random_texts(n: int, seed: int) -> list[str]:
    """Random strings drawn from every plane, weighted towards the interesting blocks."""
    rng = random.Random(seed)
    pools = [(0x20, 0x7F), (0x80, 0x250), (0x300, 0x370), (0x370, 0x2000), (0x2000, 0x3000), (0x3000, 0xA000)]
    pools += [(0xAC00, 0xD7A4), (0xE000, 0xFFFF), (0x10000, 0x20000), (0x20000, 0x30000), (0xE0000, 0x110000)]
    texts = []
    for _ in range(n):
        chars = []
        for _ in range(rng.randint(1, 40)):
            lo, hi = rng.choice(pools)
            c = rng.randrange(lo, hi)
            chars.append(" " if 0xD800 <= c <= 0xDFFF else chr(c))
        texts.append("".join(chars))
    return texts


def corpus_texts(n: int = 12_000, seed: int = 0) -> list[str]:
    """n texts of the shared corpora: novel lines, SQuAD contexts and questions, SST-2, WikiText, UNER."""
    rng = random.Random(seed)
    lines = []
    for path in sorted((SHARED_DATA / "novels").glob("*.txt")):
        lines += [x for x in path.read_text(encoding="utf-8-sig").splitlines() if x.strip()]
    wiki = [x for x in (SHARED_DATA / "wikitext-2-raw" / "wiki.test.raw").read_text(encoding="utf-8").splitlines()]
    sst = [x.split("\t")[0] for x in (SHARED_DATA / "sst2" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    uner = (SHARED_DATA / "uner-ewt" / "en_ewt-ud-dev.iob2").read_text(encoding="utf-8").splitlines()
    uner = [x[len("# text = ") :] for x in uner if x.startswith("# text = ")]
    contexts, questions = squad_texts()
    picked = rng.sample(lines, 5000) + rng.sample([w for w in wiki if w.strip()], 1500) + sst
    picked += rng.sample(contexts, 1500) + rng.sample(questions, 2000) + uner
    return picked[:n] if len(picked) >= n else picked


def squad_texts() -> tuple[list[str], list[str]]:
    with zipfile.ZipFile(SHARED_DATA / "squad" / "dev-v1.1.json.zip") as zf:
        data = json.loads(zf.read("dev-v1.1.json"))
    paragraphs = [p for article in data["data"] for p in article["paragraphs"]]
    return [p["context"] for p in paragraphs], [q["question"] for p in paragraphs for q in p["qas"]]


def need_shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")


def python_pieces(tok, texts):
    encodings = tok.backend.encode_batch(texts, add_special_tokens=False)
    return [{"tokens": e.tokens, "ids": e.ids, "offsets": [list(o) for o in e.offsets]} for e in encodings]


def assert_same_pieces(tok, texts):
    js = run_js("pieces", texts, tok)
    py = python_pieces(tok, texts)
    wrong = [(t, p, j) for t, p, j in zip(texts, py, js) if p != j]
    assert len(js) == len(texts)
    assert not wrong, f"{len(wrong)} of {len(texts)} texts differ; the first: {wrong[0]}"


# ----------------------------------------------------------------------------------------------
# cleanText and the tokenizer
# ----------------------------------------------------------------------------------------------
def test_clean_text_matches_python():
    values = [None, 3, 2.5, True, [1], {"a": 1}, "", "  ", "\x00\x01\x1f", "\ufeff", "\u3000", "ok"]
    values += ["a\ud800b", "\udc00", "x\ud83d", "tab\tand\nnew\r\x7fline\x9f", "\x85"]
    cases = [{"value": v, "name": n} for v in values for n in ("text", "question")]
    cases += [{"value": "", "name": "text_b", "required": False}, {"value": "héllo wörld", "max_chars": 3}]
    cases += [{"value": "🥰🥰🥰 abc", "max_chars": 2}]
    js = run_js("clean", cases)
    for case, got in zip(cases, js):
        try:
            args = {"required": case.get("required", True), "max_chars": case.get("max_chars")}
            want = {"value": clean_text(case["value"], case.get("name", "text"), **args)}
        except ValueError as e:
            want = {"error": str(e)}
        assert got == want, case


def test_pieces_match_python_on_hard_cases(tok):
    assert_same_pieces(tok, HARD + [" ".join(HARD)])


def test_pieces_match_python_on_random_characters(tok):
    assert_same_pieces(tok, random_texts(3000, seed=1))


@pytest.mark.slow
def test_pieces_match_python_on_shared_corpora(tok):
    need_shared_data()
    texts = corpus_texts()
    assert len(texts) >= 10_000
    assert_same_pieces(tok, texts)


@pytest.mark.slow
def test_every_code_point_is_normalized_and_split_as_in_python(minilm):
    """All of Unicode through BertNormalizer (dropped, spaced, lower-cased, accents stripped) and
    BertPreTokenizer (punctuation alone): chunks of code points joined by "|" for the normalizer,
    by "a" for the pre-tokenizer (a non-punctuation character joins its neighbours' word)."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and chr(c) not in "|a"]
    chunks = [points[i : i + 8000] for i in range(0, len(points), 8000)]
    joined = ["|".join(chunk) for chunk in chunks]
    js = run_js("normalize", joined, minilm)
    for chunk, text, got in zip(chunks, joined, js):
        want = minilm.backend.normalizer.normalize_str(text)
        if got != want:
            bad = [(hex(ord(c)), x, y) for c, x, y in zip(chunk, want.split("|"), got.split("|")) if x != y]
            pytest.fail(f"normalized differently (code point, Python, JS): {bad[:10]}")
    assert_same_pieces(minilm, ["a".join(chunk) for chunk in chunks])


def random_pairs(tok, n: int, seed: int):
    """(a, b or None, max_length) with texts of vocabulary words, accents and emoji."""
    rng = random.Random(seed)
    words = [w for w in tok.vocab if w.isalpha() and w.isascii()][:3000] + ["Émile", "🥰", "naïve", "中文", "[MASK]"]

    def text():
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 25)))

    cases = []
    for _ in range(n):
        pair = rng.random() < 0.7
        cases.append([text(), text() if pair else None, rng.choice([None, rng.randint(2, 40)])])
    return cases


def test_encode_truncates_longest_first_as_python(tok):
    cases = random_pairs(tok, 1500, seed=2)
    cases += [["a b c d e", "f g h i j k l m", 12], ["a b c", "d e f", 9], ["x", "y", 2], ["x", None, 1], ["", None, 5]]
    cases += [["a b", "", 8], ["   ", "b", 8], ["one two three", "four", 3]]
    js = run_js("encode", cases, tok)
    for (a, b, max_length), got in zip(cases, js):
        try:
            e = tok.encode(a, b, max_length=max_length)
        except ValueError as err:
            assert got == {"error": str(err)}, (a, b, max_length)
            continue
        want = {
            "ids": e.input_ids,
            "typeIds": e.token_type_ids,
            "tokens": e.tokens,
            "offsets": [list(o) for o in e.offsets],
            "sequenceIds": e.sequence_ids,
            "truncated": e.num_truncated,
            "sentenceBStart": e.sentence_b_start,
        }
        assert got == want, (a, b, max_length)
    assert sum(1 for g in js if g.get("truncated")) > 300  # truncation was exercised


def test_mask_positions_and_their_messages_match_python(classroom):
    long = " ".join(["word"] * 40)
    cases = [
        ["the cat [MASK] on the mat .", None, None],
        ["no mask here", None, None],
        [" ".join(["[MASK]"] * 21), None, None],
        [" ".join(["[MASK]"] * 20), None, None],
        [f"{long} the [MASK] sat", None, 16],
        [f"{long} the [MASK] sat", "a pair", 16],
        [f"{'wörd ' * 1200} [MASK]", None, 512],
        ["[MASK] early", long, 8],
        ["nothing cut", "[MASK] in b", 12],
    ]
    js = run_js("masks", cases, classroom, task={"max_masks": MAX_MASKS})
    for (text, pair, max_length), got in zip(cases, js):
        enc = classroom.encode(text, pair, max_length=max_length or 512)
        try:
            want = {"positions": mask_positions(torch.tensor([enc.input_ids]), classroom, enc, text, pair)}
        except ValueError as e:
            want = {"error": str(e)}
        assert got == want, text[:60]
    assert "cut off" in js[4]["error"] and re.search(r"\d,\d\d\d", js[6]["error"])  # thousands written 1,203


# ----------------------------------------------------------------------------------------------
# Question answering
# ----------------------------------------------------------------------------------------------
def qa_cases(tok, seed: int):
    """(question, context, task) with contexts of several windows at small window settings."""
    rng = random.Random(seed)
    if SHARED_DATA.is_dir():
        contexts, questions = squad_texts()
        contexts, questions = rng.sample(contexts, 40), rng.sample(questions, 40)
    else:
        words = [w for w in tok.vocab if w.isalpha()][:2000]
        contexts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 200))) for _ in range(40)]
        questions = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 20))) + " ?" for _ in range(40)]
    contexts[0] = "Émile 🥰 lived in 中文 Paris, France, in 1890 — naïve café. " * 8
    cases = []
    for q, c in zip(questions, contexts):
        task = {"max_seq_length": rng.choice([32, 48, 64, 128]), "doc_stride": rng.choice([8, 16, 32])}
        task.update(max_query_length=rng.choice([4, 8, 16, 64]), max_answer_length=rng.choice([3, 10, 30]))
        task["n_best"] = rng.choice([5, 20])
        cases.append({"question": q, "context": c, "task": task, "n_best": task["n_best"]})
    return cases


def python_features(tok, case):
    t = case["task"]
    example = Example(id="q", title="", context=case["context"], question=case["question"], answers=[])
    msl, stride, mql = t["max_seq_length"], t["doc_stride"], t["max_query_length"]
    return example, make_features([example], tok, msl, stride, mql, training=False)


def test_qa_windows_and_spans_match_python(tok):
    cases = qa_cases(tok, seed=3)
    rng = np.random.default_rng(4)
    for k, case in enumerate(cases):
        _, features = python_features(tok, case)
        shape = (len(features), case["task"]["max_seq_length"])
        case["start_logits"] = rng.normal(size=shape).astype(np.float32).tolist()
        case["end_logits"] = rng.normal(size=shape).astype(np.float32).tolist()
        case["max_answer_length"] = case["task"]["max_answer_length"]
        case["null_threshold"] = [None, 0.0, 5.0][k % 3]
    js = run_js("qa", cases, tok)
    assert sum(len(g["features"]) > 2 for g in js) >= 10  # long contexts: several windows
    for case, got in zip(cases, js):
        example, features = python_features(tok, case)
        assert len(got["features"]) == len(features)
        for f, g in zip(features, got["features"]):
            assert g["ids"] == f.input_ids and g["typeIds"] == f.token_type_ids
            assert g["offsets"] == [list(o) if o else None for o in f.offsets]
            assert g["tokenIsMaxContext"] == f.token_is_max_context and g["windowStart"] == f.window_start
        spans = decode_spans(
            features,
            case["start_logits"],
            case["end_logits"],
            example,
            n_best=case["n_best"],
            max_answer_length=case["max_answer_length"],
            null_threshold=case["null_threshold"],
        )
        assert [(s.text, s.start, s.end, s.window_index) for s in spans] == [
            (s["text"], s["start"], s["end"], s["window_index"]) for s in got["spans"]
        ]
        for s, g in zip(spans, got["spans"]):
            assert abs(s.score - g["score"]) < TOL and abs(s.probability - g["probability"]) < TOL


def test_answer_matches_explore_answer_on_a_tiny_model(classroom):
    """explore.answer with a tiny untrained model (its best starts often fall on the question: the
    fallback over every token) against qaFeatures + answerSpans on the same logits."""
    torch.manual_seed(0)
    model = lab.BertForQuestionAnswering(tiny_config(vocab_size=classroom.vocab_size)).eval()
    context = "the cat sat on the mat . " * 30 + "Émile 🥰 went to Paris in 1890 ."
    cases = []
    for k, question in enumerate(["where did the cat sit ?", "who went to paris ?", "when ?"]):
        task = {"max_seq_length": 48 + 8 * k, "doc_stride": 16, "max_query_length": 8, "max_answer_length": 10}
        cases.append({"question": question, "context": context, "task": {**task, "n_best": 20}, "top_k": 3 + k})
    for case in cases:
        example, features = python_features(classroom, case)
        batch = collate_features(features, classroom.pad_token_id, max_length=case["task"]["max_seq_length"])
        with torch.no_grad():
            out = model(**batch)
        case["start_logits"], case["end_logits"] = out.start_logits.tolist(), out.end_logits.tolist()
    js = run_js("qa", cases, classroom, max_length=64)
    for case, got in zip(cases, js):
        t = case["task"]
        lengths = {k: t[k] for k in ("max_seq_length", "doc_stride", "max_query_length", "max_answer_length")}
        want = explore.answer(model, classroom, case["question"], context, top_k=case["top_k"], **lengths)
        answer = got["answer"]
        assert [(s.text, s.start, s.end) for s in want.spans] == [
            (s["text"], s["start"], s["end"]) for s in answer["spans"]
        ]
        assert answer["windowIndex"] == want.window_index and answer["numWindows"] == want.num_windows > 1
        assert answer["tokens"] == want.tokens and answer["questionTruncated"] == want.question_truncated
        assert np.allclose(answer["startProbs"], want.start_probs, atol=TOL)
        assert np.allclose(answer["endProbs"], want.end_probs, atol=TOL)


def test_answer_errors_match_explore(classroom):
    torch.manual_seed(0)
    model = lab.BertForQuestionAnswering(tiny_config(vocab_size=classroom.vocab_size)).eval()
    task = explore.answer_settings(model, 16, 8, 64)
    cases = [
        {"question": "", "context": "a b", "task": task},
        {"question": "q", "context": "  \x00 ", "task": task},
        {"question": "\u200b", "context": "a b", "task": task},
        {
            "question": "one two three four five six seven eight nine ten eleven twelve thirteen",
            "context": "a",
            "task": task,
        },
        {"question": "q", "context": "\u200b\ufeff", "task": task},
        {"question": "q", "context": "a", "task": {**task, "doc_stride": -1}},
    ]
    js = run_js("qa", cases, classroom, max_length=64)
    for case, got in zip(cases, js):
        t = case["task"]
        with pytest.raises(ValueError) as e:
            explore.answer(
                model, classroom, case["question"], case["context"], max_seq_length=t["max_seq_length"],
                doc_stride=t["doc_stride"], max_query_length=t["max_query_length"],
            )  # fmt: skip
        assert got == {"error": str(e.value)}


# ----------------------------------------------------------------------------------------------
# Tagging
# ----------------------------------------------------------------------------------------------
def test_split_words_matches_python():
    # characters newer than Python's Unicode tables are letters to a browser but not to Python's re
    known = ["".join(c for c in t if unicodedata.category(c) != "Cn") for t in random_texts(2000, seed=5)]
    texts = HARD + known
    if SHARED_DATA.is_dir():
        texts += corpus_texts(4000, seed=6)
    js = run_js("split", texts)
    for text, got in zip(texts, js):
        assert got == [list(w) for w in explore.split_words(text)], text


def test_word_characters_are_pythons_on_all_of_unicode():
    """splitWords' \\w (letters, numbers, "_") is Python's re \\w on every code point that Python's
    Unicode knows; the only differences allowed are characters newer than Python's tables."""
    ranges = run_js("word_chars", [])
    js = {c for a, b in ranges for c in range(a, b + 1)}
    py = {c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and re.fullmatch(r"\w", chr(c))}
    differ = sorted(js ^ py)
    known = [hex(c) for c in differ if unicodedata.category(chr(c)) != "Cn"]
    assert not known, f"\\w differs from Python's on assigned characters: {known[:20]}"
    assert len(js) > 130_000


def tag_cases(tok, seed: int):
    rng = random.Random(seed)
    words = [w for w in tok.vocab if w.isalpha()][:3000] + ["Émile", "🥰", "U.S.", "don't", "\u200b", "x" * 120]
    sentences = [[rng.choice(words) for _ in range(rng.randint(1, 60))] for _ in range(60)]
    texts = ["Mr. Darcy's house in the U.S. is big; Émile 🥰 lives in 中文 Paris. " * 5, "Hello , world !"]
    cases = [{"input": s} for s in sentences] + [{"input": t} for t in texts]
    for case in cases:
        msl, stride = rng.choice([3, 8, 16, 32]), rng.choice([0, 1, 3, 8])  # 0: explore's half a window
        case["decoding"] = rng.choice(["argmax", "viterbi"])
        case["task"] = {"max_seq_length": msl, "doc_stride": stride or max(1, msl // 2), "decoding": case["decoding"]}
    return cases


def python_words(case):
    if isinstance(case["input"], str):
        return [w for w, _, _ in explore.split_words(clean_text(case["input"]))]
    return [clean_text(w, f"word {i}").strip() for i, w in enumerate(case["input"])]


def test_tag_windows_and_decoding_match_python(classroom):
    cases = tag_cases(classroom, seed=7)
    rng = np.random.default_rng(8)
    for case in cases:
        msl, stride = case["task"]["max_seq_length"], case["task"]["doc_stride"]
        features = make_tag_features([python_words(case)], classroom, None, msl, stride)
        case["logits"] = [(3 * rng.normal(size=(msl, len(TAGS)))).astype(np.float32).tolist() for _ in features]
        case["labels"] = TAGS
    js = run_js("tag", cases, classroom)
    assert sum(len(g["features"]) > 3 for g in js) >= 10  # long sentences: several windows
    for case, got in zip(cases, js):
        msl, stride = case["task"]["max_seq_length"], case["task"]["doc_stride"]
        features = make_tag_features([python_words(case)], classroom, None, msl, stride)
        assert [g["ids"] for g in got["features"]] == [f.input_ids for f in features]
        assert [g["wordIndex"] for g in got["features"]] == [f.word_index for f in features]
        assert [g["tokenIsMaxContext"] for g in got["features"]] == [f.token_is_max_context for f in features]
        want = decode_tags(features, case["logits"], TAGS, case["decoding"])[0]
        assert [w["tag"] for w in got["words"]] == [w.tag for w in want]
        assert [w["runner_up"] for w in got["words"]] == [w.runner_up for w in want]
        assert np.allclose([w["probability"] for w in got["words"]], [w.probability for w in want], atol=TOL)
        assert np.allclose([w["runner_up_probability"] for w in got["words"]], [w.runner_up_probability for w in want])
    viterbi = [c for c in cases if c["decoding"] == "viterbi"]
    assert len(viterbi) > 10


def test_tag_matches_explore_tag_on_a_tiny_model(classroom):
    """explore.tag (text or words, argmax and Viterbi) against tagFeatures + decodeTags on the tiny model's logits."""
    torch.manual_seed(1)
    model = lab.BertForTokenClassification(tiny_config(vocab_size=classroom.vocab_size, id2label=dict(enumerate(TAGS))))
    model.eval()
    text = "Mr. Darcy's house in the U.S. is big; Émile 🥰 lives in Paris with Ms. Bennet. " * 3
    words = ["Émile", " lives ", "in", "paris", "\u200b"]
    cases = [  # the manifest's task: explore.tag_window_settings (a stride of half the window when none is named)
        {"input": text, "task": explore.tag_window_settings(model, 16, 5, "viterbi")},
        {"input": text, "task": explore.tag_window_settings(model, 24, None, "argmax")},
        {"input": words, "task": explore.tag_window_settings(model, 8, None, "viterbi")},
    ]
    for case in cases:
        case["decoding"] = case["task"]["decoding"]
        msl, stride = case["task"]["max_seq_length"], case["task"]["doc_stride"]
        features = make_tag_features([python_words(case)], classroom, None, msl, stride)
        case["logits"] = [x.tolist() for x in tag_logits(model, features, classroom.pad_token_id)]
        case["labels"] = TAGS
    js = run_js("tag", cases, classroom, max_length=64)
    for case, got in zip(cases, js):
        t = case["task"]
        want = explore.tag(
            model, classroom, case["input"], t["max_seq_length"], t.get("doc_stride"), decoding=case["decoding"]
        )
        assert got["numPieces"] == want.num_pieces and len(got["features"]) == want.num_windows > 1
        assert got["maxSeqLength"] == want.max_seq_length and got["docStride"] == want.doc_stride
        for w, g in zip(want, got["words"], strict=True):
            assert (g["word"], g["tag"], g["runner_up"], g["start"], g["end"]) == (
                w.word, w.tag, w.runner_up, w.start, w.end,
            )  # fmt: skip
            assert tuple(g["pieces"]) == w.pieces
            assert abs(g["probability"] - w.probability) < TOL


def test_tag_errors_match_explore(classroom):
    torch.manual_seed(1)
    model = lab.BertForTokenClassification(tiny_config(vocab_size=classroom.vocab_size, id2label=dict(enumerate(TAGS))))
    task = explore.tag_window_settings(model)  # the manifest's task of a tagger without task settings
    cases = [
        {"input": "", "task": task},
        {"input": "   ", "task": task},
        {"input": [], "task": task},
        {"input": ["a", "  ", "b"], "task": task},
        {"input": "a b", "task": explore.tag_window_settings(model, 2)},
    ]
    js = run_js("tag", cases, classroom, max_length=64)
    for case, got in zip(cases, js):
        with pytest.raises(ValueError) as e:
            explore.tag(model, classroom, case["input"], case["task"].get("max_seq_length"))
        assert got == {"error": str(e.value)}
