"""The worksheet answered from the page (docs/teaching/worksheet.md): each question names a tab and
the panels and buttons of it to use; the test reads that tab as the built page holds it (its help,
labels and folded panels) and the results of the calls the question asks for (the tab's own
handlers, on the bundled models, offline), and checks that the answer key in the lesson plan says
what the page shows. A question the page cannot answer, or a key the page contradicts, fails."""

import html
import re

import gradio as gr
import pytest

from tests.conftest import BUNDLED, ROOT, sent_summary

SHEET = re.sub(r"\s+", " ", (ROOT / "docs" / "teaching" / "worksheet.md").read_text(encoding="utf-8"))
PLAN = (ROOT / "docs" / "teaching" / "lesson-plan.md").read_text(encoding="utf-8")
KEY = {
    int(n): re.sub(r"\s+", " ", body)
    for n, body in re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", PLAN.split("## Answer key")[1], flags=re.M | re.S)
}
QUESTIONS = {int(n): body for n, body in re.findall(r"\*\*(\d+)\. (.*?)(?=\*\*\d+\. |\*\*At home|\Z)", SHEET)}
CLOSE = 0.01  # a probability the key states to two decimals may differ by this much (rounding, bf16)
TAG = re.compile(r"<[^>]+>")


def words(text) -> str:
    """Page HTML or Markdown as the words a student reads: tags, emphasis and spacing dropped."""
    return re.sub(r"\s+", " ", html.unescape(TAG.sub(" ", str(text))).replace("**", "").replace("*", "")).strip()


def shown(*outputs) -> str:
    """What a handler's outputs put on the page, as words: status lines, figures (their summary
    sentence, which the page gives screen readers and the numbers table), tables, labels, chips."""
    out = []
    for o in outputs:
        if hasattr(o, "plot"):  # a figure, as gr.Plot is given it
            out.append(sent_summary(o))
        elif isinstance(o, dict) and "data" in o:  # a Dataframe
            out += [" ".join(map(str, o.get("headers", [])))] + [" ".join(map(str, row)) for row in o["data"]]
        elif isinstance(o, dict) and all(isinstance(v, float) for v in o.values()):  # a Label
            out += [f"{label} {p:.0%}" for label, p in o.items()]
        elif isinstance(o, list):  # HighlightedText chips
            out.append(" ".join(str(chip[0]) for chip in o if chip[0].strip()))
        elif isinstance(o, str):
            out.append(o)
    return words(" ".join(out))


def tab_text(dash, label: str) -> str:
    """Everything a tab holds as text in the built page: help, labels, buttons, folded panels'
    titles and first views, examples."""

    def walk(block):
        yield block
        for child in getattr(block, "children", None) or []:
            yield from walk(child)

    tab = next((b for b in walk(dash.demo) if isinstance(b, gr.Tab) and b.label == label), None)
    assert tab is not None, f"the page has no tab {label!r}"
    out = []
    for b in walk(tab):
        if isinstance(b, gr.Button):
            out.append(str(b.value))
        elif isinstance(b, (gr.Markdown, gr.HTML)):
            out.append(str(b.value or ""))
        elif isinstance(b, gr.Dataset):
            out += [" ".join(map(str, sample)) for sample in b.raw_samples]
        label_text = getattr(b, "label", None)
        out.append(str(label_text or ""))
    return words(" ".join(out))


def key_says(n: int, pattern: str) -> re.Match:
    found = re.search(pattern, KEY[n])
    assert found, f"answer {n} of the lesson plan's key no longer says {pattern!r}: update this test with it"
    return found


def names(n: int, *parts: str) -> None:
    """Question n names each of `parts` (a tab, a panel, a button)."""
    for part in parts:
        assert part in QUESTIONS[n], f"worksheet question {n} no longer names {part!r}"


def test_the_sheet_has_ten_questions_each_naming_a_tab_of_the_page(dash):
    tabs = ["Masked LM", "Next Sentence", "Attention", "Question Answering", "Classify", "Tag words", "Training"]
    assert sorted(QUESTIONS) == list(range(1, 11)) and sorted(KEY) == list(range(1, 11)), (QUESTIONS, KEY)
    for n, body in QUESTIONS.items():
        named = next((t for t in [*tabs, "Model"] if body.startswith(t)), None)
        assert named, f"question {n} names no tab: {body[:40]!r}"
        assert tab_text(dash, named)


@pytest.fixture(scope="module")
def mlm(dash):
    return dash.tab("mlm"), tab_text(dash, "Masked LM")


def top_guess(page: str) -> tuple[str, float]:
    found = re.search(r"Top guess: (\S+) ([\d.]+)%", page)
    assert found, page
    return found[1], float(found[2]) / 100


def test_1_the_top_guesses_and_the_words_on_both_sides(mlm):
    tab, page = mlm
    names(
        1,
        "Masked LM",
        "Why?",
        "he opened the [MASK] and walked into the garden .",
        "she opened the [MASK] and read it .",
    )
    assert "Why?" in page
    key = key_says(1, r'"(\w+)", about ([\d.]+); with "read it": "(\w+)" again \(about ([\d.]+)\)\. It uses both sides')
    for sentence, word, p in (
        ("he opened the [MASK] and walked into the garden .", key[1], key[2]),
        ("she opened the [MASK] and read it .", key[3], key[4]),
    ):
        best, prob = top_guess(shown(*tab.fill_mask(BUNDLED, sentence, 5, 1.0, "light")))
        assert best == word and abs(prob - float(p)) <= CLOSE, (sentence, best, prob)
        why = shown(tab.why(BUNDLED, sentence, "integrated gradients", "light")[-1])
        sides = re.findall(r"“\S+” \(\+[\d.]+, (before|after)", why.split(" rests most on ")[1])
        assert len(sides) == 3 and set(sides) == {"before", "after"}, why  # both sides help


def test_2_the_share_chosen_and_why_some_stay_unchanged(mlm):
    tab, page = mlm
    names(2, "Corrupt this sentence", "three seeds")
    assert "Corrupt this sentence" in page
    key_says(2, r"15% of the tokens \(rounded, at least one\); of those, 80% \[MASK\], 10% random, 10% unchanged")
    assert "chooses 15% of a text's tokens at random (rounded, at least one" in page
    assert "80% become [MASK], 10% a random token and 10% stay unchanged" in page
    key_says(2, r"Fine-tuning text has no \[MASK\], so the model must also be right about tokens it can see")
    assert "the [MASK] token does not appear during fine-tuning" in page and "has no [MASK]" in page
    assert "right about the words it can see" in page
    text = "he opened the [MASK] and walked into the garden ."
    for seed in (0, 1, 2):
        status = shown(tab.corrupt(BUNDLED, text, seed)[-1])
        chosen, n = map(int, re.search(r"(\d+) of (\d+) tokens chosen", status).groups())
        assert chosen == max(1, round(0.15 * n)) and f"(15% of {n}, rounded" in status, status
        assert "became [MASK] 80%" in status, status  # the tally of a thousand draws


def test_3_one_mask_holds_one_piece(dash, mlm):
    tab, page = mlm
    names(3, "the capital of france is [MASK] .", "Model tab", "paris")
    key = key_says(3, r'"(\w+)" \(about ([\d.]+)\)\. "paris" is not in the vocabulary: `([^`]+)`, two pieces, and one')
    best, prob = top_guess(shown(*tab.fill_mask(BUNDLED, "the capital of france is [MASK] .", 5, 1.0, "light")))
    assert best == key[1] and abs(prob - float(key[2])) <= CLOSE, (best, prob)
    pieces = shown(dash.tab("model").tokenize(BUNDLED, "paris")[0]).split()
    assert pieces == ["[CLS]", *key[3].split(), "[SEP]"] and len(key[3].split()) == 2, pieces
    assert "One [MASK] hides exactly one WordPiece token" in page and "holds one piece" in KEY[3]


def test_4_the_next_sentence_scores_and_what_was_learned(dash):
    from dashboard.help import NSP_EXAMPLES

    names(4, "Next Sentence", "mr . collins proposed to elizabeth .", "jane was ill at netherfield for several days .")
    key = key_says(4, r"About ([\d.]+) for the first example; about ([\d.]+) for the Collins/Jane pair")
    collins = ("mr . collins proposed to elizabeth .", "jane was ill at netherfield for several days .")
    for pair, p in ((NSP_EXAMPLES[0], key[1]), (collins, key[2])):
        status = shown(*dash.tab("nsp").next_sentence(BUNDLED, *pair))
        yes = int(re.search(r"\((\d+)% yes\)", status)[1]) / 100
        assert abs(yes - float(p)) <= CLOSE + 0.005, (pair, status)  # the page rounds to a percent
    key_says(4, r'the model learned "same book\?", because NotNext sentences came from other documents')
    page = tab_text(dash, "Next Sentence")
    assert "NotNext sentence comes from another book" in page and "same book?" in page, page


def test_5_the_models_size_and_its_pieces(dash):
    names(5, "Model", "bert-lab-classroom", "The playing children were unbelievably happy.")
    key = key_says(5, r"([\d.]+)M encoder parameters.*?Split: \*unbelievably\* \(`([^`]+)`\)")
    info = shown(*dash.tab("model").model_info(BUNDLED))
    encoder = int(re.search(r"([\d,]+) in the encoder", info)[1].replace(",", ""))
    assert f"{encoder / 1e6:.1f}" == key[1], info
    pieces = shown(dash.tab("model").tokenize(BUNDLED, "The playing children were unbelievably happy.")[0])
    assert key[2] in pieces and " playing children " in pieces, pieces


def test_6_the_three_embeddings(dash):
    names(6, "Model", "Input embeddings")
    key_says(6, r"Token, segment \(sentence A or B\) and position embeddings, summed")
    page = tab_text(dash, "Model")
    assert "Input embeddings" in page and "WordPiece tokens, plus a segment and a position embedding, summed" in page


def test_7_the_heads_that_look_back_and_forward(dash):
    from dashboard.help import MLM_EXAMPLES, NSP_EXAMPLES

    names(7, "Attention", "head statistics", "silence each head")
    key = key_says(
        7,
        r"layer (\d) head (\d) attends mostly to the previous token \(about ([\d.]+)\), layer (\d) head (\d) to the "
        r"next \(about ([\d.]+)\)\. Silencing layer (\d) head (\d) raises the loss the most",
    )
    page = tab_text(dash, "Attention").lower()
    assert "head statistics" in page and "silence each head" in page
    stats = shown(*dash.tab("attention").head_stats(BUNDLED, *NSP_EXAMPLES[0]))
    for which, (layer, head, p) in (("previous", key.groups()[0:3]), ("next", key.groups()[3:6])):
        said = re.search(rf"{which} token highest at layer (\d) head (\d) \(([\d.]+)\)", stats)
        assert said and said.groups()[:2] == (layer, head) and abs(float(said[3]) - float(p)) <= CLOSE, stats

    def progress(*args, **kwargs):  # the handler reports progress to the page; nothing to show here
        return None

    silenced = shown(*dash.tab("attention").ablate(BUNDLED, MLM_EXAMPLES[1][0], progress=progress))
    assert f"Silencing layer {key[7]} head {key[8]} hurts most" in silenced, silenced


def test_8_the_first_words_learned_are_the_most_frequent(dash):
    names(8, "Training", "Predict at every checkpoint", "door", "77 and 308")
    key = key_says(
        8, r'"door" first leads at step ([\d,]+); at steps (\d+) and (\d+) the guesses are `(\S)` and `(\w+)`'
    )
    page = tab_text(dash, "Training")
    assert "Predict at every checkpoint" in page
    table, _ = dash.tab("training").watch_learning(
        BUNDLED, "he opened the [MASK] and walked into the garden .", 3, None
    )
    best = {row[0]: re.match(r"“(.+?)” ", row[1])[1] for row in table["data"]}
    door = int(key[1].replace(",", ""))
    assert best[door] == "door" and all(w != "door" for s, w in best.items() if s < door), best
    assert (best[int(key[2])], best[int(key[3])]) == (key[4], key[5]), best
    key_says(8, r"the most frequent tokens \(the unigram plateau\)")
    assert "first checkpoints put the most frequent tokens" in page and "unigram plateau" in page, page


def test_8_the_early_guesses_are_the_novels_commonest_tokens(shared_data):
    """The page's reading of the early checkpoints holds: the two guesses the key names are among
    the five commonest tokens of the novels the model read (a sample of each)."""
    import lab  # why here: loading the tokenizer is for this test only

    key = key_says(8, r"at steps (\d+) and (\d+) the guesses are `(\S)` and `(\w+)`")
    _, tok = lab.load(ROOT / BUNDLED)
    counts: dict[str, int] = {}
    for novel in sorted((shared_data / "novels").glob("*.txt")):
        for piece in tok.tokenize(novel.read_text(encoding="utf-8", errors="replace")[:100_000]):
            counts[piece] = counts.get(piece, 0) + 1
    commonest = sorted(counts, key=counts.get, reverse=True)[:5]
    assert key[3] in commonest and key[4] in commonest, commonest


MINILM, TINY = "models/minilm-sst2", "models/bert-lab-sst2"


def test_9_how_each_classifier_reads_not(dash):
    names(9, "Classify", "not bad at all .", "this is not a good movie .", "Why?", "minilm-sst2", "bert-lab-sst2")
    key_says(9, r"`minilm-sst2`: `not bad at all \.` positive \(right\)")
    key_says(9, r"`bert-lab-sst2`: `not bad at all \.` negative \(wrong\), `this is not a good movie \.` negative")
    tab = dash.tab("classify")
    for model, sentence, label in (
        (MINILM, "not bad at all .", "positive"),
        (TINY, "not bad at all .", "negative"),
        (TINY, "this is not a good movie .", "negative"),
    ):
        assert f"The model says: {label}" in shown(*tab.classify(model, sentence)), (model, sentence)
    key_says(9, r"“bad” pushes most with the tiny model.*?“not” with `minilm-sst2`")
    for model, word in ((TINY, "bad"), (MINILM, "not")):
        why = shown(tab.why(model, "not bad at all .")[-1])
        assert f"rests most on “{word}”" in why, (model, why)
    page = tab_text(dash, "Classify")
    assert "“bad” pushes most" in page and "“not” pushes most" in page and "Why?" in page, page


def test_10_the_two_readers_and_a_question_the_text_does_not_answer(dash):
    from dashboard.help import QA_EXAMPLES

    names(10, "Question Answering", "Who built the Nautilus?", "minilm-squad", "bert-lab-squad")
    names(10, "What is the capital of France?")
    tab, nautilus = dash.tab("qa"), QA_EXAMPLES[1]
    assert nautilus[0] == "Who built the Nautilus?"  # "the tab's second example"
    key = key_says(10, r'`minilm-squad`: "([^"]+)"; `bert-lab-squad`: a span from "([^"]+)" to the end')
    assert f"answer: “{key[1]}”" in shown(tab.answer("models/minilm-squad", *nautilus)[-1])
    tiny = re.search(r"answer: “(.+?)”", shown(tab.answer("models/bert-lab-squad", *nautilus)[-1]))[1]
    assert tiny.startswith(key[2]) and nautilus[1].rstrip(".").endswith(tiny), tiny
    capital = key_says(10, r'The capital of France: "(\w+)"')[1]
    status = shown(tab.answer("models/minilm-squad", "What is the capital of France?", QA_EXAMPLES[0][1])[-1])
    assert f"answer: “{capital}”" in status, status
    key_says(10, r"the difference is what pre-training gave them.*?always answers with a span")
    page = tab_text(dash, "Question Answering")
    assert "The difference in their answers is what pre-training gave them" in page, page
    assert "they always answer with a span" in page, page
