"""lab.data's tagging modules (tagged_files, tagging, tag_decoding, tag_metrics, tag_analysis):
readers and their errors, first-sub-token labels, windows, decoding, entity F1 (checked against
seqeval on random tag sequences), token accuracy, bootstrap intervals, and the closer looks of
notebook 8 (the rule piece by piece, vocabulary coverage, accuracy per tag and word class, entity
errors by kind, the annotators' agreement)."""

import ast
import inspect
import json
import random
import warnings
from types import SimpleNamespace

import pytest
import torch

import lab
from lab import inference
from lab.data import tag_analysis, tag_decoding, tag_metrics, tagged_files, tagging
from lab.data.tagged_files import Sentence
from tests.conftest import ROOT

# A hand-made vocabulary: "tampa" -> ta ##mp ##a, "morcillas" -> mor ##cil ##l ##as (as the
# bundled classroom vocabulary splits them), "bx" -> b ##x, "axy" -> a ##x ##y, "cz" -> c ##z.
PIECES = "ta ##mp ##a bay mor ##cil ##l ##as . a b c ##x ##y ##z new york".split()
VOCAB = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *PIECES])}
NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
LABEL2ID = {label: i for i, label in enumerate(NER_LABELS)}

# The worked example of lab/data/tagging.py (windows): six words, ten pieces
#   a | b ##x | c | a ##x ##y | b | c ##z
WINDOW_WORDS = ["a", "bx", "c", "axy", "b", "cz"]


@pytest.fixture(scope="module")
def tok():
    return lab.Tokenizer(VOCAB)


def write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- readers

UNER = (
    "# newdoc id = doc1\n"
    "# sent_id = doc1-0001\n"
    "# text = where in tampa bay ?\n"
    "1\twhere\tO\t-\t-\n"
    "2\tin\tO\t-\t-\n"
    "3\ttampa\tB-LOC\t-\tstephen\n"
    "4\tbay\tI-LOC\t-\tstephen\n"
    "5\t?\tO\t-\t-\n"
    "\n"
    "# sent_id = doc1-0002\n"
    "1\tAnna\tB-PER\t-\t-\n"
    "2\t#\tO\t-\t-\n"
    "\n"
)

CONLL = (
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "EU NNP B-NP B-ORG\n"
    "rejects VBZ B-VP O\n"
    "German JJ B-NP B-MISC\n"
    "\n"
    "# a comment line\n"
    "Peter NNP B-NP B-PER\n"
    "Blackburn NNP I-NP I-PER\n"
    "\n"
)

CONLLU = (
    "# sent_id = s1\n"
    "# text = I don't know.\n"
    "1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_\n"
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_\n"
    "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_\n"
    "3.1\tknows\tknow\tVERB\t_\t_\t_\t_\t_\t_\n"
    "4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_\n"
    "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_\n"
    "\n"
    "# sent_id = s2\n"
    "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n"
    "\n"
)


def test_read_uner_layout(tmp_path):
    data = tagged_files.read_tagged(write(tmp_path, "a.iob2", UNER))
    assert (data.format, data.scheme) == ("uner", "iob2")
    assert data.sentences == [
        Sentence(["where", "in", "tampa", "bay", "?"], ["O", "O", "B-LOC", "I-LOC", "O"]),
        Sentence(["Anna", "#"], ["B-PER", "O"]),
    ]
    words, tags = data[0]  # a Sentence unpacks as (words, tags)
    assert words[2:4] == ["tampa", "bay"]
    assert data.labels == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert data.sentence_ids == ["doc1-0001", "doc1-0002"]
    assert data.lines == [1, 10]
    assert data.entity_counts() == {"LOC": 1, "PER": 1}
    assert data.summary() == "a.iob2: 2 sentences, 7 words, 2 entities (LOC 1, PER 1)"


def test_read_conll_layout(tmp_path):
    data = tagged_files.read_tagged(write(tmp_path, "a.txt", CONLL))
    assert data.format == "conll"
    assert [s.words for s in data] == [["EU", "rejects", "German"], ["Peter", "Blackburn"]]
    assert [s.tags for s in data] == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER"]]
    assert data.labels == ["O", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    # "# O" has the file's column count... here 2 columns against 4: a comment; in a 2-column file, the word "#"
    two = tagged_files.read_tagged(write(tmp_path, "b.txt", "# sent_id = 7\nParis B-LOC\n# O\n\n# O\n, O\n"))
    assert [s.words for s in two] == [["Paris", "#"], ["#", ","]]
    assert two.sentence_ids == ["7", None]
    # plain tags in the last column (POS): scheme="tags"
    pos = tagged_files.read_tagged(write(tmp_path, "pos.txt", "The DT\ncat NN\n"), scheme="tags")
    assert (pos.scheme, pos.labels, pos[0].tags) == ("tags", ["DT", "NN"], ["DT", "NN"])


def test_read_conllu_skips_multiword_and_empty_nodes(tmp_path):
    data = tagged_files.read_tagged(write(tmp_path, "a.conllu", CONLLU))
    assert (data.format, data.scheme) == ("conllu", "tags")
    assert data.sentences == [
        Sentence(["I", "do", "n't", "know", "."], ["PRON", "AUX", "PART", "VERB", "PUNCT"]),
        Sentence(["Hi"], ["INTJ"]),
    ]
    assert data.labels == ["AUX", "INTJ", "PART", "PRON", "PUNCT", "VERB"]
    assert data.sentence_ids == ["s1", "s2"] and data.entity_counts() == {}
    assert data.summary() == "a.conllu: 2 sentences, 6 words, 6 tags"


def test_detect_and_force_format(tmp_path):
    # the content decides, not the name (except .conllu)
    assert tagged_files.detect_format(write(tmp_path, "x.data", UNER)) == "uner"
    assert tagged_files.detect_format(write(tmp_path, "y.data", CONLL)) == "conll"
    assert tagged_files.detect_format(write(tmp_path, "z.data", CONLLU)) == "conllu"
    # forced: a UNER file read as CoNLL takes the last column as the tag, which is not IOB2
    with pytest.raises(ValueError, match="line 4: tag '-' is not IOB2") as err:
        tagged_files.read_tagged(tmp_path / "x.data", format="conll")
    assert "read as" not in str(err.value)
    # detected: the message says which layout the file was read as
    with pytest.raises(ValueError, match="line 1: tag 'word' is not IOB2.*read as 'conll'"):
        tagged_files.read_tagged(write(tmp_path, "w.iob2", "1\tword\n"))
    with pytest.raises(ValueError, match="unknown format"):
        tagged_files.read_tagged(tmp_path / "x.data", format="bio")


def test_bom_and_crlf(tmp_path):
    path = write(tmp_path, "w.iob2", ("\ufeff" + UNER).replace("\n", "\r\n").encode("utf-8"))
    data = tagged_files.read_tagged(path)
    assert data.format == "uner" and data[0].words[0] == "where" and data[0].tags[-1] == "O"
    # a token holding a line separator (U+2028, U+0085) stays one token on its line
    odd = tagged_files.read_tagged(write(tmp_path, "u.iob2", "1\ta\u2028b\tO\n2\tc\u0085\tB-X\n\n1\td\tO\n"))
    assert [s.words for s in odd] == [["a\u2028b", "c\u0085"], ["d"]] and odd.lines == [1, 4]


BAD = [
    # (name, content, line, what the message says)
    ("cols.iob2", "1\ta\tO\n2\tword\n", 2, "2 tab-separated column(s); UNER's layout"),
    ("mixed.iob2", "1\ta\tO\t-\t-\n2\tb\tO\n", 2, "3 columns, but the file's word lines have 5"),
    ("empty_token.iob2", "1\ta\tO\n2\t \tO\n", 2, "an empty token"),
    ("bioes.iob2", "1\tParis\tS-LOC\n", 1, "BIOES"),
    ("bare.iob2", "1\tParis\tLOC\n", 1, "'LOC' is not IOB2"),
    ("notype.iob2", "1\tParis\tB\n", 1, "need an entity type"),
    ("notag.iob2", "1\ta\tO\t-\n2\tParis\t\t-\n", 2, "has no tag"),
    ("dash.txt", "Paris -\n", 1, "tag '-' is not IOB2 (O, B-TYPE or I-TYPE): a plain tag"),
    ("order.iob2", "1\ta\tO\n2\tb\tO\n1\tc\tO\n", 3, "word number 1 where 3 was expected"),
    ("index.iob2", "1\ta\tO\nx\tb\tO\n", 2, "the word's number"),
    ("nowords.iob2", "1\ta\tO\n\n# sent_id = 2\n# text = \n\n1\tb\tO\n", 3, "a sentence with no words"),
    ("utf8.iob2", b"1\ta\tO\n2\tb\tO\n3\t\xff\xfe\tO\n", 3, "not valid UTF-8"),
    ("cols.conllu", "1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\n", 1, "9 tab-separated column(s); CoNLL-U has 10"),
    ("upos.conllu", "1\tI\tI\t_\tPRP\t_\t0\troot\t_\t_\n", 1, "has no tag"),
    ("multi.conllu", "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n\n", 1, "a sentence with no words"),
    ("spaces.conllu", "1 I I PRON PRP _ 0 root _ _\n", 1, "1 tab-separated column(s)"),
    ("cols.txt", "EU NNP B-ORG\nrejects O\n", 2, "2 columns, but the file's word lines have 3"),
    ("doc.txt", "EU B-ORG\n-DOCSTART- O\n", 2, "-DOCSTART- inside a sentence"),
    ("one.txt", "EU B-ORG\nrejects\n", 2, "1 column"),
]


@pytest.mark.parametrize("name, content, line, message", BAD, ids=[b[0] for b in BAD])
def test_malformed_input_names_file_and_line(tmp_path, name, content, line, message):
    path = write(tmp_path, name, content)
    with pytest.raises(ValueError) as err:
        tagged_files.read_tagged(path)
    text = str(err.value)
    assert str(path) in text and f"line {line}:" in text and message in text, text


def test_files_without_sentences(tmp_path):
    for content in ["", "\n\n", "# only a comment\n"]:
        path = write(tmp_path, "e.iob2", content)
        with pytest.raises(ValueError, match="no words found") as err:
            tagged_files.read_tagged(path)
        assert str(path) in str(err.value)
    with pytest.raises(ValueError, match="no sentences"):
        tagged_files.read_tagged(write(tmp_path, "d.txt", "-DOCSTART- O\n\n"), format="conll")
    with pytest.raises(FileNotFoundError):
        tagged_files.read_tagged(tmp_path / "missing.iob2")


def test_label_list():
    assert tagged_files.label_list([["B-PER", "O"], ["I-LOC"]]) == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert tagged_files.label_list([["VERB", "ADP"], ["ADP"]], scheme="tags") == ["ADP", "VERB"]
    with pytest.raises(ValueError, match="not IOB2"):
        tagged_files.label_list([["E-PER"]])


# ---------------------------------------------------------------------------------------------- first sub-token


def test_first_subtoken_labels_worked_example(tok):
    sentence = Sentence(["Tampa", "bay", "morcillas", "."], ["B-LOC", "I-LOC", "O", "O"])
    (f,) = tagging.make_tag_features([sentence], tok, LABEL2ID)
    assert tok.convert_ids_to_tokens(f.input_ids) == "[CLS] ta ##mp ##a bay mor ##cil ##l ##as . [SEP]".split()
    L, I = LABEL2ID, -100
    assert f.labels == [I, L["B-LOC"], I, I, L["I-LOC"], L["O"], I, I, I, L["O"], I]
    assert f.word_index == [-1, 0, -1, -1, 1, 2, -1, -1, -1, 3, -1]
    assert f.word_positions == {0: 1, 1: 4, 2: 5, 3: 9}
    assert (f.sentence_index, f.window_index, f.window_start, f.num_words) == (0, 0, 0, 4)

    batch, feats = tagging.encode_tag_batch([sentence, (["new", "york"], ["B-LOC", "I-LOC"])], tok, LABEL2ID)
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask", "labels"}
    assert batch.input_ids.shape == (2, 16)  # 11 positions, padded to a multiple of 8
    assert batch.labels[1].tolist() == [-100, L["B-LOC"], L["I-LOC"]] + [-100] * 13
    assert batch.attention_mask[1].tolist() == [1, 1, 1, 1] + [0] * 12
    assert batch.token_type_ids.abs().sum() == 0
    assert feats[1].word_positions == {0: 1, 1: 2}


def test_words_without_labels_and_empty_pieces(tok):
    # no label2id: no labels (prediction); a word the normalizer empties gets one [UNK] piece
    (f,) = tagging.make_tag_features([["tampa", "\u200b", "bay"]], tok)
    assert f.labels is None
    assert tok.convert_ids_to_tokens(f.input_ids) == "[CLS] ta ##mp ##a [UNK] bay [SEP]".split()
    assert f.word_positions == {0: 1, 1: 4, 2: 5}
    assert "labels" not in tagging.collate_tag_features([f], tok.pad_token_id)


def test_encoding_errors(tok):
    with pytest.raises(ValueError, match="sentence 1 has tags \\['B-ORG'\\]"):
        tagging.make_tag_features([(["a"], ["O"]), (["b"], ["B-ORG"])], tok, LABEL2ID)
    with pytest.raises(ValueError, match="sentence 0: 2 words but 1 tags"):
        tagging.make_tag_features([(["a", "b"], ["O"])], tok, LABEL2ID)
    with pytest.raises(ValueError, match="sentence 0 has no words"):
        tagging.make_tag_features([[]], tok)
    with pytest.raises(ValueError, match="sentence 0, word 1"):
        tagging.make_tag_features([["a", ""]], tok)
    with pytest.raises(ValueError, match="has no tags"):
        tagging.make_tag_features([["a", "b", "c"]], tok, LABEL2ID)
    with pytest.raises(ValueError, match="no room"):
        tagging.make_tag_features([["a"]], tok, max_seq_length=2)


# ---------------------------------------------------------------------------------------------- windows


def test_windows_worked_example(tok):
    tags = ["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O"]
    feats = tagging.make_tag_features([(WINDOW_WORDS, tags)], tok, LABEL2ID, max_seq_length=8, doc_stride=3)
    assert [(f.window_index, f.window_start, len(f)) for f in feats] == [(0, 0, 8), (1, 3, 8), (2, 6, 6)]
    # first pieces: p0 p1 p3 p4 p7 p8 (words 0..5); each window labels the words whose first piece it holds
    assert [f.word_positions for f in feats] == [{0: 1, 1: 2, 2: 4, 3: 5}, {2: 1, 3: 2, 4: 5, 5: 6}, {4: 2, 5: 3}]
    L = LABEL2ID
    assert feats[1].labels == [-100, L["O"], L["B-LOC"], -100, -100, L["I-LOC"], L["O"], -100]
    # reading windows: w0..w3 from window 0, w4 from window 1, w5 from window 2
    read = {(f.window_index, f.word_index[p]) for f in feats for p in range(len(f)) if f.token_is_max_context[p]}
    first_piece_reads = {(k, w) for k, w in read if w >= 0}
    assert first_piece_reads == {(0, 0), (0, 1), (0, 2), (0, 3), (1, 4), (2, 5)}
    # logits favouring label k in window k show which window each word was read from
    logits = [torch.nn.functional.one_hot(torch.full((len(f),), f.window_index), 5).float() * 4 for f in feats]
    (words,) = tag_decoding.decode_tags(feats, logits, NER_LABELS)
    assert [w.tag for w in words] == ["O", "O", "O", "O", "B-LOC", "I-LOC"]


def test_a_word_longer_than_a_window_is_still_labelled(tok):
    words = ["b", "a" + "x" * 9, "c"]  # the middle word: a ##x x 9 = 10 pieces; windows of 3 pieces
    tags = ["O", "B-LOC", "O"]
    feats = tagging.make_tag_features([(words, tags)], tok, LABEL2ID, max_seq_length=5, doc_stride=2)
    assert len(feats) == 6 and all(len(f) <= 5 for f in feats)
    labelled = {f.word_index[p] for f in feats for p, y in enumerate(f.labels) if y != -100}
    assert labelled == {0, 1, 2}
    logits = torch.zeros(len(feats), 5, 5)
    (out,) = tag_decoding.decode_tags(feats, logits, dict(enumerate(NER_LABELS)))
    assert len(out) == 3 and all(w.probability == pytest.approx(0.2) for w in out)


def _best_window_by_hand(windows, t):
    best, score = None, None
    for k, (start, length) in enumerate(windows):
        if start <= t < start + length:
            s = min(t - start, start + length - 1 - t) + 0.01 * length
            if score is None or s > score:
                best, score = k, s
    return best


def test_every_word_read_once_from_its_max_context_window(tok):
    rng = random.Random(0)
    vocab_words = ["a", "bx", "c", "axy", "b", "cz", "tampa", "morcillas", "bay", "."]
    for _ in range(200):
        sentences = [[rng.choice(vocab_words) for _ in range(rng.randint(1, 15))] for _ in range(3)]
        max_seq_length, stride = rng.randint(3, 14), rng.randint(1, 14)
        feats = tagging.make_tag_features(sentences, tok, max_seq_length=max_seq_length, doc_stride=stride)
        # every window fits; labels would fall on first pieces only
        assert all(len(f) <= max_seq_length for f in feats)
        # logits: label = the window's index, so decoding tells which window each word came from
        n_labels = max(f.window_index for f in feats) + 2
        logits = [10 * torch.nn.functional.one_hot(torch.full((len(f),), f.window_index), n_labels) for f in feats]
        decoded = tag_decoding.decode_tags(feats, logits, [str(i) for i in range(n_labels)])
        assert [len(s) for s in decoded] == [len(s) for s in sentences]
        for i, words in enumerate(decoded):
            mine = [f for f in feats if f.sentence_index == i]
            windows = [(f.window_start, len(f) - 2) for f in mine]
            firsts = {}  # word -> index of its first piece in the sentence
            for f in mine:
                for w, p in f.word_positions.items():
                    firsts[w] = f.window_start + p - 1
            assert sorted(firsts) == list(range(len(sentences[i])))  # every word's first piece is in a window
            for w, tag in enumerate(words):
                assert int(tag.tag) == _best_window_by_hand(windows, firsts[w])


def test_decode_probabilities_and_errors(tok):
    feats = tagging.make_tag_features([["a", "b"]], tok)
    logits = torch.zeros(1, 8, 3)  # padded beyond the window's 4 positions
    logits[0, 1] = torch.tensor([0.0, 2.0, 1.0])
    logits[0, 2] = torch.tensor([5.0, 0.0, 0.0])
    (words,) = tag_decoding.decode_tags(feats, logits, {0: "O", 1: "B-X", 2: "I-X"})
    p = torch.softmax(torch.tensor([0.0, 2.0, 1.0]), -1)
    assert words[0].tag == "B-X" and words[0].runner_up == "I-X"
    assert words[0].probability == pytest.approx(p[1].item()) and words[0].runner_up_probability == pytest.approx(p[2])
    assert words[1].tag == "O" and words[1].runner_up in ("B-X", "I-X")
    (one,) = tag_decoding.decode_tags(feats, torch.zeros(1, 4, 1), ["O"])
    assert one[0] == ("O", 1.0, "", 0.0)
    with pytest.raises(ValueError, match="logits for 2 windows but 1 features"):
        tag_decoding.decode_tags(feats, torch.zeros(2, 4, 3), ["O", "B-X", "I-X"])
    with pytest.raises(ValueError, match="expected \\[T >= 4, 3\\]"):
        tag_decoding.decode_tags(feats, torch.zeros(1, 4, 2), ["O", "B-X", "I-X"])
    two = tagging.make_tag_features([["a"], ["b"]], tok)
    with pytest.raises(ValueError, match="sentence 0 has no windows"):
        tag_decoding.decode_tags(two[1:], torch.zeros(1, 3, 1), ["O"])


class ContextFree(torch.nn.Module):
    """A token classifier that looks at each token alone: its tags cannot depend on the windows."""

    def __init__(self, vocab_size, n_labels):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab_size, n_labels)
        self.config = SimpleNamespace(id2label={i: f"T{i}" for i in range(n_labels)}, max_position_embeddings=64)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        return SimpleNamespace(logits=self.emb(input_ids))  # (B, T, K)


def test_predict_tags_reads_the_first_piece(tok):
    torch.manual_seed(0)
    model = ContextFree(len(VOCAB), 4).train()
    sentences = [["tampa", "bay", "axy"] * 4, ["cz"], ["morcillas", "."]]
    small = inference.predict_tags(model, tok, sentences, max_seq_length=5, doc_stride=2, batch_size=2)
    whole = inference.predict_tags(model, tok, sentences, max_seq_length=64)
    assert model.training  # its mode is put back
    assert [[w.tag for w in s] for s in small] == [[w.tag for w in s] for s in whole]
    for s, w in zip(small, whole):
        assert [x.probability for x in s] == pytest.approx([x.probability for x in w], abs=1e-6)
    first = tok.convert_tokens_to_ids("ta")  # "tampa" is read from its first piece, ta
    assert small[0][0].tag == f"T{model.emb.weight[first].argmax().item()}"
    with pytest.raises(ValueError, match="exceeds the model's 64 positions"):
        inference.predict_tags(model, tok, sentences, max_seq_length=128)


# ---------------------------------------------------------------------------------------------- metrics


@pytest.mark.parametrize(
    "tags, entities",
    [
        (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),
        (["O", "I-LOC", "I-LOC"], [("LOC", 1, 2)]),
        (["I-PER", "I-PER"], [("PER", 0, 1)]),
        (["B-PER", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 1)]),
        (["B-LOC", "B-LOC"], [("LOC", 0, 0), ("LOC", 1, 1)]),
        (
            ["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG", "I-ORG"],
            [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 4), ("ORG", 5, 6)],
        ),
        (["B-A-B", "I-A-B"], [("A-B", 0, 1)]),
        ([], []),
        (["O", "O"], []),
    ],
)
def test_get_entities_by_hand(tags, entities):
    assert tag_metrics.get_entities(tags) == entities


def test_entity_scores_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"], []]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG"], []]
    s = tag_metrics.entity_scores(gold, pred)
    assert (s.micro.correct, s.micro.predicted, s.micro.support) == (1, 3, 3)
    assert (s.precision, s.recall, s.f1) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert list(s.per_type) == ["LOC", "ORG", "PER"]
    assert vars(s.per_type["PER"]) == dict(precision=1.0, recall=1.0, f1=1.0, support=1, predicted=1, correct=1)
    assert vars(s.per_type["LOC"]) == dict(precision=0.0, recall=0.0, f1=0.0, support=1, predicted=0, correct=0)
    assert s.per_type["ORG"].precision == 0.0 and s.per_type["ORG"].predicted == 2  # "B-ORG I-ORG" != "B-ORG"
    assert s.macro.f1 == pytest.approx(1 / 3)
    table = str(s)
    assert "micro avg" in table and "PER" in table and s.to_dict()["PER"]["f1"] == 1.0
    with pytest.raises(ValueError, match="sentence 0 has 1 gold tags but 2 predicted"):
        tag_metrics.entity_scores([["O"]], [["O", "O"]])
    with pytest.raises(ValueError, match="not an entity tag"):
        tag_metrics.entity_scores([["PER"]], [["O"]])


def _random_tags(rng, alphabet, n):
    return [rng.choice(alphabet) for _ in range(n)]


def test_entities_and_scores_match_seqeval():
    from seqeval.metrics import classification_report
    from seqeval.metrics.sequence_labeling import get_entities, precision_recall_fscore_support

    rng = random.Random(0)
    iob2 = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG", "B-MISC"]
    only_i = ["O", "I-PER", "I-LOC"]
    bioes = [*iob2, "E-PER", "S-LOC", "E-LOC", "S-ORG"]  # seqeval's default mode also reads E-/S-
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns when a ratio is undefined
        for corpus in range(120):
            alphabet = [iob2, only_i, bioes][corpus % 3]
            lengths = [rng.choice([0, 1, 2, 5, 12]) for _ in range(rng.randint(1, 30))]
            gold = [_random_tags(rng, alphabet, n) for n in lengths]
            pred = [[t if rng.random() < 0.6 else rng.choice(alphabet) for t in g] for g in gold]
            for sentence in gold + pred:
                assert tag_metrics.get_entities(sentence) == get_entities(list(sentence)), sentence
                checked += 1
            ours = tag_metrics.entity_scores(gold, pred)
            if not any(gold) or not any(pred):
                continue  # seqeval needs at least one tag to score
            p, r, f, support = precision_recall_fscore_support(gold, pred, average=None)
            types = sorted({t for t, _, _ in get_entities(gold)} | {t for t, _, _ in get_entities(pred)})
            assert list(ours.per_type) == types
            for k, t in enumerate(types):
                s = ours.per_type[t]
                assert (s.precision, s.recall, s.f1, s.support) == pytest.approx((p[k], r[k], f[k], support[k]))
            micro = precision_recall_fscore_support(gold, pred, average="micro")
            assert (ours.precision, ours.recall, ours.f1) == pytest.approx(micro[:3])
            macro = precision_recall_fscore_support(gold, pred, average="macro")
            assert (ours.macro.precision, ours.macro.recall, ours.macro.f1) == pytest.approx(macro[:3])
            report = classification_report(gold, pred, output_dict=True)
            for name, s in [*ours.per_type.items(), ("micro avg", ours.micro), ("macro avg", ours.macro)]:
                row = report[name]
                assert (s.precision, s.recall, s.f1, s.support) == pytest.approx(
                    (row["precision"], row["recall"], row["f1-score"], row["support"])
                )
    assert checked > 3000


def test_token_accuracy():
    assert tag_metrics.token_accuracy([["DET", "NOUN"], ["VERB"]], [["DET", "VERB"], ["VERB"]]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="no words"):
        tag_metrics.token_accuracy([[]], [[]])
    with pytest.raises(ValueError, match="2 gold sentences but 1 predicted"):
        tag_metrics.token_accuracy([["X"], ["Y"]], [["X"]])


def test_bootstrap_interval():
    rng = random.Random(1)
    gold = [_random_tags(rng, ["O", "O", "B-PER", "I-PER", "B-LOC"], rng.randint(0, 10)) for _ in range(300)]
    pred = [[t if rng.random() < 0.8 else "O" for t in g] for g in gold]
    a = tag_metrics.bootstrap_interval(gold, pred, "f1", n_resamples=300, seed=3)
    assert a == tag_metrics.bootstrap_interval(gold, pred, "f1", n_resamples=300, seed=3)  # seeded
    assert a.estimate == pytest.approx(tag_metrics.entity_scores(gold, pred).f1)
    assert a.low < a.estimate < a.high and a.high - a.low < 0.2
    assert tag_metrics.bootstrap_interval(gold, pred, "f1", n_resamples=300, seed=4) != a
    for metric in ("precision", "recall"):
        m = tag_metrics.bootstrap_interval(gold, pred, metric, n_resamples=200)
        assert m.estimate == pytest.approx(getattr(tag_metrics.entity_scores(gold, pred), metric))
    acc = tag_metrics.bootstrap_interval(gold, pred, "accuracy", n_resamples=200)
    assert acc.estimate == pytest.approx(tag_metrics.token_accuracy(gold, pred)) and acc.low <= acc.estimate <= acc.high
    perfect = tag_metrics.bootstrap_interval(gold, gold, "f1", n_resamples=50)
    assert (perfect.estimate, perfect.low, perfect.high) == (1.0, 1.0, 1.0)
    assert "95% interval" in str(a)
    with pytest.raises(ValueError, match="unknown metric"):
        tag_metrics.bootstrap_interval(gold, pred, "auc")


def test_no_runtime_dependency_on_seqeval():
    tree = ast.parse(
        "\n".join(map(inspect.getsource, (tagged_files, tagging, tag_decoding, tag_metrics, tag_analysis)))
    )
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any("seqeval" in name for name in imported)


# ---------------------------------------------------------------------------------------------- real data


def test_real_uner_and_ud_counts(shared_data, tok):
    """../shared/data/README.md: UNER dev 2,001 sentences, 25,149 tokens, 966 entities (LOC 399,
    ORG 224, PER 343), test 2,077 sentences; UD dev 2,001 / test 2,077 sentences, 17 UPOS tags."""
    uner = shared_data / "uner-ewt"
    if not (uner / "en_ewt-ud-dev.iob2").is_file():
        pytest.skip("no uner-ewt data")
    dev = tagged_files.read_tagged(uner / "en_ewt-ud-dev.iob2")
    assert (dev.format, len(dev), dev.num_words) == ("uner", 2001, 25149)
    assert dev.entity_counts() == {"LOC": 399, "ORG": 224, "PER": 343}
    assert dev.labels == ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    test = tagged_files.read_tagged(uner / "en_ewt-ud-test.iob2")
    assert len(test) == 2077
    # our counting agrees with seqeval's on real gold against a corrupted copy of it
    from seqeval.metrics.sequence_labeling import precision_recall_fscore_support

    rng = random.Random(0)
    gold = [s.tags for s in test]
    pred = [[t if rng.random() < 0.9 else rng.choice(dev.labels) for t in g] for g in gold]
    p, r, f, _ = precision_recall_fscore_support(gold, pred, average="micro")
    ours = tag_metrics.entity_scores(gold, pred)
    assert (ours.precision, ours.recall, ours.f1) == pytest.approx((p, r, f))
    ud = shared_data / "ud-ewt"
    pos_dev = tagged_files.read_tagged(ud / "en_ewt-ud-dev.conllu")
    pos_test = tagged_files.read_tagged(ud / "en_ewt-ud-test.conllu")
    assert (pos_dev.format, len(pos_dev), len(pos_dev.labels), len(pos_test)) == ("conllu", 2001, 17, 2077)
    # with the bundled vocabulary the longest UD test sentence is 390 pieces: windows; no word is lost
    classroom = lab.Tokenizer.from_pretrained(ROOT / "models" / "bert-lab-classroom")
    label2id = {t: i for i, t in enumerate(pos_test.labels)}
    feats = tagging.make_tag_features(pos_test.sentences, classroom, label2id)
    assert len(feats) > len(pos_test) and max(len(f) for f in feats) == 128
    labelled = {(f.sentence_index, f.word_index[p]) for f in feats for p, y in enumerate(f.labels) if y != -100}
    assert len(labelled) == pos_test.num_words
    logits = [torch.randn(len(f), len(label2id)) for f in feats]
    decoded = tag_decoding.decode_tags(feats, logits, pos_test.labels)
    assert [len(d) for d in decoded] == [len(s.words) for s in pos_test]


# ---------------------------------------------------------------------------------------------- looking closer


def test_piece_rows_lay_out_the_rule(tok):
    words = ["Tampa", "bay", "morcillas", "."]
    sentence = Sentence(words, ["B-LOC", "I-LOC", "O", "O"])
    (f,) = tagging.make_tag_features([sentence], tok, LABEL2ID)
    logits = torch.zeros(len(f), len(NER_LABELS))
    logits[:, LABEL2ID["I-LOC"]] = 1.0  # I-LOC everywhere...
    logits[1, LABEL2ID["B-LOC"]] = 2.0  # ...but B-LOC at "ta", the first piece of Tampa
    rows = tag_analysis.piece_rows(f, tok, words, NER_LABELS, logits)
    assert [r["piece"] for r in rows] == "[CLS] ta ##mp ##a bay mor ##cil ##l ##as . [SEP]".split()
    assert [r["word"] for r in rows] == ["", *["Tampa"] * 3, "bay", *["morcillas"] * 4, ".", ""]
    assert [r["of_word"] for r in rows] == [-1, 0, 0, 0, 1, 2, 2, 2, 2, 3, -1]
    assert [r["label"] for r in rows] == [-100, "B-LOC", -100, -100, "I-LOC", "O", -100, -100, -100, "O", -100]
    assert [r["first"] for r in rows] == [r["read"] for r in rows] == [r["label"] != -100 for r in rows]
    assert rows[1]["argmax"] == "B-LOC" and rows[2]["argmax"] == "I-LOC"  # argmax everywhere, read at first pieces
    plain = tag_analysis.piece_rows(f, tok, words)  # no names, no logits: label ids, no argmax / read
    assert plain[1]["label"] == LABEL2ID["B-LOC"] and "argmax" not in plain[1] and "read" not in plain[1]
    # a window of a long sentence: each piece still names its word, also when the window starts mid-word
    feats = tagging.make_tag_features([WINDOW_WORDS], tok, None, max_seq_length=8, doc_stride=3)
    third = tag_analysis.piece_rows(feats[2], tok, WINDOW_WORDS)  # pieces 6-9: ##y b c ##z
    assert [r["piece"] for r in third] == "[CLS] ##y b c ##z [SEP]".split()
    assert [r["word"] for r in third] == ["", "axy", "b", "cz", "cz", ""]
    assert [r["of_word"] for r in third] == [-1, 3, 4, 5, 5, -1]
    assert [r["first"] for r in third] == [False, False, True, True, False, False]
    with pytest.raises(ValueError, match="logits of shape"):
        tag_analysis.piece_rows(f, tok, words, NER_LABELS, logits[:3])
    with pytest.raises(ValueError, match="not the sentence"):
        tag_analysis.piece_rows(f, tok, ["a"])


def test_sentences_with_split_entities_and_vocabulary_coverage(tok):
    sentences = [
        Sentence(["new", "york", "."], ["B-LOC", "I-LOC", "O"]),  # whole words
        Sentence(["tampa", "bay", "."], ["B-LOC", "I-LOC", "O"]),  # tampa -> ta ##mp ##a
        Sentence(["morcillas", "bay", "a", "b", "c"], ["O", "B-LOC", "O", "O", "O"]),  # the cut word is no entity
    ]
    assert tag_analysis.sentences_with_split_entities(sentences, tok) == [1]
    assert tag_analysis.sentences_with_split_entities(sentences, tok, max_words=2) == []
    coverage = tag_analysis.vocabulary_coverage(sentences, tok)
    assert list(coverage) == ["LOC", "O"]
    assert vars(coverage["LOC"]) == dict(words=5, whole=4, pieces=7)  # new york tampa(3) bay bay
    assert coverage["LOC"].whole_share == pytest.approx(0.8) and coverage["LOC"].pieces_per_word == pytest.approx(1.4)
    assert vars(coverage["O"]) == dict(words=6, whole=5, pieces=9)  # . . morcillas(4) a b c
    pos = tag_analysis.vocabulary_coverage([(["tampa", "a"], ["PROPN", "DET"])], tok)
    assert pos["PROPN"].pieces == 3 and pos["DET"].whole == 1
    assert [tag_analysis.tag_group(t) for t in ("B-LOC", "I-LOC", "O", "PROPN")] == ["LOC", "LOC", "O", "PROPN"]
    with pytest.raises(ValueError, match="needs its tags"):
        tag_analysis.vocabulary_coverage([["tampa"]], tok)


def test_tag_accuracies_and_word_classes():
    gold = [["DET", "NOUN", "VERB", "PROPN"], ["PROPN", "PROPN", "PUNCT"]]
    pred = [["DET", "NOUN", "NOUN", "NOUN"], ["PROPN", "ADJ", "PUNCT"]]
    acc = tag_analysis.tag_accuracies(gold, pred)
    assert list(acc) == ["PROPN", "DET", "NOUN", "PUNCT", "VERB"]  # commonest first, then by name
    assert (acc["PROPN"].words, acc["PROPN"].right, acc["PROPN"].accuracy) == (3, 1, pytest.approx(1 / 3))
    assert (acc["PROPN"].confused_with, acc["PROPN"].confused) == ("ADJ", 1)  # a tie (ADJ 1, NOUN 1): by name
    assert (acc["VERB"].confused_with, acc["DET"].confused_with, acc["DET"].confused) == ("NOUN", "", 0)
    classes = tag_analysis.class_accuracies(acc)
    assert classes == {"closed class": 1.0, "open class": pytest.approx(2 / 5), "other": 1.0}
    assert set(tag_analysis.UD_WORD_CLASSES["closed class"]) | set(tag_analysis.UD_WORD_CLASSES["open class"]) | set(
        tag_analysis.UD_WORD_CLASSES["other"]
    ) == {*"ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()}
    assert tag_analysis.class_accuracies(acc, {"none": ("SYM",)}) == {}


def test_entity_errors_by_hand():
    # the docstring's example, and one of each kind
    gold = [["B-ORG", "I-ORG", "O", "B-PER", "O"], ["B-LOC", "I-LOC", "O", "B-PER", "I-PER", "B-ORG", "O"]]
    pred = [["B-LOC", "I-LOC", "O", "B-PER", "B-LOC"], ["B-LOC", "O", "O", "O", "B-LOC", "I-LOC", "O"]]
    errors = tag_analysis.entity_errors(gold, pred)
    assert errors["ORG"] == {
        "gold": 2,
        "correct": 0,
        "wrong type": 1,  # ORG 0-1 predicted as LOC 0-1
        "wrong span": 0,
        "wrong type and span": 1,  # ORG 5 overlapped by LOC 4-5
        "missed": 0,
        "spurious": 0,
    }
    assert errors["PER"]["correct"] == 1 and errors["PER"]["wrong type and span"] == 1  # PER 3-4 vs LOC 4-5
    assert errors["LOC"]["wrong span"] == 1 and errors["LOC"]["spurious"] == 1  # LOC 0-1 vs 0; LOC at word 4
    assert tag_analysis.entity_errors([["B-PER"]], [["O"]])["PER"]["missed"] == 1
    assert tag_analysis.entity_errors([["O"]], [["O"]]) == {}


def test_entity_errors_agree_with_entity_scores():
    rng = random.Random(1)
    alphabet = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG"]
    gold = [_random_tags(rng, alphabet, rng.randint(1, 12)) for _ in range(300)]
    pred = [[t if rng.random() < 0.7 else rng.choice(alphabet) for t in g] for g in gold]
    errors, scores = tag_analysis.entity_errors(gold, pred), tag_metrics.entity_scores(gold, pred)
    for kind, e in errors.items():
        assert e["gold"] == sum(e[k] for k in tag_analysis.ERROR_KINDS)
        assert (e["gold"], e["correct"]) == (scores.per_type[kind].support, scores.per_type[kind].correct)
        assert e["spurious"] <= scores.per_type[kind].predicted - scores.per_type[kind].correct


def test_annotator_agreement(tmp_path):
    data = write(tmp_path, "dev.iob2", UNER)
    assert tag_analysis.annotator_agreement(data) is None  # no dev.stats beside it
    stats = {
        "num_annotators": 2,
        "pairwise_f1": {
            "ref:a, pred:b": {"num_common_annotated_docs": 63, "PER": {"f1": 0.9}},
            "average": {"PER": {"precision": 1.0, "recall": 0.8, "f1": 0.9}, "LOC": {"f1": 0.5}},
        },
    }
    write(tmp_path, "dev.stats", json.dumps(stats))
    agreement = tag_analysis.annotator_agreement(data)
    assert agreement.f1 == {"LOC": 0.5, "PER": 0.9} and list(agreement.f1) == ["LOC", "PER"]
    assert (agreement.annotators, agreement.documents) == (2, 63) and agreement.path.endswith("dev.stats")
    write(tmp_path, "dev.stats", json.dumps({"num_annotators": 1}))
    with pytest.raises(ValueError, match="pairwise_f1.average"):
        tag_analysis.annotator_agreement(data)


def test_real_annotator_agreement(shared_data):
    test = shared_data / "uner-ewt" / "en_ewt-ud-test.iob2"
    if not test.is_file():
        pytest.skip("no uner-ewt data")
    agreement = tag_analysis.annotator_agreement(test)
    assert {k: round(v, 3) for k, v in agreement.f1.items()} == {"LOC": 0.825, "ORG": 0.870, "PER": 0.969}
    assert (agreement.annotators, agreement.documents) == (2, 63)
