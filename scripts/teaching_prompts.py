"""Which prompts work on the bundled models and which fail, measured: writes docs/teaching/prompts.md.

    .venv/bin/python -m scripts.teaching_prompts            # run every prompt, rewrite docs/teaching/prompts.md
    .venv/bin/python -m scripts.teaching_prompts --check    # exit 1 if the file differs from what the models give now
    .venv/bin/python -m scripts.teaching_prompts --print    # show the page without writing it

Each candidate below is a prompt for one dashboard tab, the answer a person would accept, and a
sentence saying *why* the model gets it right or wrong. Each runs through the same
`lab.inspect.explore` call the dashboard uses, in fp32 on the CPU, and one rule per task (TASKS)
decides "works" or "fails". A candidate also records the outcome its "why" was written for
(`expect`): when a retrained model changes it, the page marks the entry "unexpected", so the
explanation gets revised. `--check` (tests/test_teaching.py) allows probabilities to move by 0.01.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

import lab
from lab import explore
from lab.checkpoint import qa_lengths
from lab.data import squad_metrics

ROOT = Path(__file__).resolve().parents[1]

PAGE = ROOT / "docs" / "teaching" / "prompts.md"
TOLERANCE = 0.01  # --check: largest accepted change of a printed probability

# The dashboard's two QA example paragraphs (its Question Answering tab opens on them).
CONTEXTS = {
    "Longbourn": (
        "Elizabeth Bennet lived at Longbourn with her parents and four sisters. In 1811 Mr. Bingley, "
        "a rich young man, rented Netherfield Park. His friend Mr. Darcy was proud and did not dance "
        "with Elizabeth at the first ball."
    ),
    "Nautilus": (
        "The Nautilus was a submarine built by Captain Nemo on a desert island. It was driven by "
        "electricity, and Nemo used it to explore the oceans of the world for many years."
    ),
}

TASKS = {  # task -> (section title, dashboard tab, rule shown on the page)
    "fill_mask": (
        "Masked LM: `bert-lab-classroom`",
        "Masked LM",
        "works when the model's top-1 guess is one of the accepted words",
    ),
    "next_sentence": (
        "Next Sentence: `bert-lab-classroom`",
        "Next Sentence",
        "works when P(IsNext) is at least 0.5 for a true continuation and below 0.5 otherwise",
    ),
    "classify": (
        "Classify: `bert-lab-sst2` (the lab's tiny classifier)",
        "Classify",
        "works when the most probable label is the expected one",
    ),
    "classify:minilm-sst2": (
        "Classify: `minilm-sst2` (the tab's default)",
        "Classify",
        "same rule as above; the same sentences, on the real pre-trained encoder fine-tuned the same way",
    ),
    "answer:bert-lab-squad": (
        "Question Answering: `bert-lab-squad` (the lab's tiny reader)",
        "Question Answering",
        "works when the best span equals an accepted answer after SQuAD's normalisation "
        '(lower case, no punctuation or articles); "not in the text": any span is wrong',
    ),
    "answer:minilm-squad": (
        "Question Answering: `minilm-squad` (the tab's default)",
        "Question Answering",
        "same rule as above",
    ),
}


@dataclass
class Prompt:
    task: str  # a key of TASKS
    inputs: tuple  # fill_mask/classify: (text,); next_sentence: (a, b); answer: (question, context key)
    accept: tuple = ()  # accepted answers (words, a label, "IsNext"/"NotNext", answer spans)
    expect: str = "works"  # the outcome `why` explains
    why: str = ""
    # filled in by measure():
    works: bool | None = None
    shown: str = ""  # what the model said, as printed on the page
    notes: list[str] = field(default_factory=list)


NOVELS = "the ten 19th-century novels it was pre-trained on"
P = Prompt
CANDIDATES = [
    # ---------------------------------------------------------------- Masked LM (bert-lab-classroom)
    P(
        "fill_mask",
        ("he opened the [MASK] and walked into the garden .",),
        ("door", "gate", "window"),
        "works",
        'Both sides decide: "opened the" on the left and "walked into the garden" on the right point to a door. '
        "This is the bidirectional context the paper's masked LM is built for.",
    ),
    P(
        "fill_mask",
        ("she wrote a [MASK] to her sister .",),
        ("letter", "note", "message", "line"),
        "works",
        f"Letters to sisters fill {NOVELS}: the pattern is frequent in its training text.",
    ),
    P(
        "fill_mask",
        ("i [MASK] you to tell me the truth , said elizabeth .",),
        ("wish", "beg", "entreat", "want", "ask"),
        "works",
        'Austen\'s dialogue: the model has read many such requests, and "entreat" in its top 3 '
        "shows whose style it learned.",
    ),
    P(
        "fill_mask",
        ("mr . darcy [MASK] into the room .",),
        ("came", "went", "walked", "stepped", "ran"),
        "works",
        'A verb of motion before "into the room": grammar and frequent patterns are what a small masked LM '
        "learns first.",
    ),
    P(
        "fill_mask",
        ("he took the coach to [MASK] .",),
        ("town", "london"),
        "works",
        'Where coaches go in the novels: "town" and "london".',
    ),
    P(
        "fill_mask",
        ("i have not seen him for many [MASK] .",),
        ("years", "months", "weeks", "days", "hours"),
        "works",
        'A plural unit of time after "for many": the model gives the whole family of answers.',
    ),
    P(
        "fill_mask",
        ("the capital of france is [MASK] .",),
        ("paris",),
        "fails",
        'World knowledge: the novels never state it, and "paris" is not even one of the 8,192 words of this model\'s '
        "vocabulary, so no single [MASK] can hold it. A model pre-trained on Wikipedia has read the fact many times.",
    ),
    P(
        "fill_mask",
        ("two plus two is [MASK] .",),
        ("four",),
        "fails",
        "Arithmetic: a masked LM learns which words go together in text, not how to compute; the novels do not "
        "contain sums.",
    ),
    P(
        "fill_mask",
        ("he turned on the [MASK] to watch the news .",),
        ("television", "tv", "radio"),
        "fails",
        "Modern objects: no television in 19th-century novels, and the word is not in its vocabulary; it falls back "
        "on a familiar object of the novels.",
    ),
    P(
        "fill_mask",
        ("she opened the [MASK] and read it .",),
        ("letter", "book", "note", "newspaper"),
        "fails",
        'Near words win: in the novels "opened the" is most often a door, and here the nearby words outweigh '
        'the far clue "and read it". Compare the garden sentence above.',
    ),
    P(
        "fill_mask",
        ("jane was the eldest [MASK] of mrs . bennet .",),
        ("daughter",),
        "fails",
        '"eldest son" is the frequent phrase; linking "jane" (a woman) to "daughter" across the sentence needs '
        "more than this small model learned.",
    ),
    P(
        "fill_mask",
        ("the martians came from [MASK] .",),
        ("mars",),
        "fails",
        "It learned the book, not astronomy: in The War of the Worlds the Martians' cylinders land near Woking, "
        'so "woking" beats "mars". The model repeats its training text.',
    ),
    P(
        "fill_mask",
        ("the sun rises in the [MASK] .",),
        ("east",),
        "fails",
        "Common knowledge is rarely written down: novels seldom say where the sun rises, so frequent words after "
        '"in the" win.',
    ),
    # ---------------------------------------------------------------- Next Sentence (bert-lab-classroom)
    P(
        "next_sentence",
        ("elizabeth walked into the drawing room .", "her mother was sitting by the fire with her sisters ."),
        ("IsNext",),
        "works",
        "Same people, same room, same novel: the kind of continuation it saw as IsNext.",
    ),
    P(
        "next_sentence",
        ("she opened the letter with trembling hands .", "it was from her sister jane ."),
        ("IsNext",),
        "works",
        '"it" picks up "the letter": a true continuation in the novels\' style.',
    ),
    P(
        "next_sentence",
        (
            "captain nemo showed us the great salon of the nautilus .",
            "its walls were covered with paintings and the glass cases held rare shells .",
        ),
        ("IsNext",),
        "works",
        'Verne\'s vocabulary on both sides, and "its walls" continues "the great salon".',
    ),
    P(
        "next_sentence",
        ("the nautilus dived deeper into the ocean .", "she had not danced with him since the ball at netherfield ."),
        ("NotNext",),
        "works",
        "Verne then Austen: two different books, which is exactly how pre-training made "
        "its NotNext pairs (sentence B from another document).",
    ),
    P(
        "next_sentence",
        ("the martians came out of the cylinder .", "emma thought mr . knightley was the best man she knew ."),
        ("NotNext",),
        "works",
        "Wells then Austen: a change of topic is easy to see.",
    ),
    P(
        "next_sentence",
        ("mr . collins proposed to elizabeth .", "jane was ill at netherfield for several days ."),
        ("NotNext",),
        "fails",
        "Both from Pride and Prejudice but not a continuation. Pre-training drew NotNext sentences from *another "
        'document*, so the model learned "same book?" rather than "does B follow A?" (why RoBERTa dropped NSP '
        "and ALBERT replaced it with sentence order).",
    ),
    P(
        "next_sentence",
        ("elizabeth looked at darcy .", "elizabeth looked at darcy ."),
        ("NotNext",),
        "fails",
        "A sentence repeated is not a continuation, but it shares every word with A: the topic cue says IsNext.",
    ),
    P(
        "next_sentence",
        ("the stock market fell sharply today .", "investors lost billions of dollars ."),
        ("IsNext",),
        "fails",
        "A true continuation in modern news: nothing like it in the novels, so the model "
        "cannot tell a matching pair from a mismatched one.",
    ),
    P(
        "next_sentence",
        ("he went to the store .", "penguins are flightless birds ."),
        ("NotNext",),
        "fails",
        "Two modern sentences on different topics: outside the novels the topic cue the "
        "model relies on gives no clear signal, and it says IsNext.",
    ),
    # ---------------------------------------------------------------- Classify (bert-lab-sst2)
    P(
        "classify",
        ("a charming and often moving film .",),
        ("positive",),
        "works",
        'Sentiment words ("charming", "moving") are what SST-2 rewards, and the model leans on them.',
    ),
    P(
        "classify",
        ("boring , predictable and far too long .",),
        ("negative",),
        "works",
        "Three negative cues in a row, in the style of the movie reviews it was fine-tuned on.",
    ),
    P("classify", ("i loved every minute of it .",), ("positive",), "works", '"loved" is a strong positive word.'),
    P(
        "classify",
        ("the soup was delicious .",),
        ("positive",),
        "works",
        'Not a film review, but "delicious" is a positive word: word-level cues transfer to other topics.',
    ),
    P(
        "classify",
        ("this is not a good movie .",),
        ("negative",),
        "works",
        'Right for a shallow reason: "not" is itself a negative cue in SST-2, so "not good" comes out negative. '
        'Compare "not bad" below.',
    ),
    P(
        "classify",
        ("oh great , another two hours of my life wasted .",),
        ("negative",),
        "works",
        'Looks like it understood the sarcasm, but "wasted" is simply a strong negative word.',
    ),
    P(
        "classify",
        ("not bad at all .",),
        ("positive",),
        "fails",
        'Negation: "not" and "bad" are both negative cues, and this small model adds cues rather than composing '
        '"not" with "bad".',
    ),
    P("classify", ("it is not boring .",), ("positive",), "fails", 'Negation again: "boring" wins.'),
    P("classify", ("never dull .",), ("positive",), "fails", 'Negation without "not": "dull" is the cue it reads.'),
    P(
        "classify",
        ("a film that is anything but boring .",),
        ("positive",),
        "fails",
        '"anything but" turns "boring" around; the model only sees "boring".',
    ),
    # ---------------------------------------------------------------- Classify (minilm-sst2)
    P(
        "classify:minilm-sst2",
        ("not bad at all .",),
        ("positive",),
        "works",
        'The negation the tiny classifier gets wrong: an encoder pre-trained on billions of words reads "not" '
        'with "bad", not as two negative cues.',
    ),
    P(
        "classify:minilm-sst2",
        ("it is not boring .",),
        ("positive",),
        "works",
        '"not" turns "boring" around here too: composition, not word counting.',
    ),
    P(
        "classify:minilm-sst2",
        ("never dull .",),
        ("positive",),
        "works",
        'Negation without "not": "never" with "dull" reads as praise.',
    ),
    P(
        "classify:minilm-sst2",
        ("this is not a good movie .",),
        ("negative",),
        "works",
        'The same "not" in front of a positive word: it flips the other way, as it should.',
    ),
    P(
        "classify:minilm-sst2",
        ("i expected to hate it , but i loved it .",),
        ("positive",),
        "works",
        'Contrast: what follows "but" decides, as in most SST-2 reviews that use it.',
    ),
    P(
        "classify:minilm-sst2",
        ("a charming and often moving film .",),
        ("positive",),
        "works",
        "The Classify tab's first example: plain sentiment words, right with both models.",
    ),
    P(
        "classify:minilm-sst2",
        ("a film that is anything but boring .",),
        ("positive",),
        "fails",
        'Its data taught it the other reading: of the 28 SST-2 training phrases with "anything but", 19 are '
        'negative ("too busy ... to be anything but frustrating": only frustrating).',
    ),
    P(
        "classify:minilm-sst2",
        ("i have never been so bored in my life .",),
        ("negative",),
        "fails",
        'It learned that "never" with a negative word is praise ("never dull") and applies the pattern where '
        "it does not hold: a shortcut, not understanding.",
    ),
    P(
        "classify:minilm-sst2",
        ("i would not call it a masterpiece .",),
        ("negative",),
        "fails",
        "Faint praise: a positive word, negated, in a polite form; the model is unsure and wrong.",
    ),
    P(
        "classify:minilm-sst2",
        ("if you like sleeping in the cinema , this is the film for you .",),
        ("negative",),
        "fails",
        'Sarcasm: no negative word at all, and "like" and "the film for you" read as praise.',
    ),
    # ---------------------------------------------------------------- QA: bert-lab-squad
    P(
        "answer:bert-lab-squad",
        ("What did Mr. Bingley rent?", "Longbourn"),
        ("Netherfield Park",),
        "works",
        'A name right after the verb of the question ("rented Netherfield Park"): the easiest kind of question, '
        "and the dashboard's example.",
    ),
    P(
        "answer:bert-lab-squad",
        ("Who built the Nautilus?", "Nautilus"),
        ("Captain Nemo",),
        "fails",
        "It starts at the right place but does not know where the answer ends: a 2-layer model pre-trained on "
        "novels for 75 minutes has not learned what an answer looks like (F1 12.2 on held-out SQuAD).",
    ),
    P(
        "answer:bert-lab-squad",
        ("When did Mr. Bingley rent Netherfield Park?", "Longbourn"),
        ("1811",),
        "fails",
        "The span starts at the date but runs on: start and end are predicted separately, and its end guess is weak.",
    ),
    P(
        "answer:bert-lab-squad",
        ("How many sisters did Elizabeth have?", "Longbourn"),
        ("four",),
        "fails",
        "It returns a similar span for many questions: it has barely learned to read the question.",
    ),
    # ---------------------------------------------------------------- QA: minilm-squad
    P(
        "answer:minilm-squad",
        ("Who built the Nautilus?", "Nautilus"),
        ("Captain Nemo",),
        "works",
        'A real pre-trained encoder fine-tuned on 9k SQuAD questions: "who" asks for a person, and it stops at '
        "the name.",
    ),
    P(
        "answer:minilm-squad",
        ("When did Mr. Bingley rent Netherfield Park?", "Longbourn"),
        ("1811",),
        "works",
        '"when" asks for a time: it picks the date alone.',
    ),
    P(
        "answer:minilm-squad",
        ("How many sisters did Elizabeth have?", "Longbourn"),
        ("four",),
        "works",
        '"how many" asks for a number.',
    ),
    P(
        "answer:minilm-squad",
        ("What drove the Nautilus?", "Nautilus"),
        ("electricity",),
        "works",
        'It matches "drove" with "driven by" in the text: pre-training taught it that the two are related.',
    ),
    P(
        "answer:minilm-squad",
        ("Who was proud?", "Longbourn"),
        ("Mr. Darcy", "Darcy"),
        "works",
        'It links "proud" in the question to "was proud" in the text and takes the subject.',
    ),
    P(
        "answer:minilm-squad",
        ("How long did Nemo explore the oceans?", "Nautilus"),
        ("many years", "for many years"),
        "works",
        "A duration, found at the end of the paragraph.",
    ),
    P(
        "answer:minilm-squad",
        ("What is the capital of France?", "Longbourn"),
        (),
        "fails",
        "The text does not say. Trained on SQuAD v1.1, where every question has an answer, it always returns a span; "
        'the probability left on [CLS] is not a "no answer" verdict.',
    ),
    P(
        "answer:minilm-squad",
        ("What color was the Nautilus?", "Nautilus"),
        (),
        "fails",
        "Not in the text either: it returns the closest thing about the Nautilus.",
    ),
    P(
        "answer:minilm-squad",
        ("Who danced with Elizabeth?", "Longbourn"),
        (),
        "fails",
        'Negation: the text says Mr. Darcy did *not* dance with her. The model matches words ("dance", '
        '"Elizabeth") and answers Mr. Darcy.',
    ),
    P(
        "answer:minilm-squad",
        ("Who was not proud?", "Longbourn"),
        (),
        "fails",
        'The "not" changes nothing for it: same answer as "Who was proud?".',
    ),
    P(
        "answer:minilm-squad",
        ("Why did Nemo build the Nautilus?", "Nautilus"),
        (),
        "fails",
        'The paragraph gives no reason; "why" questions are rare in SQuAD and it picks a nearby phrase.',
    ),
    P(
        "answer:minilm-squad",
        ("Was Mr. Darcy proud?", "Longbourn"),
        ("yes",),
        "fails",
        'A yes/no question: an extractive reader can only copy a span of the text, and "yes" is not in it.',
    ),
]


# ------------------------------------------------------------------------------------------------
# Measuring
# ------------------------------------------------------------------------------------------------
def _models():
    names = ("bert-lab-classroom", "bert-lab-sst2", "minilm-sst2", "bert-lab-squad", "minilm-squad")
    return {name: lab.load(ROOT / "models" / name) for name in names}


def measure(candidates=CANDIDATES) -> list[Prompt]:
    """Run every candidate on its model; fill in .works, .shown and .notes. Returns the list.
    In fp32 on the CPU (the dashboard uses bf16 autocast where the CPU has fast bf16: its
    probabilities can differ in the second digit)."""
    torch.manual_seed(0)
    models = _models()
    for p in candidates:
        p.notes = []
        if p.task == "fill_mask":
            model, tok = models["bert-lab-classroom"]
            guesses = explore.fill_mask(model, tok, p.inputs[0], top_k=3)[0]
            p.works = guesses[0][0] in p.accept
            p.shown = ", ".join(f"{t} {prob:.2f}" for t, prob in guesses)
            missing = [w for w in p.accept if w not in tok.vocab]
            if missing:
                p.notes.append(f"not in the vocabulary: {', '.join(missing)}")
        elif p.task == "next_sentence":
            model, tok = models["bert-lab-classroom"]
            prob = explore.next_sentence(model, tok, *p.inputs)
            p.works = (prob >= 0.5) == (p.accept[0] == "IsNext")
            p.shown = f"P(IsNext) {prob:.2f}"
        elif p.task == "classify" or p.task.startswith("classify:"):
            model, tok = models[p.task.split(":", 1)[1] if ":" in p.task else "bert-lab-sst2"]
            probs = explore.classify(model, tok, p.inputs[0])
            best = next(iter(probs))
            p.works = best == p.accept[0]
            p.shown = ", ".join(f"{label} {prob:.2f}" for label, prob in probs.items())
        elif p.task.startswith("answer:"):
            name = p.task.split(":", 1)[1]
            model, tok = models[name]
            question, context = p.inputs[0], CONTEXTS[p.inputs[1]]
            result = explore.answer(
                model, tok, question, context, top_k=1, **qa_lengths(ROOT / "models" / name)
            )  # its own window settings
            best = result.spans[0]
            p.works = bool(p.accept) and squad_metrics.exact_match(best.text, list(p.accept)) == 1.0
            p.shown = f"\u201c{best.text}\u201d {best.probability:.2f}"
        else:
            raise ValueError(f"unknown task {p.task!r}")
    return candidates


def surprises(results) -> list[Prompt]:
    """Entries whose measured outcome is not the one their explanation was written for."""
    return [p for p in results if ("works" if p.works else "fails") != p.expect]


# ------------------------------------------------------------------------------------------------
# The page
# ------------------------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _prompt_cell(p: Prompt) -> str:
    if p.task == "next_sentence":
        return f"A: `{p.inputs[0]}`<br>B: `{p.inputs[1]}`"
    if p.task.startswith("answer:"):
        return f"`{p.inputs[0]}` (paragraph: {p.inputs[1]})"
    return f"`{p.inputs[0]}`"


def _expected_cell(p: Prompt) -> str:
    if p.task.startswith("answer:") and not p.accept:
        return "not in the text"
    text = " / ".join(p.accept)
    return text + (f" ({'; '.join(p.notes)})" if p.notes else "")


def render(results) -> str:
    n_works = sum(bool(p.works) for p in results)
    lines = [
        "# Prompts that work, and prompts that fail",
        "",
        "<!-- Written by scripts/teaching_prompts.py from the bundled models' actual outputs: do not edit by hand. -->",
        "",
        "Every row below was measured: `python -m scripts.teaching_prompts` runs each prompt on the bundled",
        "model through the same `lab.inspect.explore` call the dashboard uses and decides *works* or *fails* from",
        "what the model answered; `python -m scripts.teaching_prompts --check` (run by",
        "`tests/test_teaching.py`) fails when a model no longer gives what this page says. Probabilities",
        "are computed in fp32; the dashboard uses bf16 on CPUs that have it, so its numbers can differ in",
        "the second digit. Type the prompts into the dashboard as written (lower case, spaces around",
        "punctuation, as the models' training text).",
        "",
        f"{len(results)} prompts: {n_works} work, {len(results) - n_works} fail. The failures are the lesson:",
        "each says what a model learns from its data and its size, and what it cannot.",
        "",
        "The Question Answering paragraphs (the dashboard's examples):",
        "",
    ]
    for key, text in CONTEXTS.items():
        lines.append(f"- **{key}**: {text}")
    lines.append("")
    for task, (title, tab, rule) in TASKS.items():
        rows = [p for p in results if p.task == task]
        if not rows:
            continue
        lines += [f"## {title}", "", f"Dashboard tab: {tab}. Rule: {rule}.", ""]
        for verdict, label in ((True, "Works"), (False, "Fails")):
            chosen = [p for p in rows if bool(p.works) is verdict]
            if not chosen:
                continue
            lines += [f"### {label}", "", "| prompt | expected | the model says | why |", "|---|---|---|---|"]
            for p in chosen:
                why = p.why
                if p in surprises([p]):
                    why = (
                        f"**Unexpected: this explanation was written for a prompt that {p.expect}; "
                        f"the model changed, revise it.** {why}"
                    )
                lines.append(
                    f"| {_cell(_prompt_cell(p))} | {_cell(_expected_cell(p))} | {_cell(p.shown)} | {_cell(why)} |"
                )
            lines.append("")
    lines += [
        "## Why the failures matter",
        "",
        "- The classroom model read ten novels (about 1.3M words), BERT-base read 3.3 billion: what a",
        "  masked LM knows is what its text says often. Try the same prompts on a real BERT",
        "  (`python app.py --model google-bert/bert-base-uncased`, needs the download once).",
        "- Next-sentence prediction learned to tell documents apart, because its negatives came from",
        "  other documents (as in Google's `create_pretraining_data.py`, which the lab follows); later",
        "  work (RoBERTa, ALBERT) dropped or changed this task.",
        "- A 2-layer classifier adds up word cues; negation needs composition that larger models learn",
        "  better, but not perfectly.",
        '- An extractive QA model copies a span: it cannot say "no answer" (SQuAD v1.1 had none),',
        '  "yes", or anything the text does not contain.',
        "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# Checking
# ------------------------------------------------------------------------------------------------
_NUMBER = re.compile(r"\d+\.\d+")


def _same_line(a: str, b: str) -> bool:
    """Equal text, and every probability within TOLERANCE (floating point differs between CPUs)."""
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    return all(abs(float(x) - float(y)) <= TOLERANCE + 1e-9 for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)))


def differences(expected: str, actual: str) -> list[str]:
    """'' lines: none; otherwise a unified diff of the lines that really differ."""
    want, have = expected.splitlines(), actual.splitlines()
    if len(want) == len(have) and all(_same_line(a, b) for a, b in zip(want, have)):
        return []
    return list(
        difflib.unified_diff(have, want, "docs/teaching/prompts.md (on disk)", "what the models give now", lineterm="")
    )


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/teaching/prompts.md is out of date")
    parser.add_argument("--print", action="store_true", help="print the page instead of writing it")
    args = parser.parse_args(argv)
    results = measure()
    page = render(results)
    for p in surprises(results):
        print(
            f"unexpected: {p.task} {p.inputs!r} now {'works' if p.works else 'fails'} "
            f"(its why was written for {p.expect}): {p.shown}",
            file=sys.stderr,
        )
    if args.print:
        print(page)
        return 0
    if args.check:
        current = PAGE.read_text() if PAGE.is_file() else ""
        diff = differences(page, current)
        if diff:
            print("\n".join(diff), file=sys.stderr)
            print(f"{_shown(PAGE)} is out of date: run python -m scripts.teaching_prompts", file=sys.stderr)
            return 1
        print(f"{_shown(PAGE)} matches the models ({len(results)} prompts)")
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page)
    print(f"wrote {_shown(PAGE)}: {sum(bool(p.works) for p in results)} work, {sum(not p.works for p in results)} fail")
    return 0


if __name__ == "__main__":
    sys.exit(main())
