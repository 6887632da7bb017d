"""The teacher pack's prompt lists stay true: docs/teaching/prompts.md is what the bundled models
answer now (python -m scripts.teaching_prompts --check), every task has prompts that work and prompts
that fail, and each explanation matches the measured outcome. A few seconds on 2 CPU cores."""

import ast

import pytest

from scripts import teaching_prompts
from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "teaching_prompts.py"


@pytest.fixture(scope="module")
def prompts():
    return teaching_prompts


@pytest.fixture(scope="module")
def results(prompts):
    return prompts.measure()


def test_the_script_says_how_to_run_it(prompts):
    assert prompts.__doc__ and "python -m scripts.teaching_prompts --check" in prompts.__doc__


def test_the_page_matches_what_the_models_give_now(prompts, results):
    page = prompts.PAGE.read_text()
    diff = prompts.differences(prompts.render(results), page)
    assert not diff, "docs/teaching/prompts.md is out of date (python -m scripts.teaching_prompts):\n" + "\n".join(
        diff[:40]
    )


def test_the_check_command_passes_and_fails(prompts, tmp_path, monkeypatch):
    assert prompts.main(["--check"]) == 0
    stale = tmp_path / "prompts.md"
    stale.write_text(prompts.PAGE.read_text().replace("| Works", "| Fails", 1).replace("### Works", "### Fails", 1))
    monkeypatch.setattr(prompts, "PAGE", stale)
    assert prompts.main(["--check"]) == 1


def test_the_check_tolerates_rounding_but_not_a_changed_number(prompts):
    line = "| `not bad at all .` | positive | negative 0.94, positive 0.06 | why |"
    assert prompts.differences(line, line.replace("0.94", "0.95").replace("0.06", "0.05")) == []
    assert prompts.differences(line, line.replace("0.94", "0.90"))
    assert prompts.differences(line, line.replace("negative 0.94", "positive 0.94"))


def test_every_task_has_prompts_that_work_and_prompts_that_fail(prompts, results):
    for task in prompts.TASKS:
        verdicts = {bool(p.works) for p in results if p.task == task}
        assert verdicts == {True, False}, f"{task}: only {'working' if True in verdicts else 'failing'} prompts"


def test_each_explanation_matches_the_measured_outcome(prompts, results):
    wrong = [(p.task, p.inputs, p.shown) for p in prompts.surprises(results)]
    assert not wrong, f"these prompts changed outcome; revise their why in {SCRIPT.name}: {wrong}"
    assert all(p.why for p in results)


def dashboard_examples() -> dict:
    """The example constants of dashboard/help.py (its assignments of literals, run alone: no gradio)."""
    help_py = ROOT / "dashboard" / "help.py"
    if not help_py.is_file():
        pytest.skip("dashboard/help.py not found")
    wanted = {"MLM_EXAMPLES", "NSP_EXAMPLES", "QA_CONTEXT", "QA_CONTEXT_2", "QA_EXAMPLES", "CLS_EXAMPLES"}
    tree = ast.parse(help_py.read_text())
    assigns = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in wanted for t in node.targets)
    ]
    namespace: dict = {}
    exec(compile(ast.Module(body=assigns, type_ignores=[]), str(help_py), "exec"), namespace)
    return namespace


def test_the_dashboard_examples_are_among_the_measured_prompts(prompts, results):
    ex = dashboard_examples()
    assert prompts.CONTEXTS == {"Longbourn": ex["QA_CONTEXT"], "Nautilus": ex["QA_CONTEXT_2"]}, (
        "the QA paragraphs of scripts/teaching_prompts.py must be the dashboard's"
    )
    measured = {p.inputs for p in results}
    assert (ex["MLM_EXAMPLES"][0][0],) in measured  # the Masked LM and Training tabs open on it
    assert tuple(ex["NSP_EXAMPLES"][0]) in measured  # the Next Sentence and Attention tabs
    assert (ex["CLS_EXAMPLES"][0][0],) in measured
    questions = {p.inputs[0] for p in results if p.task.startswith("answer:")}
    assert {q for q, _ in ex["QA_EXAMPLES"][:2]} <= questions
