"""Configuration: `BertConfig` (the model's shape, with Hugging Face config.json field names)
and its named presets.

    cfg = BertConfig.preset("mini")            # Google's BERT-Mini: L=4, H=256, A=4
    cfg = BertConfig.preset("base", vocab_size=8192)
    cfg.save("runs/x/config.json"); BertConfig.load("runs/x")

The presets follow the names of Google's released models (Turc et al. 2019 for the small ones,
Devlin et al. 2019 for base and large); the feed-forward size is always 4H.  `num_parameters()`
counts what the paper counts (the encoder with its embeddings and pooler): base 110M, large 335M.
Training configurations live next to the code that uses them
(lab.training.train, pretrain, finetune);
each of their fields is a `setting(default, "what it means")`, whose text `python -m lab ... --help`
shows.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from lab.files import CONFIG_NAME


def setting(default=dataclasses.MISSING, help: str = ""):
    """A field of a settings dataclass with its one-line meaning, declared once: the reader sees
    it beside the default, and the command line (lab.__main__) shows it as the option's help.

        lr: float = setting(1e-4, "peak learning rate")        # --lr, "peak learning rate (default: 0.0001)"
        model: str = setting(help="HF-layout BERT directory")   # no default: a required option
    """
    return dataclasses.field(default=default, metadata={"help": help})


# name -> (layers L, hidden H, heads A)
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}
ACTIVATIONS = ("gelu", "gelu_new", "relu")  # gelu = exact erf form, as in BERT
# What changed since BERT (lab.modern): each a setting of BertConfig, BERT's choice first
NORM_POSITIONS = ("post", "pre")  # LayerNorm after each residual sum (BERT) or before each sub-layer
FEED_FORWARDS = ("mlp", "glu")  # act(x W1) W2 (BERT) or (act(x Wa) * x Wb) W2 (GeGLU with GELU)
POSITION_TYPES = ("absolute", "rotary")  # a learned table added to the input, or rotated q and k
SWITCHES = (  # the BertConfig fields of those changes: all at their defaults = BERT as in 2018
    "norm_position",
    "feed_forward",
    "position_embedding_type",
    "rope_theta",
    "local_rope_theta",
    "bias",
    "local_attention",
    "global_attn_every_n_layers",
)


@dataclass
class BertConfig:
    vocab_size: int = 30522  # WordPiece vocabulary (bert-base-uncased: 30522)
    hidden_size: int = 768  # H: width of every token vector
    num_hidden_layers: int = 12  # L: Transformer encoder layers
    num_attention_heads: int = 12  # A: heads per layer; H / A = size of one head
    intermediate_size: int = 3072  # feed-forward inner size, 4H in every BERT
    hidden_act: str = "gelu"  # GELU, erf form
    hidden_dropout_prob: float = 0.1  # dropout on embeddings and sub-layer outputs
    attention_probs_dropout_prob: float = 0.1  # dropout on attention probabilities
    max_position_embeddings: int = 512  # longest sequence (learned position table)
    type_vocab_size: int = 2  # segments A and B (0: no segment embeddings, as in ModernBERT)
    layer_norm_eps: float = 1e-12  # BERT's LayerNorm epsilon
    initializer_range: float = 0.02  # std of the truncated-normal-like init
    pad_token_id: int = 0  # [PAD] id (its embedding row stays zero)
    id2label: dict[int, str] | None = None  # classification labels; None -> 2 generic labels
    label2id: dict[str, int] | None = None  # inverse of id2label
    classifier_dropout: float | None = None  # None -> hidden_dropout_prob (as transformers)
    classifier_layers: int = 1  # classifier input: 1 = pooled [CLS] (BERT); N > 1 =
    # [CLS] of the last N layers, concatenated (feature-based)
    # -- what changed since BERT (lab.modern); the defaults are BERT's -------------------
    norm_position: str = "post"  # "pre": LayerNorm before each sub-layer, a final norm after the last
    feed_forward: str = "mlp"  # "glu": gated feed-forward, intermediate_size is the gate's width
    position_embedding_type: str = "absolute"  # "rotary": RoPE on q and k, no position table
    rope_theta: float = 10000.0  # rotary base of the global layers (ModernBERT: 160,000)
    local_rope_theta: float = 10000.0  # rotary base of the local layers
    bias: bool = True  # False: linear and norm layers without biases (the output's word bias stays)
    local_attention: int = 0  # > 0: window of the local layers (a token sees +-local_attention/2)
    global_attn_every_n_layers: int = 1  # layer i attends globally when i % n == 0, else locally

    def __post_init__(self):
        # config.json stores dict keys as strings: {"0": "negative"} -> {0: "negative"}
        if self.id2label is not None:
            self.id2label = {int(k): str(v) for k, v in self.id2label.items()}
        if self.label2id is not None:
            self.label2id = {str(k): int(v) for k, v in self.label2id.items()}
        if self.id2label is None and self.label2id is not None:
            self.id2label = {v: k for k, v in self.label2id.items()}
        if self.id2label is None:
            self.id2label = {0: "LABEL_0", 1: "LABEL_1"}
        if self.label2id is None:
            self.label2id = {v: k for k, v in self.id2label.items()}
        self.validate()

    # -- derived -------------------------------------------------------------------------
    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        problems = []
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if not (isinstance(self.type_vocab_size, int) and self.type_vocab_size >= 0):
            problems.append(f"type_vocab_size must be 0 (no segments) or more, got {self.type_vocab_size!r}")
        if not problems and self.hidden_size % self.num_attention_heads:
            problems.append(
                f"hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        if self.hidden_act not in ACTIVATIONS:
            problems.append(f"hidden_act {self.hidden_act!r} is not one of {ACTIVATIONS}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                problems.append(f"{name} must be in [0, 1), got {getattr(self, name)!r}")
        if not (0 <= self.pad_token_id < self.vocab_size if isinstance(self.vocab_size, int) else True):
            problems.append(
                f"pad_token_id {self.pad_token_id} is outside the vocabulary (vocab_size {self.vocab_size})"
            )
        if not problems and not (
            isinstance(self.classifier_layers, int) and 1 <= self.classifier_layers <= self.num_hidden_layers
        ):
            problems.append(
                f"classifier_layers must be between 1 and num_hidden_layers "
                f"({self.num_hidden_layers}), got {self.classifier_layers!r}"
            )
        problems += self._switch_problems()
        if self.layer_norm_eps <= 0:
            problems.append(f"layer_norm_eps must be positive, got {self.layer_norm_eps}")
        if sorted(self.id2label) != list(range(len(self.id2label))):
            problems.append(f"id2label keys must be 0..K-1, got {sorted(self.id2label)}")
        if {v: k for k, v in self.id2label.items()} != self.label2id:
            problems.append("label2id is not the inverse of id2label")
        if problems:
            raise ValueError("invalid BertConfig: " + "; ".join(problems))

    def _switch_problems(self) -> list[str]:
        """What cannot be built among the settings of lab.modern, each naming its settings."""
        problems = []
        for name, allowed in (
            ("norm_position", NORM_POSITIONS),
            ("feed_forward", FEED_FORWARDS),
            ("position_embedding_type", POSITION_TYPES),
        ):
            if getattr(self, name) not in allowed:
                problems.append(f"{name} {getattr(self, name)!r} is not one of {allowed}")
        if self.position_embedding_type == "rotary" and self.hidden_size % self.num_attention_heads == 0:
            if self.head_size % 2:
                problems.append(
                    f"rotary positions turn pairs of numbers: the head size hidden_size / "
                    f"num_attention_heads = {self.head_size} must be even"
                )
        if not (isinstance(self.local_attention, int) and self.local_attention >= 0):
            problems.append(f"local_attention must be 0 (off) or a window of tokens, got {self.local_attention!r}")
        elif self.local_attention > self.max_position_embeddings:
            problems.append(
                f"local_attention ({self.local_attention}) is larger than the longest sequence, "
                f"max_position_embeddings ({self.max_position_embeddings}): no layer would be local"
            )
        if not (isinstance(self.global_attn_every_n_layers, int) and self.global_attn_every_n_layers >= 1):
            problems.append(
                f"global_attn_every_n_layers must be a positive integer, got {self.global_attn_every_n_layers!r}"
            )
        elif self.local_attention and self.global_attn_every_n_layers == 1:
            problems.append(
                f"local_attention={self.local_attention} with global_attn_every_n_layers=1: every layer "
                f"is global, so no layer uses the window; set global_attn_every_n_layers to 2 or more"
            )
        return problems

    def is_global_layer(self, index: int) -> bool:
        """Does layer `index` (from 0) attend to every token? Layer 0 always does."""
        return not self.local_attention or index % self.global_attn_every_n_layers == 0

    @property
    def is_bert(self) -> bool:
        """True for the 2018 architecture, which transformers reads as model_type 'bert'."""
        return all(getattr(self, f.name) == f.default for f in dataclasses.fields(self) if f.name in SWITCHES)

    # -- presets -------------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, **overrides) -> BertConfig:
        """Google's model shapes by name: tiny, mini, small, medium, base, large."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
        layers, hidden, heads = PRESETS[name]
        values = dict(
            num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads, intermediate_size=4 * hidden
        )
        values.update(overrides)
        return cls(**values)

    def with_labels(self, labels) -> BertConfig:
        """A copy with classification labels (a list of names, in id order)."""
        labels = [str(x) for x in labels]
        return dataclasses.replace(
            self, id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)}
        )

    def num_parameters(self, pooler: bool = True) -> int:
        """Parameters of the encoder (embeddings + L layers + pooler), computed from the shape."""
        H, I, L, b = self.hidden_size, self.intermediate_size, self.num_hidden_layers, int(self.bias)
        positions = self.max_position_embeddings if self.position_embedding_type == "absolute" else 0
        norm = (1 + b) * H  # a LayerNorm: its gain, and its bias unless bias=False
        emb = (self.vocab_size + positions + self.type_vocab_size) * H + norm
        gate = 2 if self.feed_forward == "glu" else 1  # GeGLU's first matrix makes the value and the gate
        layer = 4 * (H * H + b * H) + (H * gate * I + b * gate * I) + (I * H + b * H) + 2 * norm
        # pre-norm moves each layer's two norms before its sub-layers; layer 0's first is the
        # embeddings' own, and a final norm follows the last layer: the count stays the same
        return emb + L * layer + ((H * H + b * H) if pooler else 0)

    # -- config.json ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["id2label"] = {str(k): v for k, v in self.id2label.items()}
        # "bert" lets transformers' AutoConfig read it; a model with any change of lab.modern is
        # not a 2018 BERT, and "bert-lab" stops transformers from reading it as one
        d["model_type"] = "bert" if self.is_bert else "bert-lab"
        return d

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> BertConfig:
        if not isinstance(d, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(d).__name__}")
        if d.get("model_type", "bert") not in ("bert", "bert-lab"):
            raise ValueError(
                f"{source}: model_type is {d['model_type']!r}; the lab builds BERT ('bert'), "
                f"BERT with the changes of lab.modern ('bert-lab') and ModernBERT ('modernbert')"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in names}
        if "id2label" not in d and "label2id" not in d and "num_labels" in d:
            kwargs["id2label"] = {i: f"LABEL_{i}" for i in range(int(d["num_labels"]))}
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    def save(self, path) -> None:
        path = Path(path)
        if path.is_dir():
            path = path / CONFIG_NAME
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path) -> BertConfig:
        path = Path(path)
        if path.is_dir():
            path = path / CONFIG_NAME
        if not path.is_file():
            raise FileNotFoundError(f"no {CONFIG_NAME} at {path}")
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path} is not valid JSON: {e}") from None
        return cls.from_dict(d, source=str(path))

    def summary(self) -> str:
        return (
            f"BERT L={self.num_hidden_layers} H={self.hidden_size} A={self.num_attention_heads} "
            f"vocab={self.vocab_size} max_len={self.max_position_embeddings} "
            f"({self.num_parameters() / 1e6:.1f}M encoder parameters)"
        )
