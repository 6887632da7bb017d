"""lab.exercises, pre-training group: masking, NSP pairs, the loss and AdamW.

Every checker passes the reference (also as the pasted solution code) for several seeds, rejects
typical wrong implementations written here with a diagnosis naming the cause, says "not
implemented yet" for a stub and turns an exception into one sentence.
"""

import math
import random

import pytest
import torch
import torch.nn.functional as F

from lab import exercises
from lab.exercises import adamw, masking, pretraining_loss
from lab.exercises import nsp_pairs as nsp_exercise

NAMES = ("masking", "nsp_pairs", "pretraining_loss", "adamw")


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def failed(result, *words):
    """The check failed (implemented) and its message names every word (case-insensitive)."""
    assert not result.passed and result.implemented, str(result)
    text = result.message.lower()
    missing = [w for w in words if w.lower() not in text]
    assert not missing, f"{missing} not in: {result.message}"
    return result


# ---------------------------------------------------------------------------------------------
# The reference, the solution code, stubs and exceptions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reference_passes_for_several_seeds(name, seed):
    ex = exercises.exercise(name)
    result = exercises.check(name, ex.solution, seed=seed)
    assert result.passed, str(result)
    assert str(result).startswith("PASSED")


@pytest.mark.parametrize("name", NAMES)
def test_solution_code_pasted_into_a_fresh_namespace_passes(name):
    namespace = {}
    exec(compile(exercises.solution_code(name), f"<solution {name}>", "exec"), namespace)
    symbol = exercises.exercise(name).symbol
    assert exercises.check(name, namespace[symbol]).passed


@pytest.mark.parametrize("name", NAMES)
def test_stub_is_not_implemented_yet(name):
    namespace = {}
    exec(compile(exercises.stub(name), f"<stub {name}>", "exec"), namespace)
    result = exercises.check(name, namespace[exercises.exercise(name).symbol])
    assert not result.passed and not result.implemented
    assert str(result).startswith("NOT IMPLEMENTED YET")


def test_stub_documents_shapes_and_registration():
    for name in NAMES:
        ex = exercises.exercise(name)
        assert ex.group == "pretraining"
        assert "raise NotImplementedError" in ex.stub
        assert ex.hint and exercises.hint(name) == ex.hint
    assert "[B, T]" in exercises.stub("masking") and "[B, T, V]" in exercises.stub("pretraining_loss")


def test_an_exception_becomes_one_sentence():
    def broken_masking(
        input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20
    ):
        return input_ids[99]  # IndexError

    def broken_pairs(documents, rng):
        return [documents[0][0] + 1]  # TypeError

    def broken_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
        return F.cross_entropy(mlm_logits, mlm_labels)  # [B, T, V] against [B, T]: wrong shapes

    class BrokenAdamW(adamw.AdamW):
        def step(self, closure=None):
            raise ValueError("oops")

    for name, fn, exc in (
        ("masking", broken_masking, "IndexError"),
        ("nsp_pairs", broken_pairs, "TypeError"),
        ("pretraining_loss", broken_loss, "RuntimeError"),
        ("adamw", BrokenAdamW, "ValueError"),
    ):
        result = exercises.check(name, fn)
        assert not result.passed and result.implemented
        assert exc in result.message and "\n" not in result.message and "Traceback" not in result.message
        assert "line" in result.message  # where in the student's code


# ---------------------------------------------------------------------------------------------
# Other correct implementations pass too (no false alarms on a different but right way)
# ---------------------------------------------------------------------------------------------


def masking_loop_style(
    input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20
):
    """Position by position: randperm for the choice, round half up, two Bernoulli draws (80%, then half)."""
    masked, labels = input_ids.clone(), torch.full_like(input_ids, -100)
    allowed = [i for i in range(vocab_size) if i not in special_ids]
    for b in range(input_ids.shape[0]):
        pos = [t for t in range(input_ids.shape[1]) if int(input_ids[b, t]) not in special_ids]
        if not pos:
            continue
        k = min(max_predictions, max(1, int(mlm_probability * len(pos) + 0.5)))
        for j in torch.randperm(len(pos), generator=generator)[:k].tolist():
            t = pos[j]
            labels[b, t] = input_ids[b, t]
            if torch.bernoulli(torch.tensor(0.8), generator=generator):
                masked[b, t] = mask_id
            elif torch.bernoulli(torch.tensor(0.5), generator=generator):
                masked[b, t] = allowed[int(torch.randint(len(allowed), (1,), generator=generator))]
    return masked, labels


def loss_by_hand(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    picked = mlm_labels != -100
    mlm = -mlm_logits[picked].log_softmax(-1).gather(1, mlm_labels[picked][:, None]).mean()
    return mlm - nsp_logits.log_softmax(-1).gather(1, nsp_labels[:, None]).mean()


class AdamWFloat32State(torch.optim.Optimizer):
    """Moments kept in float32 (torch.zeros(p.shape)) and updates through p.data: right, less precise."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def step(self, closure=None):
        for group in self.param_groups:
            (b1, b2), lr = group["betas"], group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if "t" not in st:
                    st.update(t=0, m=torch.zeros(p.shape), v=torch.zeros(p.shape))
                st["t"] += 1
                g = p.grad.data.float()
                st["m"] = b1 * st["m"] + (1 - b1) * g
                st["v"] = b2 * st["v"] + (1 - b2) * g**2
                m_hat, v_hat = st["m"] / (1 - b1 ** st["t"]), st["v"] / (1 - b2 ** st["t"])
                p.data = p.data - lr * group["weight_decay"] * p.data
                p.data = p.data - lr * m_hat / (v_hat.sqrt() + group["eps"])


def nsp_with_a_retry_loop(documents, rng):
    pairs = []
    for d, doc in enumerate(documents):
        for i in range(len(doc) - 1):
            if rng.random() >= 0.5:
                pairs.append([doc[i], doc[i + 1], 0])
            else:
                other = d
                while other == d:
                    other = rng.randrange(len(documents))
                pairs.append([doc[i], documents[other][rng.randrange(len(documents[other]))], 1])
    return pairs


@pytest.mark.parametrize(
    "name, student",
    [
        ("masking", masking_loop_style),
        ("nsp_pairs", nsp_with_a_retry_loop),
        ("pretraining_loss", loss_by_hand),
        ("adamw", AdamWFloat32State),
    ],
)
@pytest.mark.parametrize("seed", [0, 2])
def test_other_right_implementations_pass(name, student, seed):
    result = exercises.check(name, student, seed=seed)
    assert result.passed, str(result)


# ---------------------------------------------------------------------------------------------
# masking: wrong implementations
# ---------------------------------------------------------------------------------------------


def make_masker(
    per_sequence=False,
    specials_chosen=False,
    labels_everywhere=False,
    labels_at_all_words=False,
    bernoulli=False,
    no_cap=False,
    random_any=False,
    split=(0.8, 0.1),
    labels_replaced=False,
    in_place=False,
    count_with_specials=False,
    global_rng=False,
    first_k=False,
    fixed_numbers=False,
):
    """A student's mask_tokens with the given mistakes switched on."""

    def mask_tokens(input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20):
        if fixed_numbers:
            mlm_probability, max_predictions = 0.15, 20
        gen = None if global_rng else generator
        B, T = input_ids.shape
        specials = torch.tensor(special_ids)
        is_special = torch.isin(input_ids, specials)
        maskable = ~is_special if not specials_chosen else input_ids != -1
        if bernoulli:
            chosen = (torch.rand(B, T, generator=gen) < mlm_probability) & maskable
        else:
            chosen = torch.zeros(B, T, dtype=torch.bool)
            scores = torch.rand(B, T, generator=gen).masked_fill(~maskable, -1)
            for b in range(B):
                n = int(maskable[b].sum()) if not count_with_specials else int((input_ids[b] != 0).sum())
                k = max(1, round(mlm_probability * n))
                if not no_cap:
                    k = min(k, max_predictions)
                where = maskable[b].nonzero().squeeze(1)[:k] if first_k else scores[b].topk(k).indices
                chosen[b, where] = True
        if per_sequence:
            dice = torch.rand(B, 1, generator=gen).expand(B, T)
        else:
            dice = torch.rand(B, T, generator=gen)
        if random_any:
            random_ids = torch.randint(vocab_size, (B, T), generator=gen)
        else:
            allowed = torch.tensor([i for i in range(vocab_size) if i not in special_ids])
            random_ids = allowed[torch.randint(len(allowed), (B, T), generator=gen)]
        masked = input_ids if in_place else input_ids.clone()
        labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
        if labels_everywhere:
            labels = input_ids.clone()
        if labels_at_all_words:
            labels = torch.where(maskable, input_ids, torch.full_like(input_ids, -100))
        p_mask, p_random = split
        masked[chosen & (dice < p_mask)] = mask_id
        to_random = chosen & (dice >= p_mask) & (dice < p_mask + p_random)
        masked[to_random] = random_ids[to_random]
        if labels_replaced:
            labels = torch.where(chosen, masked, torch.full_like(input_ids, -100))
        return masked, labels

    return mask_tokens


def test_masking_factory_without_mistakes_passes():
    assert exercises.check("masking", make_masker()).passed


@pytest.mark.parametrize(
    "bug, words",
    [
        (dict(per_sequence=True), ["once per sequence", "per chosen token"]),
        (dict(specials_chosen=True), ["special tokens were chosen", "[CLS]"]),
        (dict(labels_everywhere=True), ["labels are set at", "-100"]),
        (dict(labels_at_all_words=True), ["every non-special position has a label", "-100"]),
        (dict(bernoulli=True), ["varies from draw to draw", "coin per token", "fixed count"]),
        (dict(no_cap=True), ["max_predictions=20", "cap"]),
        (dict(random_any=True), ["random replacements include special tokens"]),
        (dict(split=(0.1, 0.8)), ["[mask] and random are swapped"]),
        (dict(split=(0.1, 0.1)), ["[mask] and unchanged are swapped"]),
        (dict(split=(1.0, 0.0)), ["every chosen token became [mask]"]),
        (dict(labels_replaced=True), ["replaced token", "original"]),
        (dict(in_place=True), ["in place", "clone"]),
        (dict(count_with_specials=True), ["you count [cls]/[sep]/[pad] in n"]),
        (dict(global_rng=True), ["generator"]),
        (dict(first_k=True), ["not uniform", "never chosen"]),
        (dict(fixed_numbers=True), ["mlm_probability=0.3", "use the arguments"]),
    ],
)
def test_masking_mistakes_are_diagnosed(bug, words):
    failed(exercises.check("masking", make_masker(**bug)), *words)


def test_masking_random_share_drawn_from_the_rest():
    def mask_tokens(input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20):
        masked, labels = masking.mask_tokens(
            input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability, max_predictions
        )
        chosen = labels != -100
        # typical slip: [MASK] with 0.8, then "random with 0.1" of what is left
        undo = chosen & (masked != mask_id)
        masked[undo] = input_ids[undo]
        coin = torch.rand(input_ids.shape, generator=generator) < 0.1
        allowed = torch.tensor([i for i in range(vocab_size) if i not in special_ids])
        pick = allowed[torch.randint(len(allowed), input_ids.shape, generator=generator)]
        masked[undo & coin] = pick[undo & coin]
        return masked, labels

    failed(exercises.check("masking", mask_tokens), "half")


def test_masking_returns_pair_of_right_shape():
    def one_tensor(input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20):
        return input_ids.clone()

    failed(exercises.check("masking", one_tensor), "pair of tensors")


# ---------------------------------------------------------------------------------------------
# nsp_pairs: wrong implementations
# ---------------------------------------------------------------------------------------------


def make_pairer(
    same_doc=False, swapped=False, later=False, itself=False, p_next=0.5, global_rng=False, skip_first=False
):
    def nsp_pairs(documents, rng):
        r = random if global_rng else rng
        pairs = []
        for d, sentences in enumerate(documents):
            for i in range(1 if skip_first else 0, len(sentences) - 1):
                if r.random() < p_next:
                    if itself:
                        b = sentences[i]
                    elif later:
                        b = sentences[r.randrange(i + 1, len(sentences))]
                    else:
                        b = sentences[i + 1]
                    pairs.append((sentences[i], b, 1 if swapped else 0))
                else:
                    if same_doc:
                        other = r.randrange(len(documents))
                    else:
                        other = r.randrange(len(documents) - 1)
                        other += other >= d
                    pairs.append((sentences[i], r.choice(documents[other]), 0 if swapped else 1))
        return pairs

    return nsp_pairs


def test_nsp_factory_without_mistakes_passes():
    assert exercises.check("nsp_pairs", make_pairer()).passed


@pytest.mark.parametrize(
    "bug, words",
    [
        (dict(same_doc=True), ["from a's own document", "another document"]),
        (dict(swapped=True), ["labels are swapped", "0 = isnext"]),
        (dict(later=True), ["not the next sentence", "offsets"]),
        (dict(itself=True), ["b is a itself"]),
        (dict(p_next=0.8), ["notnext", "balanced", "50%"]),
        (dict(p_next=0.35), ["notnext", "balanced"]),
        (dict(global_rng=True), ["rng"]),
        (dict(skip_first=True), ["never an a"]),
    ],
)
def test_nsp_mistakes_are_diagnosed(bug, words):
    failed(exercises.check("nsp_pairs", make_pairer(**bug)), *words)


def test_nsp_strings_must_be_the_input_sentences_and_labels_ints():
    def lower(documents, rng):
        return [(a.upper(), b, lab) for a, b, lab in nsp_exercise.nsp_pairs(documents, rng)]

    def named(documents, rng):
        return [(a, b, "IsNext" if lab == 0 else "NotNext") for a, b, lab in nsp_exercise.nsp_pairs(documents, rng)]

    failed(exercises.check("nsp_pairs", lower), "not one of the sentences")
    failed(exercises.check("nsp_pairs", named), "0 (isnext) or 1 (notnext)")


# ---------------------------------------------------------------------------------------------
# pretraining_loss: wrong implementations
# ---------------------------------------------------------------------------------------------


def ce_parts(mlm_logits, mlm_labels):
    V = mlm_logits.shape[-1]
    return mlm_logits.reshape(-1, V), mlm_labels.reshape(-1)


def loss_all_positions(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    logits, labels = ce_parts(mlm_logits, mlm_labels)
    per = F.cross_entropy(logits, labels, ignore_index=-100, reduction="none")  # 0 at ignored positions
    return per.mean() + F.cross_entropy(nsp_logits, nsp_labels)


def loss_sum(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    logits, labels = ce_parts(mlm_logits, mlm_labels)
    return F.cross_entropy(logits, labels, reduction="sum") + F.cross_entropy(nsp_logits, nsp_labels, reduction="sum")


def loss_no_nsp(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    return F.cross_entropy(*ce_parts(mlm_logits, mlm_labels))


def loss_nsp_swapped(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    return F.cross_entropy(*ce_parts(mlm_logits, mlm_labels)) + F.cross_entropy(nsp_logits, 1 - nsp_labels)


def loss_double_softmax(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    logits, labels = ce_parts(mlm_logits, mlm_labels)
    return F.cross_entropy(logits.softmax(-1), labels) + F.cross_entropy(nsp_logits.softmax(-1), nsp_labels)


def loss_per_row(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    rows = [F.cross_entropy(x[y != -100], y[y != -100]) for x, y in zip(mlm_logits, mlm_labels) if (y != -100).any()]
    return torch.stack(rows).mean() + F.cross_entropy(nsp_logits, nsp_labels)


def loss_average(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    return (F.cross_entropy(*ce_parts(mlm_logits, mlm_labels)) + F.cross_entropy(nsp_logits, nsp_labels)) / 2


def loss_zero_filled(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    logits, labels = ce_parts(mlm_logits, mlm_labels)
    labels[labels == -100] = 0  # in place, and into the loss as a class
    return F.cross_entropy(logits, labels) + F.cross_entropy(nsp_logits, nsp_labels)


def loss_zero_filled_copy(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    logits, labels = ce_parts(mlm_logits, mlm_labels.clone())
    return F.cross_entropy(logits, labels.clamp(min=0)) + F.cross_entropy(nsp_logits, nsp_labels)


def loss_item(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    return (F.cross_entropy(*ce_parts(mlm_logits, mlm_labels)) + F.cross_entropy(nsp_logits, nsp_labels)).item()


def loss_detached(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    return torch.tensor(pretraining_loss.pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels).item())


def loss_no_reduction(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    logits, labels = ce_parts(mlm_logits, mlm_labels)
    return F.cross_entropy(logits, labels, reduction="none") + F.cross_entropy(nsp_logits, nsp_labels)


@pytest.mark.parametrize(
    "student, words",
    [
        (loss_all_positions, ["all b*t", "labelled positions only"]),
        (loss_sum, ["sum the cross-entropies"]),
        (loss_no_nsp, ["nsp term is missing"]),
        (loss_nsp_swapped, ["nsp labels are swapped"]),
        (loss_double_softmax, ["softmax is applied twice"]),
        (loss_per_row, ["per sequence first"]),
        (loss_average, ["average the two losses"]),
        (loss_zero_filled, ["in place"]),
        (loss_zero_filled_copy, ["class (0)", "ignore_index"]),
        (loss_item, ["not a tensor", ".item()"]),
        (loss_detached, ["no gradient"]),
        (loss_no_reduction, ["0-dim"]),
    ],
)
def test_loss_mistakes_are_diagnosed(student, words):
    failed(exercises.check("pretraining_loss", student), *words)


def test_reference_loss_equals_the_lab_model_and_transformers():
    # the checker's first case is the lab model's own loss; the reference equals it there
    what, mlm_logits, mlm_labels, nsp_logits, nsp_labels, lab_loss = pretraining_loss._loss_cases(0)[0]
    assert "BertForPreTraining" in what and lab_loss is not None
    ours = float(pretraining_loss.pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels))
    assert math.isclose(ours, lab_loss, rel_tol=1e-5)
    # transformers' BertForPreTraining: its loss from its own logits, labels -100 ignored, 0 = IsNext
    transformers = pytest.importorskip("transformers")
    from tests.conftest import tiny_config

    cfg = tiny_config()
    hf = transformers.BertForPreTraining(
        transformers.BertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "model_type"})
    ).eval()
    ids = torch.randint(5, cfg.vocab_size, (2, 9), generator=torch.Generator().manual_seed(0))
    labels = torch.full_like(ids, -100)
    labels[0, [1, 4]], labels[1, 6] = ids[0, [1, 4]], ids[1, 6]
    nsp = torch.tensor([0, 1])
    with torch.no_grad():
        out = hf(ids, labels=labels, next_sentence_label=nsp)
    ours = pretraining_loss.pretraining_loss(out.prediction_logits, labels, out.seq_relationship_logits, nsp)
    assert math.isclose(float(ours), float(out.loss), rel_tol=1e-5)


# ---------------------------------------------------------------------------------------------
# adamw: wrong implementations
# ---------------------------------------------------------------------------------------------


def make_adamw(
    bias=True,
    l2=False,
    decay_lr=True,
    decay=True,
    eps_inside=False,
    swap=False,
    defaults=False,
    t0=False,
    rebind=False,
    touch_unused=False,
):
    class StudentAdamW(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                h = self.defaults if defaults else group
                lr, (b1, b2), eps, wd = h["lr"], h["betas"], h["eps"], h["weight_decay"]
                if swap:
                    b1, b2 = b2, b1
                for p in group["params"]:
                    if p.grad is None:
                        if touch_unused:
                            p.mul_(1 - lr * wd)
                        continue
                    state = self.state[p]
                    if not state:
                        state.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                    if not t0:
                        state["t"] += 1
                    t = state["t"]
                    g = p.grad + wd * p if l2 else p.grad
                    state["m"] = b1 * state["m"] + (1 - b1) * g
                    state["v"] = b2 * state["v"] + (1 - b2) * g * g
                    m_hat = state["m"] / (1 - b1**t) if bias else state["m"]
                    v_hat = state["v"] / (1 - b2**t) if bias else state["v"]
                    denom = (v_hat + eps).sqrt() if eps_inside else v_hat.sqrt() + eps
                    new = p * (1 - (lr * wd if decay_lr else wd)) if decay and not l2 else p
                    new = new - lr * m_hat / denom
                    if rebind:
                        p = new
                    else:
                        p.copy_(new)
                    if t0:
                        state["t"] += 1

    return StudentAdamW


def test_adamw_factory_without_mistakes_passes():
    assert exercises.check("adamw", make_adamw()).passed


@pytest.mark.parametrize(
    "bug, words",
    [
        (dict(bias=False), ["bias correction is missing"]),
        (dict(l2=True), ["through the gradient", "l2"]),
        (dict(decay_lr=False), ["not scaled by the learning rate"]),
        (dict(decay=False), ["weight decay is missing"]),
        (dict(eps_inside=True), ["eps is inside the square root"]),
        (dict(swap=True), ["betas are swapped"]),
        (dict(defaults=True), ["self.defaults", "group"]),
        (dict(t0=True), ["nan", "count steps from 1"]),
        (dict(rebind=True), ["in place"]),
        (dict(touch_unused=True), ["no gradient", "p.grad is none"]),
    ],
)
def test_adamw_mistakes_are_diagnosed(bug, words):
    failed(exercises.check("adamw", make_adamw(**bug)), *words)


def test_adamw_accepts_the_efficient_form_with_decay_after():
    """Kingma & Ba's efficient step size with sqrt(v) + eps, decay after the update (Hugging Face's
    former transformers.AdamW) is a correct AdamW too."""

    class EfficientAdamW(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                (b1, b2), lr = group["betas"], group["lr"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    s = self.state[p]
                    if not s:
                        s.update(step=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                    s["step"] += 1
                    s["m"].mul_(b1).add_(p.grad, alpha=1 - b1)
                    s["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                    step_size = lr * math.sqrt(1 - b2 ** s["step"]) / (1 - b1 ** s["step"])
                    p.addcdiv_(s["m"], s["v"].sqrt().add_(group["eps"]), value=-step_size)
                    p.add_(p, alpha=-lr * group["weight_decay"])

    assert exercises.check("adamw", EfficientAdamW).passed


def test_the_checkers_yardstick_equals_torch_adamw():
    """_Variant with no options is torch.optim.AdamW (so the mistakes are replayed on the right base)."""
    for name, make, kwargs, lr_change in adamw._adamw_settings(0):
        a = adamw._run_optimizer(adamw._builder(None), make, kwargs, lr_change, 30, "torch")[2]
        b = adamw._run_optimizer(adamw._builder({}), make, kwargs, lr_change, 30, "variant")[2]
        assert adamw._distance(b, a, atol=1e-12, rtol=1e-9) <= 1, name


# ---------------------------------------------------------------------------------------------
# Notebook demonstrations
# ---------------------------------------------------------------------------------------------


def test_demonstrations_run_with_stubs_and_with_solutions(tmp_path):
    from lab.tokenizer import Tokenizer

    words = "the cat sat on a mat and looked at sea ships".split()
    tok = Tokenizer({w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])})
    stub = {}
    for name in NAMES:
        exec(exercises.stub(name), stub)
    assert "not implemented yet" in masking.show_masking(stub["mask_tokens"], tok, "the cat sat on a mat")
    shown = masking.show_masking(masking.mask_tokens, tok, "the cat sat on a mat", "and looked at sea ships")
    assert "model sees" in shown and "to predict : 2 of" in shown
    docs = [["a one .", "a two .", "a three ."], ["b one .", "b two ."]]
    assert "not implemented yet" in nsp_exercise.show_nsp_pairs(stub["nsp_pairs"], docs)
    assert "3 pairs" in nsp_exercise.show_nsp_pairs(nsp_exercise.nsp_pairs, docs)
    assert "not implemented yet" in adamw.adamw_race(stub["AdamW"], steps=5)
    race = adamw.adamw_race(adamw.AdamW, steps=20).splitlines()
    yours, theirs = ([float(x.split(": ")[1]) for x in line.split(": ", 1)[1].split(", ")] for line in race)
    assert yours == pytest.approx(theirs, abs=2e-4)  # the same losses as torch's AdamW


def test_the_labs_own_masking_passes_the_masking_check():
    """lab.data.instances.mask_tokens (what pre-training uses), called through the exercise's signature."""
    from lab.data.instances import SpecialIds, mask_tokens

    P = masking

    def lab_masking(input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20):
        special = SpecialIds(
            pad_id=P._PAD, cls_id=P._CLS, sep_id=P._SEP, mask_id=mask_id, vocab_size=vocab_size, unk_id=P._UNK
        )
        unmaskable = torch.isin(input_ids, torch.tensor(special_ids))
        return mask_tokens(
            input_ids,
            unmaskable,
            special,
            generator,
            mlm_probability=mlm_probability,
            max_predictions_per_seq=max_predictions,
        )

    assert exercises.check("masking", lab_masking).passed
