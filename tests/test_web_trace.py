"""BERT, step by step, in the page (issue 42): window.bertLab.trace against explore.trace.

A site exported from bert-lab-classroom, bert-lab-classroom-modern, bert-lab-squad, bert-lab-sst2,
minilm-ner and three tiny random models that switch on every change since BERT (pre-norm with its
final norm, GeGLU, rotary positions with a global and a local base, no biases, local attention with
a window shorter than the sentence; the tanh GELU and ReLU; no segment table), served by a plain
static server and opened in Debian's chromium. For each model and for a text with a [MASK], a
pair and a text without one, every step must have Python's name, kind, order, shape, axes, module,
layer and texts, and values within TOL: |page - lab| <= TOL · max(1, |lab|), absolute for numbers
up to 1 and relative above (a masked score is float32's lowest, -3.4e38). The arithmetic under it
(erf, fp16 and bf16 decoding, the safetensors reader) is checked in Node against Python's.
Needs Node and chromium; skipped without them except under CI (BERT_LAB_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import base64
import functools
import json
import math
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import onnx
import pytest
import torch
from safetensors.torch import save_file

import lab
from lab.inspect import explore
from lab.modern import CHANGES, changed
from tests.conftest import ROOT, chromium_browser, need_node, site_models, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOL = 1e-4
BUNDLED = ("bert-lab-classroom", "bert-lab-classroom-modern", "bert-lab-squad", "bert-lab-sst2", "minilm-ner")
TINY = ("tiny-modern", "tiny-tanh", "tiny-relu")
TEXTS = {
    "a [MASK]": ("the captain of the ship looked at the [MASK] and smiled .", None),
    "a pair": ("he went to the store with his old friend .", "he bought milk ."),
    "no [MASK]": ("a long walk in the park made everyone happy again", None),
}
WORST: dict[str, float] = {}  # model -> the largest difference of any step (printed with -s)

# window.bertLab.trace in the page, each step's values sent back as the bytes of its Float32Array
TRACE_JS = """async ([a, b, model]) => {
  const r = await bertLab.trace(a, b, {model});
  const base64 = (v) => {
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(s);
  };
  const steps = r.steps.map((s) => ({...s, float32: s.values instanceof Float32Array, values: base64(s.values)}));
  return {...r, steps};
}"""


def tiny_models(tok) -> dict:
    """Three tiny models, weights moved off their initial values so that every bias and norm counts."""
    every = changed(dict(num_hidden_layers=3, intermediate_size=48), CHANGES, local_window=4, global_every=2)
    made = {
        # pre-norm, GeGLU, rotary (global base 160,000, local 10,000), no biases, a 4-token window
        "tiny-modern": (lab.BertForPreTraining, dict(every, rope_theta=160000.0)),
        # BERT's layer with the tanh GELU and no segment table
        "tiny-tanh": (
            lab.BertForTokenClassification,
            dict(hidden_act="gelu_new", type_vocab_size=0, id2label={0: "O", 1: "B-X", 2: "I-X"}),
        ),
        # ReLU, pre-norm, rotary without segments (no embedding sum at all), local layers
        "tiny-relu": (
            lab.BertForQuestionAnswering,
            dict(
                hidden_act="relu",
                type_vocab_size=0,
                position_embedding_type="rotary",
                norm_position="pre",
                num_hidden_layers=3,
                local_attention=6,
                global_attn_every_n_layers=2,
            ),
        ),
    }
    models = {}
    for seed, (name, (cls, values)) in enumerate(made.items()):
        torch.manual_seed(seed)
        model = cls(tiny_config(vocab_size=tok.vocab_size, **values))
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.05 * torch.randn_like(p))
        models[name] = model
    return models


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site: the bundled models named in BUNDLED and the tiny ones, exported with their weights."""
    need_node()
    from lab.web.export import export_site
    from lab.web.page import copy_page

    models, tok = site_models(tmp_path_factory, BUNDLED)
    for name, model in tiny_models(tok).items():
        lab.save(model, tok, models / name)
    out = tmp_path_factory.mktemp("site")
    # every model with its weights (MiniLM too); no openings.json: not needed
    manifest = export_site(out, models_dir=models, log=lambda _: None, page=False, trace="all")
    copy_page(out)
    return out, models, manifest


@pytest.fixture(scope="module")
def url(site):
    handler = functools.partial(QuietHandler, directory=str(site[0]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


def open_page(browser, url):
    page = browser.new_page()
    page.set_default_timeout(120_000)
    page.requested = []
    page.on("request", lambda r: page.requested.append(r.url))
    page.goto(url)
    page.wait_for_function("window.bertLab !== undefined")
    return page


@pytest.fixture(scope="module")
def page(browser, url):
    p = open_page(browser, url)
    yield p
    p.close()


def compare(expected: dict, got: dict, where: str) -> float:
    """The page's trace equals the lab's (to_json) field by field; returns the largest difference."""
    assert set(got) == set(expected), where
    for key in ("tokens", "input_ids", "token_type_ids", "predicted_positions", "truncated"):
        assert got[key] == expected[key], f"{where}: {key}"
    assert [s["name"] for s in got["steps"]] == [s["name"] for s in expected["steps"]], where
    worst = 0.0
    for e, g in zip(expected["steps"], got["steps"]):
        at = f"{where}, {e['name']}"
        assert set(g) - {"float32"} == set(e), at
        for key in ("kind", "shape", "axes", "formula", "section", "what", "module", "layer"):
            assert g[key] == e[key], f"{at}: {key} {g[key]!r} != {e[key]!r}"
        assert g["float32"], f"{at}: values is not a Float32Array"
        values = np.frombuffer(base64.b64decode(g["values"]), dtype="<f4").astype(np.float64)
        ref = np.asarray(e["values"], dtype=np.float64)
        assert values.shape == ref.shape == (math.prod(e["shape"]),), at
        diff = float((np.abs(values - ref) / np.maximum(1.0, np.abs(ref))).max(initial=0.0))
        assert diff <= TOL, f"{at}: differs by {diff:.2e}"
        worst = max(worst, diff)
    return worst


@pytest.mark.parametrize("name", BUNDLED + TINY)
def test_every_step_agrees_with_the_lab(page, site, name):
    model, tok = lab.load(site[1] / name)
    worst = 0.0
    for label, (a, b) in TEXTS.items():
        expected = explore.trace(model, tok, a, b).to_json()
        got = page.evaluate(TRACE_JS, [a, b, name])
        worst = max(worst, compare(expected, got, f"{name}, {label}"))
    WORST[name] = worst
    print(f"{name}: {len(expected['steps'])} steps, largest difference {worst:.1e}")


def test_a_text_longer_than_the_model_is_cut_as_the_lab_cuts_it(page, site):
    model, tok = lab.load(site[1] / "tiny-relu")  # reads 64 tokens
    a, b = " ".join(["the cat sat on the mat ."] * 12), "[MASK] ran off ."
    expected = explore.trace(model, tok, a, b).to_json()
    assert expected["truncated"] > 0
    compare(expected, page.evaluate(TRACE_JS, [a, b, "tiny-relu"]), "tiny-relu, cut")


def test_every_model_can_be_traced_and_the_manifest_says_how(page, site):
    out, _, manifest = site
    names = page.evaluate("async () => (await bertLab.modelsFor('trace')).map((m) => m.name)")
    assert sorted(names) == sorted(BUNDLED + TINY)
    for m in manifest["models"]:
        t = m["trace"]
        assert t["weights"] == f"models/{m['name']}/weights.safetensors"
        assert t["bytes"] == (out / t["weights"]).stat().st_size
        assert m["bytes"] == sum((out / f).stat().st_size for f in m["files"].values())  # the menus' number
        assert t["config"]["class"] == m["class"] and t["max_masks"] == 20
        assert t["linear"] == "models/trace_linear.onnx"  # one graph for every model
    graph = onnx.load(str(out / "models" / "trace_linear.onnx"))
    assert [(n.op_type, list(n.input)) for n in graph.graph.node] == [("Gemm", ["X", "W", "B"])]
    assert graph.opset_import[0].version == 18 and (out / "models" / "trace_linear.onnx").stat().st_size < 1000
    classroom = next(m for m in manifest["models"] if m["name"] == "bert-lab-classroom")
    assert classroom["trace"]["dtypes"] == {"F16": 46}  # saved in fp16: every tensor stays fp16, tied ones once


def test_a_large_model_computes_its_linear_layers_in_the_runtime(browser, url, site):
    """minilm-ner (hidden 384) computes every linear layer with onnxruntime-web's Gemm
    (models/trace_linear.onnx); the classroom model (hidden 128) with tensor.js's loops, without
    fetching that graph. The values of both are checked in test_every_step_agrees_with_the_lab."""
    page = open_page(browser, url)
    try:
        calls = """async (model) => {
          await bertLab.trace("the [MASK] sat on the mat .", null, {model});
          return bertLab.linearCalls;
        }"""
        graph = lambda: [u for u in page.requested if u.endswith("/trace_linear.onnx")]  # noqa: E731
        before = page.evaluate("() => bertLab.linearCalls")
        small = page.evaluate(calls, "bert-lab-classroom")
        assert small["runtime"] == before["runtime"] and small["script"] > before["script"]
        assert graph() == [], "the classroom model's trace fetched the runtime's graph"
        large = page.evaluate(calls, "minilm-ner")
        layers = lab.load(site[1] / "minilm-ner")[0].config.num_hidden_layers
        assert large["script"] == small["script"], "a MiniLM linear layer went through the loops"
        assert large["runtime"] - small["runtime"] >= 6 * layers  # q, k, v, output, and the feed-forward's two
        assert len(graph()) == 1
    finally:
        page.close()


def test_on_layer_is_awaited_after_each_layer(page):
    seen = page.evaluate(
        """async (t) => {
          const seen = [];
          const r = await bertLab.trace(t, null, {model: "bert-lab-classroom", onLayer: async (i, steps) => {
            seen.push([i, steps.length, steps[steps.length - 1].name]);
            await new Promise((done) => setTimeout(done, 30));
            seen.push(["painted", i]);
          }});
          return {seen, names: r.steps.map((s) => s.name)};
        }""",
        "the [MASK] sat on the mat .",
    )
    names = seen["names"]
    ends = [names.index(f"bert.encoder.layer.{i}.output.LayerNorm") + 1 for i in range(2)]
    assert seen["seen"] == [
        [0, ends[0], "bert.encoder.layer.0.output.LayerNorm"],
        ["painted", 0],
        [1, ends[1], "bert.encoder.layer.1.output.LayerNorm"],
        ["painted", 1],
    ]


def test_the_weights_load_on_the_first_trace_only_with_progress(browser, url):
    page = open_page(browser, url)
    try:
        page.wait_for_load_state("networkidle")  # the first view drawn, its graph loaded meanwhile
        weights = lambda: [u for u in page.requested if u.endswith("/bert-lab-classroom/weights.safetensors")]  # noqa: E731
        assert weights() == [], "the first view loaded the weights"
        events = page.evaluate(
            """async () => {
              const events = [];
              bertLab.onProgress((e) => events.push(e));
              await bertLab.trace("one [MASK] here", null, {model: "bert-lab-classroom"});
              await bertLab.trace("and [MASK] again", null, {model: "bert-lab-classroom"});
              return events.filter((e) => String(e.file).endsWith("weights.safetensors"));
            }"""
        )
        assert len(weights()) == 1  # once, then cached
        assert events and events[-1]["done"] and events[-1]["loaded"] == events[-1]["total"] > 3_000_000
    finally:
        page.close()


def test_bad_input_gets_the_labs_message(page, site):
    model, tok = lab.load(site[1] / "bert-lab-classroom")
    call = "async ([a, b, o]) => { try { await bertLab.trace(a, b, o); return null; } catch (e) { return e.message; } }"
    many = " ".join(["[MASK]"] * 21)
    for a, b in (("   ", None), (many, None), ("fine", many)):
        with pytest.raises(ValueError) as python:
            explore.trace(model, tok, a, b)
        assert page.evaluate(call, [a, b, {"model": "bert-lab-classroom"}]) == str(python.value)
    assert "21 [MASK] tokens: at most 20 per text" == page.evaluate(call, [many, None, {}])
    assert page.evaluate(call, ["a", None, {"top_k": 3}]) == "unknown option top_k: trace takes model, onLayer"
    assert page.evaluate(call, ["a", None, {"onLayer": 3}]).startswith("onLayer must be a function")
    assert page.evaluate(call, ["a", None, {"model": "nope"}]).startswith('no model called "nope" here')


# ----------------------------------------------------------------------------------------------
# The arithmetic under it, in Node: erf, fp16 / bf16, the safetensors reader
# ----------------------------------------------------------------------------------------------
def node(script: str) -> object:
    need_node()
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script], cwd=ROOT / "web", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_erf_and_gelu_agree_with_python_to_1e_12():
    xs = [0.0, 1e-9, 0.1, 0.5, 1.0, 1.5, 1.999, 2.0, 2.5, 3.0, 4.0, 5.5, 6.0, 7.0, 30.0]
    xs += [-x for x in xs] + [x / 7 for x in range(-60, 61)]
    got = node(
        "import { erf, gelu } from './src/tensor.js';"
        f"const xs = {json.dumps(xs)};"
        "console.log(JSON.stringify([xs.map(erf), xs.map(gelu), [erf(Infinity), erf(-Infinity), String(erf(NaN))]]));"
    )
    erfs, gelus, ends = got
    assert max(abs(e - math.erf(x)) for x, e in zip(xs, erfs)) < 1e-12
    assert max(abs(g - 0.5 * x * (1 + math.erf(x / math.sqrt(2)))) for x, g in zip(xs, gelus)) < 1e-12
    assert ends == [1, -1, "NaN"]
    torch_gelu = torch.nn.functional.gelu(torch.tensor(xs, dtype=torch.float64)).tolist()
    assert max(abs(a - b) for a, b in zip(gelus, torch_gelu)) < 1e-12


def test_fp16_bf16_and_fp32_tensors_are_read_exactly(tmp_path):
    g = torch.Generator().manual_seed(0)
    values = torch.randn(7, 5, generator=g) * 100
    values[0, :4] = torch.tensor([float("inf"), -float("inf"), 6e-8, -0.0])  # infinities, an fp16 subnormal
    tensors = {"a.f16": values.half(), "b.bf16": values.bfloat16(), "c.f32": values, "d.scalar": torch.tensor([0.1])}
    save_file(tensors, str(tmp_path / "w.safetensors"))
    got = node(
        "import { readFileSync } from 'node:fs'; import { readSafetensors, halfToFloat } from './src/safetensors.js';"
        f"const t = readSafetensors(readFileSync({json.dumps(str(tmp_path / 'w.safetensors'))}));"
        "const out = {};"
        "for (const [k, v] of t) out[k] = {dtype: v.dtype, shape: v.shape, values: Array.from(v.values, String)};"
        "out.halves = Array.from({length: 65536}, (_, i) => String(halfToFloat(i)));"
        "console.log(JSON.stringify(out));"
    )
    for name, t in tensors.items():
        assert got[name]["shape"] == list(t.shape)
        assert got[name]["dtype"] == {torch.float16: "F16", torch.bfloat16: "BF16", torch.float32: "F32"}[t.dtype]
        assert [float(v) for v in got[name]["values"]] == t.float().flatten().tolist(), name
    every = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64)
    page = np.array([float(v) for v in got["halves"]])
    assert np.array_equal(np.isnan(page), np.isnan(every)) and np.array_equal(
        page[~np.isnan(page)], every[~np.isnan(every)]
    )


def test_a_default_site_leaves_out_the_large_models_weights(tmp_path_factory):
    """export-web --trace small (the default) writes the tiny models' weights and not a MiniLM's
    45 MB, so a site of every bundled model keeps its size target; all and none do what they say;
    a model without weights has trace null, which the page's modelsFor("trace") leaves out."""
    from lab.web.export import export_site
    from lab.web.trace_export import SMALL_BYTES, traced

    small, _ = lab.load(ROOT / "models" / "bert-lab-classroom")
    large, _ = lab.load(ROOT / "models" / "minilm-ner")
    assert traced(small, "small") and not traced(large, "small") and traced(large, "all")
    assert not traced(small, "none")
    with pytest.raises(ValueError, match="trace must be one of small, all, none"):
        traced(small, "some")
    assert (ROOT / "models" / "minilm-ner" / "model.safetensors").stat().st_size > SMALL_BYTES
    models, _ = site_models(tmp_path_factory, ["bert-lab-classroom"])
    out = tmp_path_factory.mktemp("site")
    manifest = export_site(out, models_dir=models, log=lambda _: None, page=False, trace="none")
    assert manifest["models"][0]["trace"] is None
    assert not list(out.rglob("weights.safetensors"))
    assert '(view === "trace" ? Boolean(m.trace)' in (ROOT / "web" / "src" / "api.js").read_text()
