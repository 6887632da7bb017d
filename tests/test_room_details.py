"""Smaller things a room notices: one parameter count per model, an honest corruption view, a
[MASK] cut off by the model's window, and words the vocabulary cannot spell. The dashboard's
handlers are called directly (no page is built, no server started), on the bundled models."""

import re

import pytest

import lab
from tests.conftest import ROOT

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


def test_a_model_without_a_pooler_counts_no_pooler():
    from tests.conftest import tiny_config

    qa = lab.BertForQuestionAnswering(tiny_config())
    n = qa.parameter_counts()
    assert n.encoder + n.heads == n.total == sum(p.numel() for p in qa.parameters())
    assert n.heads == sum(p.numel() for p in qa.qa_outputs.parameters())
    bare = lab.BertModel(tiny_config()).parameter_counts()
    assert bare.encoder == bare.total and bare.heads == 0
