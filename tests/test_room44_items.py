"""Issue 44, the dashboard's smaller items, on the bundled models with the tabs' handlers called
directly (no page built): the 80/10/10 view corrupts the sentence without its [MASK]s and shows the
tally of many draws and what several seeds choose, in the visible line; the masked-LM bars on a
fixed 0-100% axis; the Why? subtitle wrapped; the checkpoint table's tokens quoted; a tag less
probable than its runner-up says why in the line that shows it."""

import re

import pytest

from dashboard.help import MLM_EXAMPLES
from tests.conftest import BUNDLED, figure_spec


@pytest.fixture(scope="module")
def dash():
    from dashboard import Dashboard, Settings

    return Dashboard(Settings())  # the tabs' handlers, the page not built


def visible(status: str) -> str:
    """The status line without its folded details."""
    return re.sub(r"<details.*?</details>", "", status, flags=re.S)


def test_corruption_uses_the_sentence_without_its_masks_and_shows_many_draws_and_seeds(dash):
    text = MLM_EXAMPLES[0][0]  # "he opened the [MASK] and walked ..."
    assert "[MASK]" in text
    chips, status = dash.tab("mlm").corrupt(BUNDLED, text, 0)
    unchosen = [seen for seen, kind in chips if kind is None]
    assert "[MASK]" not in unchosen  # no [MASK] left in the sentence pre-training corrupts
    guess = dash.tab("mlm").fill_mask(BUNDLED, text)[0]
    top = next(t for t, kind in guess if kind)
    shown = visible(status)
    assert "top guess" in shown and top in shown  # it says what it corrupted
    # the tally of many draws, in the visible line, near the paper's rule
    shares = re.search(r"Over 1,000 draws.*?became \[MASK\] (\d+)%, random (\d+)%, kept (\d+)%", shown)
    assert shares, shown
    # what ten seeds choose, one row each: different tokens, and not all [MASK]
    rows = re.findall(r"<tr><td>(\d+)</td><td>(.*?)</td></tr>", shown)
    assert [int(s) for s, _ in rows] == list(range(10))
    picks = {re.findall(r"“(.*?)” →", cell)[0] for _, cell in rows}
    assert len(picks) > 2, rows
    assert any("random" in cell or "kept" in cell for _, cell in rows), rows


def test_masked_lm_bars_share_a_fixed_axis(dash):
    for text in ("he opened the [MASK] .", "it was a dark and stormy [MASK] ."):
        axis = figure_spec(dash.tab("mlm").fill_mask(BUNDLED, text).bars)["layout"]["xaxis"]
        assert axis["range"][0] == 0 and axis["range"][1] >= 1, axis  # 0 to 100%, whatever the guesses


def test_why_subtitle_wraps(dash):
    from lab.figures.plotly_figures import SUBTITLE_CHARS

    fig = dash.tab("mlm").why(BUNDLED, "he opened the [MASK] and walked into the garden .").figure
    title = figure_spec(fig)["layout"]["title"]["text"]
    subtitle = re.findall(r"<sup>(.*?)</sup>", title)
    assert len(subtitle) > 1 and all(len(line) <= SUBTITLE_CHARS for line in subtitle), title
    assert "completeness error" in "".join(subtitle)


def test_checkpoint_table_quotes_each_token(dash):
    table, _ = dash.tab("training").watch_learning(BUNDLED, "he said , and she [MASK] .", 3, progress=None)
    cells = [cell for row in table["data"] for cell in row[1:]]
    assert cells
    for cell in cells:  # “,” 8%, “the” 4%: punctuation reads as a token
        assert re.fullmatch(r"“[^”]+” \d+%(, “[^”]+” \d+%)*", cell), cell


def test_a_tag_less_probable_than_its_runner_up_says_why():
    from dashboard.tabs.tagging import TABLE_HEADERS, Tagging

    class Select:
        index = 0

    table = [["Darcy", "darcy", "B-PER", 0.14, "I-PER", 0.832]]
    assert len(table[0]) == len(TABLE_HEADERS)
    line = Tagging.word_detail([("Darcy", "PER")], table, Select())
    assert "runner-up I-PER" in line and "Viterbi" in line and "less probable" in line
    table = [["Darcy", "darcy", "B-PER", 0.832, "I-PER", 0.14]]
    assert "Viterbi" not in Tagging.word_detail([("Darcy", "PER")], table, Select())


def test_the_browser_edition_opens_answer_and_classify_on_minilm_and_its_question_is_answered():
    import lab
    from lab.web.export import first_view_order
    from lab.web.results import OPENINGS, run_view
    from tests.conftest import ROOT

    entries = [
        {"name": n, "views": v}
        for n, v in [
            ("minilm-sst2", ["classify"]),
            ("bert-lab-squad", ["answer"]),
            ("bert-lab-classroom", ["fill-mask", "next-sentence", "attention"]),
            ("bert-lab-sst2", ["classify"]),
            ("minilm-squad", ["answer"]),
            ("minilm-ner", ["tag"]),
        ]
    ]
    order = [e["name"] for e in sorted(entries, key=first_view_order)]
    assert order == [
        "bert-lab-classroom",
        "minilm-squad",
        "bert-lab-squad",
        "minilm-sst2",
        "bert-lab-sst2",
        "minilm-ner",
    ]
    model, tokenizer = lab.load(ROOT / "models" / "minilm-squad")
    best = run_view(model.float(), tokenizer, "answer", OPENINGS["answer"])["spans"][0]["text"]
    assert best == "Captain Nemo", best  # the opening question, answered sensibly by the model it opens on


def test_the_tag_line_says_why_a_tag_is_less_probable_than_its_runner_up(dash):
    from dashboard.help import TAG_EXAMPLES

    _, table, _, status = dash.tab("tag").tag("models/minilm-ner", TAG_EXAMPLES[1][0])  # "Mr. Darcy met ..."
    below = [row for row in table["data"] if row[5] > row[3]]
    assert below, table["data"]  # Darcy: B-PER below I-PER, which cannot follow "Mr." (O)
    assert f"{len(below)} word(s) tagged with a less probable tag than the runner-up" in visible(status)
    assert "Viterbi" in visible(status)
