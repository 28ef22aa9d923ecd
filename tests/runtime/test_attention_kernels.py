"""Where shapes vary (training, validation, beam search, parsing), a GPU's attention leaves cuDNN's
kernel out, so no execution plan is built per new shape; elsewhere, and on a CPU, torch chooses."""

import random

import pytest
import torch
import torch.nn.functional as F
from nltk import Tree
from torch.nn.attention import SDPBackend, sdpa_kernel

from annotated_transformer import Transformer
from annotated_transformer.chapters import constituency_parsing as parsing
from annotated_transformer.chapters.constituency_parsing.curve import _teacher_forced_nll
from annotated_transformer.chapters.translation_results import table2
from annotated_transformer.data import train_tokenizer
from annotated_transformer.data.batching import collate_pairs, collate_sources
from annotated_transformer.evaluation.scoring import translate
from annotated_transformer.model.config import preset
from annotated_transformer.model.decoding import DecodeSettings
from annotated_transformer.runtime import attention_kernels
from annotated_transformer.training.fit import build_model
from annotated_transformer.training.teacher_forcing import batch_loss, teacher_forced_loss
from tests.support.training import VOCAB, copy_pairs, tiny_profile

BACKENDS = torch.backends.cuda


def enabled() -> dict:
    return {
        "cudnn": BACKENDS.cudnn_sdp_enabled(),
        "flash": BACKENDS.flash_sdp_enabled(),
        "efficient": BACKENDS.mem_efficient_sdp_enabled(),
        "math": BACKENDS.math_sdp_enabled(),
    }


ALL_ON = {"cudnn": True, "flash": True, "efficient": True, "math": True}


def test_on_a_gpu_every_backend_but_cudnns_and_the_flags_come_back(monkeypatch):
    monkeypatch.delenv(attention_kernels.ENVIRONMENT, raising=False)
    assert enabled() == ALL_ON
    with attention_kernels.for_varying_shapes(torch.device("cuda")):
        assert enabled() == {**ALL_ON, "cudnn": False}
    assert enabled() == ALL_ON
    assert "without cuDNN's attention" in attention_kernels.describe("cuda")
    # a backend someone switched off stays off inside, and cuDNN's comes back as it was
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION]):
        with attention_kernels.for_varying_shapes("cuda"):
            assert enabled() == {
                "cudnn": False,
                "flash": False,
                "efficient": False,
                "math": True,
            }
        assert enabled()["cudnn"]


def test_on_a_cpu_nothing_changes(monkeypatch):
    monkeypatch.delenv(attention_kernels.ENVIRONMENT, raising=False)
    with attention_kernels.for_varying_shapes("cpu"):
        assert enabled() == ALL_ON
    assert "off a GPU" in attention_kernels.describe("cpu")


def test_the_environment_and_allow_cudnn_attention_keep_cudnn(monkeypatch):
    monkeypatch.setenv(attention_kernels.ENVIRONMENT, "1")
    with attention_kernels.for_varying_shapes("cuda"):
        assert enabled() == ALL_ON
    assert "AT_CUDNN_ATTENTION=1" in attention_kernels.describe("cuda")
    # allow_cudnn_attention overrides the environment either way, and ends with its block
    with attention_kernels.allow_cudnn_attention(False):
        with attention_kernels.for_varying_shapes("cuda"):
            assert not enabled()["cudnn"]
    monkeypatch.delenv(attention_kernels.ENVIRONMENT)
    with attention_kernels.allow_cudnn_attention():
        with attention_kernels.for_varying_shapes("cuda"):
            assert enabled() == ALL_ON
    with attention_kernels.for_varying_shapes("cuda"):
        assert not enabled()["cudnn"]


@pytest.fixture
def as_on_a_gpu(monkeypatch):
    """Every varying-shape path behaves as on a GPU: the context it asks for, for the device its
    tensors are on (checked to be the model's, here the CPU), switches cuDNN's attention off. Each
    SDPA call records whether cuDNN's attention was enabled when it ran."""

    def as_if_cuda(device):
        assert torch.device(device).type == "cpu", device  # the model's device, passed on
        return attention_kernels.cudnn_attention_off()

    monkeypatch.setattr(attention_kernels, "for_varying_shapes", as_if_cuda)
    seen = []
    fused = F.scaled_dot_product_attention

    def recording(*args, **kwargs):
        seen.append(BACKENDS.cudnn_sdp_enabled())
        return fused(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    return seen


def _model(vocab: int, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", dropout=0.0), vocab, vocab).eval()


def test_the_training_step_and_validation_attend_without_cudnn(as_on_a_gpu):
    config = tiny_profile().model_config()
    pairs = copy_pairs(6, 0)
    src, tgt = collate_pairs(pairs, config.pad_id, config.bos_id, config.eos_id)
    model = _model(VOCAB)
    batch_loss(model, src, tgt, smoothing=0.1, pad_id=config.pad_id)
    assert as_on_a_gpu and not any(as_on_a_gpu)
    as_on_a_gpu.clear()
    teacher_forced_loss(model, pairs, batch_tokens=64)  # validation
    assert as_on_a_gpu and not any(as_on_a_gpu)


def test_translation_attends_without_cudnn(as_on_a_gpu):
    words = "a man dog runs in the park".split()
    tokenizer = train_tokenizer(
        [" ".join(words[i:] + words[:i]) for i in range(50)], vocab_size=30
    )
    model = _model(tokenizer.vocab_size)
    translate(model, tokenizer, ["a man runs", "dog"], beam_size=2, max_len_b=4)
    translate(model, tokenizer, ["a man runs"], beam_size=1, max_len_b=4)
    assert as_on_a_gpu and not any(as_on_a_gpu)
    as_on_a_gpu.clear()
    for beam_size in (
        1,
        2,
    ):  # the fixed-shape decoders, whose shapes change batch to batch
        translate(
            model, tokenizer, ["a man", "dog"], beam_size=beam_size, cuda_graphs=True
        )
    assert as_on_a_gpu and not any(as_on_a_gpu)


def test_parsing_and_chapter_05s_cache_timing_attend_without_cudnn(as_on_a_gpu):
    trees = [Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ runs)))")]
    vocabs = parsing.ParserVocabularies.from_trees(trees, min_count=1)
    model = build_model(preset("tiny", dropout=0.0), vocabs.sizes, seed=0).eval()
    parsing.parse_sentences(
        model, vocabs, [["the", "dog", "runs"]], beam_size=2, extra_length=4
    )
    assert as_on_a_gpu and not any(as_on_a_gpu)
    as_on_a_gpu.clear()
    pairs = [(vocabs.source.encode(t.leaves()), [5, 6, 7]) for t in trees]
    _teacher_forced_nll(model, pairs)  # chapter 07's own-sentence check
    assert as_on_a_gpu and not any(as_on_a_gpu)
    as_on_a_gpu.clear()
    rng = random.Random(0)
    sources = collate_sources(
        [[rng.randrange(4, VOCAB) for _ in range(5)] for _ in range(2)]
    )
    decoding = DecodeSettings(beam_size=2, max_len_b=3)
    rows = table2.time_cache(_model(VOCAB), sources, decoding)
    assert len(rows) == 2 and as_on_a_gpu and not any(as_on_a_gpu)
