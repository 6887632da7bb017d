"""benchmarks/web_browser.py's core on tiny inputs whose answers are known by hand: the agreement
measures (SQuAD spans, SST-2 labels, IOB2 tags), the timing summary and the targets; and, in a real
chromium (slow; skipped without it except under BERT_LAB_REQUIRE_BROWSER=1), its page harness on a
stub page: batched calls with a failing one, the timings, the first-view marks.
"""

from __future__ import annotations

import random

import pytest

from benchmarks import web_browser as wb
from lab.data.squad import Example
from tests.conftest import chromium_browser


def example(i: int, answer: str) -> Example:
    return Example(
        id=f"q{i}",
        title="t",
        context=f"some text with {answer} in it",
        question="what?",
        answers=[{"text": answer, "answer_start": 15}],
    )


def test_qa_agreement_counts_equal_spans_and_scores_both_sides():
    examples = [example(0, "Paris"), example(1, "1999"), example(2, "blue whale")]
    pytorch = ["Paris", "1999", "whale"]  # EM 2/3; F1: 1, 1, 2/3 ("whale" vs "blue whale")
    browser = ["Paris", "1998", {"error": "boom"}]  # a failed call counts as the empty answer
    r = wb.qa_agreement(examples, browser, pytorch)
    assert r["questions"] == 3 and r["errors"] == 1
    assert r["same_best_span"] == pytest.approx(1 / 3)
    assert r["pytorch"]["EM"] == pytest.approx(200 / 3)
    assert r["pytorch"]["F1"] == pytest.approx(100 * (1 + 1 + 2 / 3) / 3)
    assert r["browser"]["EM"] == pytest.approx(100 / 3) and r["browser"]["F1"] == pytest.approx(100 / 3)
    assert r["qa_em_diff"] == pytest.approx(100 / 3, abs=1e-5)
    assert r["qa_f1_diff"] == pytest.approx(100 * (2 + 2 / 3) / 3 - 100 / 3, abs=1e-5)


def test_classify_agreement_reads_the_pages_label_names():
    r = wb.classify_agreement([0, 1, 1], ["negative", "positive", "positive"], [0, 1, 0], ["negative", "positive"])
    assert r["browser"]["accuracy"] == pytest.approx(100)
    assert r["pytorch"]["accuracy"] == pytest.approx(200 / 3)
    assert r["same_label"] == pytest.approx(2 / 3)
    assert r["sst2_accuracy_diff"] == pytest.approx(100 / 3, abs=1e-5) and r["errors"] == 0


def test_tag_agreement_scores_entities_per_sentence():
    gold = [["B-PER", "I-PER", "O"], ["B-LOC"]]
    pytorch = ["B-PER", "I-PER", "O", "O"]  # flat, as web_quantization gives it: 1 of 2 entities
    browser = [["B-PER", "I-PER", "O"], ["B-LOC"]]
    r = wb.tag_agreement(gold, browser, pytorch)
    assert r["browser"]["entity F1"] == pytest.approx(100)
    assert r["pytorch"]["entity F1"] == pytest.approx(200 / 3)  # precision 1, recall 1/2
    assert r["same_tag"] == pytest.approx(3 / 4) and r["errors"] == 0
    failed = wb.tag_agreement(gold, [{"error": "x"}, ["B-LOC"]], pytorch)
    assert failed["errors"] == 1 and failed["browser"]["entity F1"] == pytest.approx(100 * 2 / 3)


def test_summary_median_and_p95():
    s = wb.summary([float(x) for x in range(100, 0, -1)])
    assert s == {"n": 100, "median_ms": 50.5, "p95_ms": pytest.approx(95.05), "max_ms": 100.0}
    assert wb.summary([7.0]) == {"n": 1, "median_ms": 7.0, "p95_ms": 7.0, "max_ms": 7.0}


def test_targets_bounds_inclusive_and_direction():
    values = {"fill_mask_median_ms": 50.0, "qa_median_ms": 500.1, "qa_same_span": 0.949, "first_view_drawn_s": 0.2}
    met = {t["key"]: t["met"] for t in wb.check_targets(values)}
    assert met == {
        "fill_mask_median_ms": True,
        "qa_median_ms": False,
        "qa_same_span": False,
        "first_view_drawn_s": True,
    }
    views = [{"model": "bert-lab-classroom", "view": "fill-mask", "median_ms": 12.0}]
    assert wb.speed_values(views, {"drawn_median_s": 1.5}) == {"first_view_drawn_s": 1.5, "fill_mask_median_ms": 12.0}
    assert all(line.count("|") == 5 for line in wb.targets_table(wb.check_targets(values)))


def test_mask_one_hides_exactly_one_word():
    rng = random.Random(0)
    for sentence in ("It is a truth universally acknowledged , that a single man .", "Oh ! no ."):
        masked = wb.mask_one(sentence, rng)
        assert masked.count("[MASK]") == 1 and len(masked.split()) == len(sentence.split())


STUB = """<!doctype html><html><body>
<section id="panel-fill-mask"></section><button id="fill-mask-run">run</button>
<script>
window.bertLab = {
  answer: async (q, c, o) => { if (q === "bad") throw new Error("no"); return {spans: [{text: c.slice(0, 4)}]}; },
  classify: async (t) => ({labels: [t.length % 2 ? "positive" : "negative"]}),
  tag: async (words) => ({words: words.map((w) => ({tag: w === "Paris" ? "B-LOC" : "O"}))}),
  fillMask: async () => new Promise((done) => setTimeout(() => done({}), 5)),
};
const panel = document.querySelector("#panel-fill-mask");
setTimeout(() => { panel.dataset.computed = "0"; }, 50);
document.querySelector("#fill-mask-run").onclick = () => setTimeout(() => { panel.dataset.computed = "1"; }, 100);
</script></body></html>"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_page_harness_in_chromium(tmp_path):
    (tmp_path / "index.html").write_text(STUB, encoding="utf-8")
    with chromium_browser() as browser, wb.served(tmp_path) as url:
        page = wb.open_page(browser, url)
        calls = [[f"q{i}", f"context {i}", {}] for i in range(wb.BATCH + 5)] + [["bad", "x", {}]]
        got = wb.page_calls(page, "answer", calls, "answer")
        assert got[:-1] == ["cont"] * (wb.BATCH + 5) and got[-1] == {"error": "no"}
        assert wb.page_calls(page, "classify", [["ab", None, {}], ["abc", None, {}]], "classify") == [
            "negative",
            "positive",
        ]
        assert wb.page_calls(page, "tag", [[["in", "Paris"], {}]], "tag") == [["O", "B-LOC"]]
        timed = wb.page_times(page, "fillMask", [["x [MASK]", {}]] * 3)
        assert len(timed["times"]) == 3 and all(4 <= t < 1000 for t in [timed["first"], *timed["times"]])
        page.context.close()
        first = wb.first_view(browser, url, loads=2)
    assert len(first["drawn_s"]) == 2 and all(0.04 <= s < 10 for s in first["drawn_s"])
    assert all(c >= d + 0.09 for c, d in zip(first["computed_s"], first["drawn_s"]))
