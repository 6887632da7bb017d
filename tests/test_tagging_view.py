"""Token tagging, seen from the outside: explore.tag (one entry per word, its pieces, the tag and the
runner-up, long text read whole) and the dashboard's Tag tab (its handler, its /tag API, and a page
that builds when no model serves tagging yet). Tiny taggers are written for the tests; the
real-browser check of the view is in tests/test_browser.py."""

import pytest
import torch

from tests.conftest import BUNDLED, ROOT, tiny_config

pytestmark = pytest.mark.timeout(300)

NER_LABELS = ["O", "B-PER", "I-PER"]
TEXT = "Elizabeth Bennet's playing children walked to Longbourn."


def tiny_tagger(tokenizer, labels=NER_LABELS, seed: int = 0):
    """A BertForTokenClassification of the tests' tiny shape with these labels (random weights)."""
    import lab

    torch.manual_seed(seed)
    cfg = tiny_config(vocab_size=tokenizer.vocab_size).with_labels(labels)
    return lab.BertForTokenClassification(cfg)


def write_tiny_tagger(path, labels=NER_LABELS):
    """A tiny random tagger saved at `path` with the bundled model's vocabulary; returns path."""
    import lab

    _, tok = lab.load(ROOT / BUNDLED)
    if not (path / "config.json").is_file():
        lab.save(tiny_tagger(tok, labels), tok, path)
    return path


@pytest.fixture(scope="module")
def tok():
    import lab

    return lab.load(ROOT / BUNDLED)[1]


# ----------------------------------------------------------------------------------------------
# explore.tag
# ----------------------------------------------------------------------------------------------
def test_tag_gives_one_entry_per_word_with_its_pieces(tok):
    from lab import explore

    model = tiny_tagger(tok)
    result = explore.tag(model, tok, TEXT)
    words = [w for w, _, _ in explore.split_words(TEXT)]
    # whitespace and punctuation split, each mark a word of its own, a clitic and a title's period
    # kept together, as the English Web Treebank splits words
    assert words == ["Elizabeth", "Bennet", "'s", "playing", "children", "walked", "to", "Longbourn", "."]
    assert [w for w, _, _ in explore.split_words("Mr. Darcy met Dr. Watson in the U.S.")] == [
        "Mr.", "Darcy", "met", "Dr.", "Watson", "in", "the", "U.S.",
    ]  # fmt: skip
    assert [w.word for w in result] == words
    for w in result:
        assert TEXT[w.start : w.end] == w.word
        assert w.pieces and w.joined == " ".join(w.pieces)
        assert "".join(p.removeprefix("##") for p in w.pieces) == w.word.lower()  # the pieces spell the word
        if w.word.isalnum():  # ("'s" is two basic tokens, ' and s, as BERT's tokenizer splits it)
            assert w.pieces[0][:2] != "##" and all(p.startswith("##") for p in w.pieces[1:])
        assert w.tag in NER_LABELS and w.runner_up in NER_LABELS and w.runner_up != w.tag
        assert 0 < w.runner_up_probability <= w.probability <= 1
        assert w.probability + w.runner_up_probability <= 1 + 1e-6
    assert result.num_windows == 1 and result.num_pieces == sum(len(w.pieces) for w in result)
    # a list of words is taken as it is (no split at the apostrophe) and gives the same reading
    given = explore.tag(model, tok, ["Bennet's", "children"])
    assert [w.word for w in given] == ["Bennet's", "children"] and given[0].start is None
    assert given[0].joined == " ".join(tok.tokenize("Bennet's"))
    # the first-sub-token rule: a word of several pieces is tagged as if the first piece were alone
    # in its place (the other pieces are never read)
    several = [w for w in explore.tag(model, tok, "unbelievably happy") if len(w.pieces) > 1]
    assert several and several[0].pieces[0] == "unb"


def test_tag_reads_a_long_text_whole_in_windows(tok):
    from lab import explore, inference

    model = tiny_tagger(tok)
    text = " ".join(f"word{i} ." for i in range(150))  # 300 words, more than one 64-token window
    result = explore.tag(model, tok, text)
    assert len(result) == 300 and result[-1].word == "." and result[-2].word == "word149"
    assert result.num_windows > 1 and result.max_seq_length == 64  # at most the model's positions
    # the same tags as lab.inference.predict_tags with the same windows: nothing dropped or moved
    expected = inference.predict_tags(model, tok, [[w.word for w in result]], max_seq_length=64, doc_stride=32)[0]
    assert [w.tag for w in result] == [e.tag for e in expected]
    # the windows a model was fine-tuned with are used when given
    narrow = explore.tag(model, tok, text, max_seq_length=16, doc_stride=5)
    assert len(narrow) == 300 and narrow.num_windows > result.num_windows and narrow.doc_stride == 5


def test_tag_refuses_empty_input_and_a_model_without_the_head(tok):
    import lab
    from lab import explore

    model = tiny_tagger(tok)
    for empty in ("", "   ", "\x00\x07", None):
        with pytest.raises(ValueError, match="empty"):
            explore.tag(model, tok, empty)
    with pytest.raises(ValueError, match="empty"):
        explore.tag(model, tok, [])
    with pytest.raises(ValueError, match="word 1 is empty"):
        explore.tag(model, tok, ["fine", "  "])
    classifier = lab.BertForSequenceClassification(tiny_config(vocab_size=tok.vocab_size))
    with pytest.raises(ValueError, match="no token-classification head.*finetune-tag"):
        explore.tag(classifier, tok, TEXT)


# ----------------------------------------------------------------------------------------------
# The Tag tab
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_dash(tmp_path_factory):
    """A page served from one models root holding a tiny pre-trained model and no tagger (built
    before any tagger exists), then a tiny tagger written beside it: (dashboard, root)."""
    import lab
    from dashboard import Dashboard, Settings

    root = tmp_path_factory.mktemp("no-tagger-root")
    _, tok = lab.load(ROOT / BUNDLED)
    torch.manual_seed(0)
    lab.save(lab.BertForPreTraining(tiny_config(vocab_size=tok.vocab_size)), tok, root / "tiny-pretrained")
    dash = Dashboard(Settings(model_roots=[root]))
    dash.build()
    return dash, root


def component(demo, **attrs):
    found = [b for b in demo.blocks.values() if all(getattr(b, k, None) == v for k, v in attrs.items())]
    assert len(found) == 1, (attrs, len(found))
    return found[0]


def test_the_page_builds_with_no_tagger_and_says_how_to_make_one(small_dash):
    dash, _ = small_dash
    demo = dash.demo
    assert "Tag words" in dash.ctx.links.tabs.values() and list(dash.ctx.links.tabs)[5] == "tag"  # after Classify
    status = component(demo, elem_id="tag-status").value
    assert "python -m lab finetune-tag" in status and "\n" not in status  # one line
    assert not component(demo, elem_id="tag-words").value
    menu = next(m for m, task in dash.ctx.menus if task == "tag")
    assert menu.choices == [] and menu.value is None
    # the API says the same
    *_, status = dash.tab("tag").tag("", "Elizabeth walked .")
    assert "finetune-tag" in status


def test_the_tag_handler(small_dash):
    dash, root = small_dash
    store, tab = dash.store, dash.tab("tag")
    name = store.display(write_tiny_tagger(root / "tiny-ner"))
    assert name in store.models_for("tag")
    # the Tag tab's menu lists it once a model is added (the Model tab's Add refreshes every menu)
    update = dash.ctx.menu_updates()[[task for _, task in dash.ctx.menus].index("tag")]
    assert [c[0] if isinstance(c, (list, tuple)) else c for c in update.choices] == [name]
    words, table, detail, status = tab.tag(name, TEXT)
    # every word and the text between them, in order: the text itself
    assert "".join(text for text, _ in words["value"]) == TEXT
    categories = {label for _, label in words["value"] if label is not None}
    assert categories <= {"PER"} and set(words["color_map"]) == {"PER"}  # IOB2: B-PER and I-PER are PER
    rows = table["data"]
    assert table["headers"] == ["word", "pieces", "tag", "probability", "runner-up", "runner-up probability"]
    assert [r[0] for r in rows] == [
        "Elizabeth",
        "Bennet",
        "'s",
        "playing",
        "children",
        "walked",
        "to",
        "Longbourn",
        ".",
    ]
    for word, pieces, tag, p, runner, q in rows:
        assert "".join(x.removeprefix("##") for x in pieces.split()) == word.lower()  # 's: ' and s
        assert tag != runner and 0 < q <= p <= 1
    # O words are not highlighted; the others carry their entity type
    tagged = [label for text, label in words["value"] if text.strip()]
    assert tagged == [None if r[2] == "O" else r[2][2:] for r in rows]
    assert "9 words" in status and "entities" in status and "⚠️" not in status
    assert "click a word" in detail
    # empty text, and a model without a tagging head: messages, outputs cleared
    *cleared, status = tab.tag(name, "  ")
    assert cleared == [None, None, None] and "the text is empty" in status
    *cleared, status = tab.tag(store.display(root / "tiny-pretrained"), TEXT)
    assert cleared == [None, None, None] and "no token-classification head" in status and "finetune-tag" in status
    # a POS tagger's words are coloured by their tags, with the fixed UPOS colours
    from dashboard.help import UPOS_COLORS

    pos = store.display(write_tiny_tagger(root / "tiny-pos", ["NOUN", "PUNCT", "VERB"]))
    words, table, _, status = tab.tag(pos, "dogs bark .")
    assert [label for text, label in words["value"] if text.strip()] == [r[2] for r in table["data"]]
    assert words["color_map"] == {t: UPOS_COLORS[t] for t in ("NOUN", "PUNCT", "VERB")}
    assert "different tags" in status


def test_clicking_a_word_shows_its_probabilities(small_dash):
    import gradio as gr

    dash, root = small_dash
    tab = dash.tab("tag")
    words, table, _, _ = tab.tag(dash.store.display(write_tiny_tagger(root / "tiny-ner")), TEXT)
    chips = [{"token": t, "class_or_confidence": c} for t, c in words["value"]]
    index = next(i for i, c in enumerate(chips) if c["token"] == "Longbourn")
    shown = tab.word_detail(chips, table["data"], gr.SelectData(None, {"index": index, "value": "Longbourn"}))
    row = next(r for r in table["data"] if r[0] == "Longbourn")
    assert shown.startswith("“Longbourn”: " + row[2]) and "runner-up " + row[4] in shown
    space = next(i for i, c in enumerate(chips) if not c["token"].strip())
    assert tab.word_detail(chips, table["data"], gr.SelectData(None, {"index": space, "value": " "})) == gr.update()


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


def test_the_tag_api(client, app_models_root):
    """/tag on the session's page: a tagger in the models root (written now: the page may have been
    built before it; a model is named by its folder), the words with their tags, the table, the
    status; and a message for a model without the head."""
    from dashboard.help import ENTITY_COLORS

    ner = str(write_tiny_tagger(app_models_root / "tiny-ner"))
    words, table, _, status = client.predict(ner, TEXT, api_name="/tag")
    # the words come with the colours of the model's tags (the legend)
    assert "".join(piece["token"] for piece in words["value"]) == TEXT, words
    assert words["color_map"] == {"PER": ENTITY_COLORS["PER"]}
    assert [r[0] for r in table["data"]][-2:] == ["Longbourn", "."] and "9 words" in status
    *_, status = client.predict(str(app_models_root / "tiny-sst2"), TEXT, api_name="/tag")
    assert "no token-classification head" in status
    *_, status = client.predict(ner, "", api_name="/tag")
    assert "empty" in status
