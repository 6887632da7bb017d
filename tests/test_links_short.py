"""Links a class can type (dashboard.links, dashboard.qr): a link holds only its tab's inputs that
differ from the tab's defaults, under short names, so the lesson plan's and the teaching prompts'
inputs give links of at most 120 characters on a classroom address; opening one restores exactly
those inputs (opening_js, run by node); the QR codes of a link, of the page's address and of the
start-up banner read back as what they encode; and, in a real browser at 1024 x 768 and
1440 x 900, the link row on two tabs (marked slow).

The lengths, printed:
    .venv/bin/python -m pytest -q -s tests/test_links_short.py -k at_most_120
"""

import io
from argparse import Namespace
from urllib.parse import parse_qsl, urlsplit

import pytest

from dashboard.help import QA_CONTEXT_2
from tests.conftest import ROOT, chromium_browser
from tests.test_app import opening_in_the_browser
from tests.test_browser import OUTSIDE, offline_page, open_tab, panel

pytestmark = pytest.mark.timeout(300)

# the longest IPv4 address a classroom network gives, on the default port: the page's address in a link
CLASSROOM = "http://192.168.100.200:7860/"
LONGEST = 120

# Every input the lesson plan (docs/teaching/lesson-plan.md) has the class type or pick: (tab id,
# {input: value}); a model by the end of its name (its menu's value is a path)
LESSON_PLAN = [
    ("mlm", {"mlm_text": "he opened the [MASK] and walked into the garden ."}),
    ("mlm", {"mlm_text": "she opened the [MASK] and read it ."}),
    ("mlm", {"mlm_text": "the capital of france is [MASK] ."}),
    (
        "nsp",
        {"nsp_a": "mr . collins proposed to elizabeth .", "nsp_b": "jane was ill at netherfield for several days ."},
    ),
    ("classify", {"cls_a": "a charming and often moving film ."}),
    ("classify", {"cls_a": "boring , predictable and far too long ."}),
    ("classify", {"cls_a": "not bad at all ."}),
    ("classify", {"cls_model": "bert-lab-sst2", "cls_a": "not bad at all ."}),
    ("classify", {"cls_model": "bert-lab-sst2", "cls_a": "this is not a good movie ."}),
    ("classify", {"cls_a": "i have never been so bored in my life ."}),
    ("qa", {"qa_q": "Who built the Nautilus?", "qa_c": "Nautilus"}),
    ("qa", {"qa_model": "bert-lab-squad", "qa_q": "Who built the Nautilus?", "qa_c": "Nautilus"}),
    ("qa", {"qa_q": "What is the capital of France?", "qa_c": "Longbourn"}),
    ("attention", {"att_layer": 1, "att_head": 1}),
]


def prompt_cases(prompts) -> list:
    """The teaching prompts as (tab id, {input: value}), as the dashboard's tabs take them."""
    cases = []
    for p in prompts.CANDIDATES:
        task, _, model = p.task.partition(":")
        if task == "fill_mask":
            cases.append(("mlm", {"mlm_text": p.inputs[0]}))
        elif task == "next_sentence":
            cases.append(("nsp", {"nsp_a": p.inputs[0], "nsp_b": p.inputs[1]}))
        elif task == "classify":
            cases.append(("classify", {"cls_model": model or "bert-lab-sst2", "cls_a": p.inputs[0]}))
        elif task == "answer":
            cases.append(("qa", {"qa_model": model, "qa_q": p.inputs[0], "qa_c": p.inputs[1]}))
    return cases


def page_values(links, prompts, changes: dict) -> dict:
    """Every shared input's value on a page where `changes` were made: a model named by the end
    of its menu's value, a QA context by its name in the teaching prompts."""
    values = {k: c.value for k, c in links.inputs.items()}
    for key, value in changes.items():
        if key.endswith("_model"):
            choices = [c[1] if isinstance(c, tuple) else c for c in links.inputs[key].choices]
            value = next(c for c in choices if str(c).endswith(value))
        elif key == "qa_c":
            value = prompts.CONTEXTS[value]
        values[key] = value
    return values


@pytest.fixture(scope="module")
def prompts():
    """scripts/teaching_prompts.py (its CANDIDATES and CONTEXTS)."""
    from scripts import teaching_prompts

    return teaching_prompts


def test_a_link_holds_its_tab_and_only_the_inputs_that_differ(dash):
    links = dash.ctx.links
    values = {k: c.value for k, c in links.inputs.items()}
    assert links.share_link(CLASSROOM, "Masked LM", *values.values()) == (CLASSROOM + "?mlm", "")
    assert links.share_link(CLASSROOM, "Training", *values.values())[0] == CLASSROOM + "?training"
    # another tab's changed inputs stay out; a slider is a whole number; the browser's address loses its query
    changed = values | {"nsp_a": "the sea .", "att_layer": 1.0, "att_head": 2, "mlm_text": "a [MASK] & <b> ."}
    link, qr = links.share_link(CLASSROOM + "?tab=nsp#x", "Attention", *changed.values())
    assert (link, qr) == (CLASSROOM + "?attention&layer=1&head=2", "")
    link, _ = links.share_link(CLASSROOM, "Masked LM", *changed.values())
    assert link == CLASSROOM + "?mlm&text=a+%5BMASK%5D+%26+%3Cb%3E+."
    # not an http(s) address: a relative link; a text too long for a link: a line saying so
    assert links.share_link("javascript:alert(1)", "nsp", *changed.values())[0] == "?nsp&a=the+sea+."
    long = values | {"mlm_text": "word " * 5000}
    message, _ = links.share_link(CLASSROOM, "Masked LM", *long.values())
    assert message.startswith("⚠️") and "25,000 characters" in message


def test_the_lesson_plans_links_are_at_most_120_characters(dash, prompts):
    """The lesson plan's inputs and every teaching prompt, on the longest classroom address:
    each link at most 120 characters, holding its tab and only that tab's inputs."""
    links = dash.ctx.links
    plan = (ROOT / "docs" / "teaching" / "lesson-plan.md").read_text()
    for _, changes in LESSON_PLAN:  # the list says what the lesson plan says
        assert all(str(v) in plan for k, v in changes.items() if k in ("mlm_text", "nsp_a", "cls_a", "qa_q"))
    owned = {t: {k.split("_", 1)[1] for k in links.owned(t)} for t in links.tabs}
    lengths = []
    for tab, changes in LESSON_PLAN + prompt_cases(prompts):
        link, _ = links.share_link(CLASSROOM, tab, *page_values(links, prompts, changes).values())
        query = parse_qsl(urlsplit(link).query, keep_blank_values=True)
        assert query[0] == (tab, "") and {k for k, _ in query[1:]} <= owned[tab] | {"example"}, link
        lengths.append((len(link), link))
    for n, link in sorted(lengths):
        print(n, link)
    assert max(lengths)[0] <= LONGEST, max(lengths)
    print(f"{len(lengths)} links on {CLASSROOM}: {min(lengths)[0]} to {max(lengths)[0]} characters")


def test_a_link_opens_with_exactly_its_inputs(dash, prompts):
    """Round trip: the link's query, read by the page's opening_js (node), restores the tab and
    exactly the inputs of the page it was made on (the other tabs at their defaults); an example
    named by its number restores its values; the long links of before still open."""
    links = dash.ctx.links
    page = [c.value for c in links.inputs.values()]  # a new page's own values
    odd = {"mlm_text": "l'été & co = 100% [MASK] + <b>ü</b> ? #1", "mlm_model": links.inputs["mlm_model"].value}
    cases = LESSON_PLAN + prompt_cases(prompts) + [("mlm", odd), ("qa", {"qa_q": "", "qa_c": "Nautilus"})]
    named = 0
    for tab, changes in cases:
        values = page_values(links, prompts, changes)
        link, _ = links.share_link(CLASSROOM, tab, *values.values())
        named += "example=" in link
        theme, opened, *restored, opening = opening_in_the_browser(links, "?" + urlsplit(link).query, page)
        assert opened == tab and dict(zip(links.inputs, restored)) == values, link
        assert bool(opening) == (values != dict(zip(links.inputs, page)))  # recomputed only where it differs
    assert named >= 2  # the QA contexts are named by their example's number
    # a long link of before (every tab's inputs, their full names) opens as it did
    old = "?tab=qa&mlm_text=the+%5BMASK%5D+sat+.&att_layer=1&qa_q=Who%3F&qa_c=Nemo+did."
    theme, opened, *restored, _ = opening_in_the_browser(links, old, page)
    restored = dict(zip(links.inputs, restored))
    assert opened == "qa" and restored["mlm_text"] == "the [MASK] sat ." and restored["att_layer"] == 1
    assert restored["qa_c"] == "Nemo did." and restored["nsp_a"] == links.inputs["nsp_a"].value
    # a short name applies to the link's own tab only; an unknown example or a bad value is ignored
    _, opened, *restored, _ = opening_in_the_browser(links, "?nsp&text=x&example=99&layer=5", page)
    assert opened == "nsp" and restored == page


def decode_png(png: bytes) -> list[str]:
    import zxingcpp  # the test extra (pyproject [dev]): reads QR codes back
    from PIL import Image

    return [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]


def test_a_qr_code_reads_back_as_its_link(dash):
    import segno

    from dashboard.qr import link_qr, room_qr, svg

    link = dash.ctx.links.share_link(CLASSROOM, "Next Sentence", *collins_pair(dash))[0]
    png = io.BytesIO()
    segno.make(link, error="m", micro=False).save(png, kind="png", scale=4)  # the code svg() draws
    assert decode_png(png.getvalue()) == [link]
    assert svg(link).startswith("<svg") and svg(link) in link_qr(link)
    # what is shown beside a QR is escaped; what is not a link gets a line, never a QR
    shown = link_qr('http://h/?a="<b>&c')
    assert "<b>" not in shown and "&quot;&lt;b&gt;&amp;c" in shown
    assert "<svg" not in link_qr("⚠️ A text of 25,000 characters ...") and "Make a link" in link_qr("")
    assert "too long for a QR code" in link_qr("http://h/?" + "a" * 2000)
    assert room_qr("javascript:alert(1)") == "" and room_qr(None) == "" and room_qr("http://h/" + "語" * 1900) == ""
    assert "&lt;" in room_qr("http://h/<p>") and "<svg" in room_qr(CLASSROOM)


def collins_pair(dash) -> list:
    """The Collins / Jane pair of the lesson plan on a page otherwise at its defaults."""
    values = {k: c.value for k, c in dash.ctx.links.inputs.items()}
    return list((values | LESSON_PLAN[3][1]).values())


def test_the_start_up_banner_shows_the_address_as_a_qr_code(app, monkeypatch):
    """The banner's QR (unicode half blocks, light modules drawn) reads back as the first address."""
    import numpy as np

    monkeypatch.setattr(app, "addresses", lambda host, port: ["http://10.1.2.3:7860/", "http://10.9.9.9:7860/"])
    text = app.banner(Namespace(host="0.0.0.0", port=7860, share=False), downloads=False, local=False)
    rows = [line[4:] for line in text.splitlines() if line.startswith("    ") and set(line[4:]) <= set(" ▀▄█")]
    halves = {" ": (0, 0), "▀": (1, 0), "▄": (0, 1), "█": (1, 1)}  # (top, bottom): 1 where light
    light = np.array([[halves[c][i] for c in row] for row in rows for i in (0, 1)], dtype=np.uint8)
    image = np.kron(light * 255, np.ones((8, 8), dtype=np.uint8))
    png = io.BytesIO()
    from PIL import Image

    Image.fromarray(image).save(png, format="PNG")
    assert "or scan http://10.1.2.3:7860/" in text and decode_png(png.getvalue()) == ["http://10.1.2.3:7860/"]
    assert "scan" not in app.banner(Namespace(host="127.0.0.1", port=7860, share=False), False, True)


# ----------------------------------------------------------------------------------------------
# In a real browser: one page, two sizes, two tabs each
# ----------------------------------------------------------------------------------------------
SIZES = [{"width": 1024, "height": 768}, {"width": 1440, "height": 900}]
BOX = "#share-link input"


def make_link(page, tab: str, button="Link to this tab and its inputs") -> str:
    """Click the button; the link of this tab, once in the box."""
    page.get_by_role("button", name=button, exact=True).click()
    page.wait_for_function(f"document.querySelector('{BOX}').value.includes('/?{tab}')")
    return page.locator(BOX).input_value()


def check_link(page, link: str, tab: str, keys: set) -> None:
    """At most 120 characters, this tab only, on one line; its QR large and readable; closed by Escape."""
    query = parse_qsl(urlsplit(link).query, keep_blank_values=True)
    assert len(link) <= LONGEST and query[0] == (tab, "") and {k for k, _ in query[1:]} == keys, link
    box = page.locator(BOX).bounding_box()
    assert box["height"] < 50 and page.locator("#share-link textarea").count() == 0  # one line
    assert make_link(page, tab, "QR code") == link
    qr = page.locator(".bl-qr-overlay svg")
    qr.wait_for()
    assert qr.bounding_box()["width"] >= 300
    # the dialog has taken the focus (its Close button) and been drawn since
    page.wait_for_function("document.activeElement.classList.contains('bl-qr-close')")
    page.wait_for_function("!document.querySelector('.wrap.default:not(.hide), .progress-text, .eta-bar')")
    page.wait_for_timeout(300)  # Gradio's status overlay on the outputs fades out
    shot = page.screenshot()
    assert decode_png(shot) == [link]
    page.keyboard.press("Escape")
    page.locator(".bl-qr-overlay").wait_for(state="detached")


@pytest.mark.slow
def test_links_in_the_browser(app_url, dash):
    """On one page at 1024 x 768, then 1440 x 900: a link on Next Sentence (the lesson plan's pair)
    and on Question Answering (an example, another question): each short, of its tab only, on one
    line, its QR shown and readable; another tab clears it; Copy copies it; in presenter mode the
    page's address shows as a QR; and a link of each tab, opened anew, restores its inputs."""
    with chromium_browser() as browser:
        page = offline_page(browser, app_url, SIZES[0])
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        opened = []
        for n, size in enumerate(SIZES):
            page.set_viewport_size(size)
            open_tab(page, "Next Sentence")
            a, b = (f"mr . collins proposed to elizabeth {n} .", "jane was ill at netherfield for several days .")
            panel(page).locator("textarea").nth(0).fill(a)
            panel(page).locator("textarea").nth(1).fill(b)
            link = make_link(page, "nsp")
            check_link(page, link, "nsp", {"a", "b"})
            opened.append((link, "Next Sentence", [a, b]))
            open_tab(page, "Question Answering")
            assert page.locator(BOX).input_value() == ""  # the other tab's link is gone
            panel(page).get_by_text("Who built the Nautilus?").first.click()
            # the example's values arrive from the server: typed before them, the question is replaced
            page.wait_for_function(
                "(t) => [...document.querySelectorAll('textarea')].some(a => a.value === t)", arg=QA_CONTEXT_2
            )
            page.wait_for_function(
                "document.querySelector('#qa-question textarea').value === 'Who built the Nautilus?'"
            )
            page.locator("#qa-question textarea").fill(f"Who drove it {n}?")
            link = make_link(page, "qa")
            check_link(page, link, "qa", {"example", "q"})
            opened.append((link, "Question Answering", [f"Who drove it {n}?", QA_CONTEXT_2]))
        page.locator("#share-copy").click()
        assert page.evaluate("navigator.clipboard.readText()") == link
        assert not page.locator("#room-qr").is_visible()
        page.evaluate("document.body.classList.add('bl-presenter')")
        page.locator("#room-qr svg").wait_for()
        assert decode_png(page.locator("#room-qr").screenshot()) == [app_url]
        for link, tab, texts in (opened[0], opened[-1]):  # the same page, opened anew: its files are cached
            page.goto(link)
            page.wait_for_function(
                "(texts) => texts.every(t => [...document.querySelectorAll('textarea')].some(a => a.value === t))",
                arg=texts,
            )
            assert page.get_by_role("tab", name=tab).get_attribute("aria-selected") == "true"
        page.close()
    assert OUTSIDE == [], OUTSIDE


def test_a_qr_of_an_address_only_this_computer_opens_says_so(dash):
    """Started on 127.0.0.1, a link's QR, the page's own QR and the class's join card point at an
    address no phone can open: each says so, and how to start the app for a class (issue 44, 8)."""
    from dashboard.qr import link_qr, room_qr, this_computer_only

    for address in ("http://127.0.0.1:7860/", "http://localhost:7860/?nsp", "http://[::1]:7860/"):
        assert this_computer_only(address), address
        for html_text in (link_qr(address), room_qr(address), dash.rounds.join_card(address)):
            assert "This computer only" in html_text and "--host 0.0.0.0" in html_text, address
    for address in ("http://192.168.1.20:7860/", "https://bert-lab.hf.space/?qa"):
        assert not this_computer_only(address), address
        for html_text in (link_qr(address), room_qr(address), dash.rounds.join_card(address)):
            assert "This computer only" not in html_text, address
