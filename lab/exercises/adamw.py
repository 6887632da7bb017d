"""Exercise `adamw` (notebook 3): AdamW, Adam with bias correction and decoupled weight decay, the
optimizer BERT is trained with (Appendix A.2).

The checker runs the student's optimizer and torch.optim.AdamW side by side in three settings; when
the final parameters differ it replays each setting with every typical mistake (_Variant) and names
the one that matches. `adamw_race` is the notebook's demonstration on a small regression.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import core
from .core import Fail


class AdamW(torch.optim.Optimizer):
    """AdamW: Adam with bias correction and DECOUPLED weight decay (Loshchilov & Hutter 2019),
    the optimizer BERT is trained with (Appendix A.2: lr 1e-4, betas (0.9, 0.999), L2 weight
    decay 0.01, which Google's code applies in this decoupled way).

    params: the model's parameters, or a list of param groups (dicts with "params" and their own
            "lr" / "weight_decay" / ...: BERT puts biases and LayerNorm weights in a group with
            weight_decay 0)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter p that has a gradient g = p.grad (skip p.grad is None),
        with its group's lr, (beta1, beta2), eps and weight_decay, and t = this parameter's step
        count, 1 on the first call. Keep m and v (tensors shaped like p, zeros at first) in
        self.state[p]. Change p IN PLACE:

            p = p - lr * weight_decay * p                  (decoupled weight decay)
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            m_hat = m / (1 - beta1 ** t);  v_hat = v / (1 - beta2 ** t)     (bias correction)
            p = p - lr * m_hat / (sqrt(v_hat) + eps)

        Returns closure() when a closure is given, else None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:  # each group has its own lr / betas / eps / weight_decay
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:  # not used by this loss: leave it alone
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)  # m: running mean of the gradient
                    state["exp_avg_sq"] = torch.zeros_like(p)  # v: running mean of its square
                state["step"] += 1
                t, m, v, g = state["step"], state["exp_avg"], state["exp_avg_sq"], p.grad
                # Decoupled weight decay: shrink the weights directly, outside m and v.
                p.mul_(1 - lr * wd)
                m.mul_(beta1).add_(g, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                # Bias correction: m and v start at 0, so early averages are too small;
                # e.g. t = 1, beta1 = 0.9: m = 0.1 g, and m / (1 - 0.9) = g.
                m_hat = m / (1 - beta1**t)
                v_hat = v / (1 - beta2**t)
                p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
        return loss


class _Variant(torch.optim.Optimizer):
    """Adam in the ways it is written, right and wrong (the checker's yardsticks).

    eps: "torch" (sqrt(v_hat) + eps), "efficient" (Kingma & Ba's step size lr * sqrt(1 - b2^t) / (1 - b1^t)
    with sqrt(v) + eps), "inside" (sqrt(v_hat + eps)). decay: "before" / "after" the Adam update (both
    decoupled, lr * wd), "l2" (wd * p added to the gradient), "none", "no_lr" (p -= wd * p), "step_size"
    (p -= bias-corrected step size * wd * p). bias: "both", "none", "m" (only m corrected), "v".
    swap: betas swapped. defaults: every group uses the constructor's values (self.defaults)."""

    def __init__(self, params, lr, betas, eps, weight_decay, opts):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.opts = dict(eps="torch", decay="before", bias="both", swap=False, defaults=False, t0=False) | opts

    @torch.no_grad()
    def step(self):
        o = self.opts
        for group in self.param_groups:
            g_ = self.defaults if o["defaults"] else group
            lr, (b1, b2), eps, wd = g_["lr"], g_["betas"], g_["eps"], g_["weight_decay"]
            if o["swap"]:
                b1, b2 = b2, b1
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                st["t"] += 1
                t, m, v = st["t"], st["m"], st["v"]
                g = p.grad + wd * p if o["decay"] == "l2" else p.grad
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                c1 = 1 - b1**t if o["bias"] in ("both", "m") else 1.0
                c2 = 1 - b2**t if o["bias"] in ("both", "v") else 1.0
                if o["eps"] == "efficient":
                    step_size = lr * math.sqrt(c2) / c1
                    update = step_size * m / (v.sqrt() + eps)
                elif o["eps"] == "inside":
                    step_size, update = lr, lr * (m / c1) / (v / c2 + eps).sqrt()
                else:
                    step_size, update = lr, lr * (m / c1) / ((v / c2).sqrt() + eps)
                if o["decay"] == "before":
                    p.mul_(1 - lr * wd)
                p.sub_(update)
                if o["decay"] == "after":
                    p.mul_(1 - lr * wd)
                elif o["decay"] == "no_lr":
                    p.mul_(1 - wd)
                elif o["decay"] == "step_size":
                    p.mul_(1 - step_size * wd)


_CORRECT = {
    "torch.optim.AdamW": None,
    "decay after the update": dict(decay="after"),
    "Kingma & Ba's efficient form": dict(eps="efficient"),
    "efficient form, decay after": dict(eps="efficient", decay="after"),
}


_MISTAKES = {
    "no_bias": (
        dict(bias="none"),
        "bias correction is missing: m and v start at zero, so divide them by (1 - beta1^t) and (1 - beta2^t), "
        "t = 1, 2, ... counting this parameter's steps",
    ),
    "bias_m_only": (dict(bias="m"), "only m is bias-corrected: divide v by (1 - beta2^t) too"),
    "bias_v_only": (dict(bias="v"), "only v is bias-corrected: divide m by (1 - beta1^t) too"),
    "l2": (
        dict(decay="l2"),
        "weight decay goes through the gradient (g + weight_decay * p, i.e. Adam with L2 regularisation, which "
        "Adam's scaling then distorts): AdamW decays the weights directly, p -= lr * weight_decay * p, outside "
        "m and v",
    ),
    "no_lr": (
        dict(decay="no_lr", eps="torch"),
        "the decay is not scaled by the learning rate (p -= weight_decay * p): AdamW's decay is "
        "p -= lr * weight_decay * p",
    ),
    "step_size": (
        dict(decay="step_size", eps="efficient"),
        "the decay is scaled by the bias-corrected step size instead of the plain learning rate: use "
        "p -= lr * weight_decay * p",
    ),
    "no_decay": (dict(decay="none"), "weight decay is missing: p -= lr * weight_decay * p every step"),
    "eps_inside": (
        dict(eps="inside"),
        "eps is inside the square root (sqrt(v_hat + eps)); it belongs outside: m_hat / (sqrt(v_hat) + eps)",
    ),
    "swap": (dict(swap=True), "betas are swapped: beta1 (0.9) averages the gradient m, beta2 (0.999) its square v"),
    "defaults": (
        dict(defaults=True),
        "you read lr / weight_decay from self.defaults (or values saved in __init__), not from each param group: "
        "BERT's biases and LayerNorm weights sit in a group with weight_decay 0, and a learning-rate schedule "
        "changes group['lr']",
    ),
}


def _adamw_settings(seed: int):
    """(name, make() -> (groups, loss_fn, extra parameter or None), constructor kwargs, lr change at step 50)."""

    def mlp():
        g = torch.Generator().manual_seed(5000 + seed)
        with torch.random.fork_rng():
            torch.manual_seed(5000 + seed)
            net = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)).double()
        unused = nn.Parameter(torch.randn(3, generator=g, dtype=torch.float64))
        X, Y = (
            torch.randn(16, 4, generator=g, dtype=torch.float64),
            torch.randn(16, 2, generator=g, dtype=torch.float64),
        )
        weights = [net[0].weight, net[2].weight, unused]
        biases = [net[0].bias, net[2].bias]
        groups = [{"params": weights}, {"params": biases, "weight_decay": 0.0}]
        return groups, lambda: ((net(X) - Y) ** 2).mean(), unused

    def quadratic(scale):
        def make():
            g = torch.Generator().manual_seed(6000 + seed)
            p1 = nn.Parameter(torch.randn(6, generator=g, dtype=torch.float64))
            p2 = nn.Parameter(torch.randn(2, 3, generator=g, dtype=torch.float64))
            w1, t1 = (
                torch.rand(6, generator=g, dtype=torch.float64) + 0.2,
                torch.randn(6, generator=g, dtype=torch.float64),
            )
            A = torch.randn(3, 3, generator=g, dtype=torch.float64)
            return (
                [p1, p2],
                lambda: scale * ((w1 * (p1 - t1) ** 2).sum() + ((p2 @ A) ** 2).sum() + (p1[:3] * p2[0]).sum()),
                None,
            )

        return make

    return [
        (
            "a small MLP, weights decayed and biases not (two parameter groups)",
            mlp,
            dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01),
            None,
        ),
        (
            "a random quadratic, lr halved after 50 steps (as a schedule would)",
            quadratic(1.0),
            dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-8, weight_decay=0.1),
            0.5,
        ),
        (
            "a quadratic with small gradients (~1e-3) and eps = 1e-3",
            quadratic(1e-3),
            dict(lr=3e-3, betas=(0.9, 0.999), eps=1e-3, weight_decay=0.05),
            None,
        ),
    ]


def _run_optimizer(build, make, kwargs, lr_change, steps, what):
    """Run `steps` steps; returns (initial, after the first step, final) parameter lists and the unused
    parameter (or None). When a parameter turns NaN/inf: final is None and the last item is that step."""
    groups, loss_fn, unused = make()
    params = [p for g in groups for p in (g["params"] if isinstance(g, dict) else [g])]
    initial = [p.detach().clone() for p in params]
    opt = build(groups, kwargs)
    first = None
    for s in range(steps):
        if lr_change is not None and s == steps // 2:
            for g in opt.param_groups:
                g["lr"] = g["lr"] * lr_change
        for p in params:
            p.grad = None
        loss_fn().backward()
        core.call(opt.step, what=what)
        if s == 0:
            first = [p.detach().clone() for p in params]
        if any(not torch.isfinite(p).all() for p in params):
            return initial, first, None, s + 1
    return initial, first, [p.detach().clone() for p in params], unused


def _builder(opts):
    """Build torch.optim.AdamW itself for opts None, else the _Variant with these options."""
    if opts is None:
        return lambda groups, kw: torch.optim.AdamW(groups, **kw)
    return lambda groups, kw: _Variant(groups, **kw, opts=opts)


def _distance(a, b, atol=1e-6, rtol=1e-4) -> float:
    """Largest |a - b| / (atol + rtol |b|) over every parameter: <= 1 means they agree."""
    return max(float(((x - y).abs() / (atol + rtol * y.abs())).max()) for x, y in zip(a, b))


def _student_builder(student):
    """build(groups, kwargs) -> the student's optimizer, which must be a torch.optim.Optimizer."""

    def build_student(groups, kw):
        opt = core.call(student, groups, **kw, what=f"your AdamW(params, lr={kw['lr']}, ...)")
        if not hasattr(opt, "step") or not hasattr(opt, "param_groups"):
            raise Fail("AdamW(...) should build a torch.optim.Optimizer (subclass it and call super().__init__).")
        return opt

    return build_student


def _check_it_ran(initial, first, final, unused, name: str, details: dict) -> None:
    """The parameters stayed finite and the first step changed them."""
    if final is None:
        at = unused  # the step at which the parameters stopped being finite
        cause = (
            "at the very first step: the bias correction probably divides by 1 - beta^0 = 0 (count steps from 1)"
            if at == 1
            else "check for a division by a quantity that can be 0"
        )
        raise Fail(f"Your parameters became NaN or infinite at step {at} ({name}): {cause}.", **details)
    if all(torch.equal(a, b) for a, b in zip(initial, first)):
        raise Fail(
            f"After step() the parameters had not changed ({name}): update them IN PLACE (p.add_(...), "
            "p.mul_(...), p.sub_(...)); `p = p - ...` only rebinds a local name.",
            **details,
        )


def _diagnose_adamw(run, final, initial, first, ref, best: float, name: str, steps: int, details: dict) -> None:
    """Replay the setting with each typical mistake and raise the Fail that names the closest one.
    `run(opts, steps)` runs _Variant(opts) (torch.optim.AdamW for None) on the setting."""
    torch_first = run(None, 1)[1]
    moved = max(float((a - b).abs().max()) for a, b in zip(first, initial))
    moved_ref = max(float((a - b).abs().max()) for a, b in zip(torch_first, initial))
    details.update(first_step_yours=moved, first_step_torch=moved_ref)
    scores = {}
    for key, (opts, _) in _MISTAKES.items():
        _, _, wrong, _ = run(opts, steps)
        if wrong is not None:
            scores[key] = _distance(final, wrong)
    match = min(scores, key=scores.get) if scores else None
    diff = max(float((a - b).abs().max()) for a, b in zip(final, ref["torch.optim.AdamW"]))
    head = (
        f"After {steps} steps on {name} your parameters differ from torch.optim.AdamW's by up to {diff:.2e} "
        f"(the largest change in the first step: yours {moved:.2e}, torch's {moved_ref:.2e})."
    )
    if match is not None and scores[match] <= 1:
        raise Fail(f"{head} They match an AdamW in which {_MISTAKES[match][1]}.", **details, mistake=match)
    if match is not None and scores[match] < 0.05 * best:
        raise Fail(f"{head} They come closest to an AdamW in which {_MISTAKES[match][1]}.", **details, mistake=match)
    raise Fail(
        f"{head} They match none of the typical mistakes. Per parameter and step t (from 1): p -= lr * wd * p; "
        "m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; "
        "p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), "
        "with each group's own lr, betas, eps and weight_decay.",
        **details,
    )


def check_adamw(student, seed: int = 0, steps: int = 100):
    """Check an AdamW class (torch.optim.Optimizer subclass with step()) against torch.optim.AdamW.

    Three settings, `steps` steps each, float64 parameters: a small MLP with two parameter groups
    (weights decayed, biases weight_decay=0) and an unused parameter (grad None: must not change),
    lr 1e-3, betas (0.9, 0.999), eps 1e-6, wd 0.01; a random quadratic, lr 1e-2 halved at step 50
    through param_groups (as a scheduler does), betas (0.8, 0.99), eps 1e-8, wd 0.1; a quadratic
    with gradients ~1e-3 and eps 1e-3 (where eps's place matters), lr 3e-3, wd 0.05. The final
    parameters must agree with torch.optim.AdamW within |diff| <= 1e-6 + 1e-4 |ref| (float32 moments
    pass; every mistake below misses by 15x that or more in at least one setting, seeds 0-2). Also
    accepted: decay after the update, and Kingma & Ba's "efficient" form (lr * sqrt(1 - b2^t) /
    (1 - b1^t) with sqrt(v) + eps, as Hugging Face's former transformers.AdamW).
    On a mismatch the checker replays the setting with each typical mistake (no bias correction,
    L2 through the gradient, decay without lr or with the step size, no decay, eps inside the sqrt,
    betas swapped, group hyperparameters ignored) and names the one that matches.
    Options: seed (the problems' random draws), steps.
    """
    what = "your AdamW.step()"
    for name, make, kwargs, lr_change in _adamw_settings(seed):

        def run(opts, n, make=make, kwargs=kwargs, lr_change=lr_change):
            return _run_optimizer(_builder(opts), make, kwargs, lr_change, n, what)

        initial, first, final, unused = _run_optimizer(_student_builder(student), make, kwargs, lr_change, steps, what)
        details = dict(setting=name, **{k: v for k, v in kwargs.items()}, steps=steps)
        _check_it_ran(initial, first, final, unused, name, details)
        ref = {}
        for label, opts in _CORRECT.items():
            _, _, ref[label], ref_unused = run(opts, steps)
            if min(_distance(final, r) for r in ref.values()) <= 1:
                break
        if unused is not None and not torch.equal(unused.detach(), ref_unused.detach()):
            raise Fail(
                f"A parameter with no gradient (p.grad is None: not used by the loss) changed ({name}): skip such "
                "parameters entirely (`if p.grad is None: continue`), weight decay included, as torch.optim does.",
                **details,
            )
        best = min(_distance(final, r) for r in ref.values())
        if best <= 1:
            continue
        _diagnose_adamw(run, final, initial, first, ref, best, name, steps, details)
    return (
        f"AdamW agrees with torch.optim.AdamW after {steps} steps in 3 settings (two parameter groups, an unused "
        "parameter, a changed lr, small gradients with a large eps)."
    )


def adamw_race(adamw_class, steps: int = 200, seed: int = 0) -> str:
    """Train one small regression with the student's AdamW and with torch.optim.AdamW; the losses side by side."""
    lines = []
    for name, cls in (("yours", adamw_class), ("torch", torch.optim.AdamW)):
        torch.manual_seed(seed)
        g = torch.Generator().manual_seed(seed)
        net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
        X = torch.randn(64, 8, generator=g)
        y = X[:, :1] * 2 - X[:, 1:2] + 0.1 * torch.randn(64, 1, generator=g)
        opt, problem = core.attempt(cls, net.parameters(), lr=1e-2, eps=1e-6, weight_decay=0.01, what="AdamW(...)")
        if problem:
            return f"AdamW: {problem}"
        losses = []
        for s in range(steps):
            opt.zero_grad()
            loss = ((net(X) - y) ** 2).mean()
            loss.backward()
            _, problem = core.attempt(opt.step, what="AdamW.step()")
            if problem:
                return f"AdamW: {problem}"
            if s in (0, steps // 10, steps // 2, steps - 1):
                losses.append(f"step {s + 1}: {loss.item():.4f}")
        lines.append(f"{name:>5}: " + ", ".join(losses))
    return "\n".join(lines)


EXERCISE = core.Exercise(
    name="adamw",
    title="AdamW: bias correction and decoupled weight decay",
    group="pretraining",
    checker=check_adamw,
    solution=AdamW,
    imports="import torch\n",
    given=("__init__",),
    hint=(
        "Loop `for group in self.param_groups:` then `for p in group['params']:` and read lr, betas, eps, "
        "weight_decay from `group`, not from self.defaults. On a parameter's first step set "
        "`self.state[p] = {'step': 0, 'm': torch.zeros_like(p), 'v': torch.zeros_like(p)}`, then add 1 to its step. "
        "In-place updates: `p.mul_(1 - lr * wd)`, `m.mul_(beta1).add_(g, alpha=1 - beta1)`, "
        "`v.mul_(beta2).addcmul_(g, g, value=1 - beta2)`, `p.sub_(lr * m_hat / (v_hat.sqrt() + eps))`."
    ),
)
