"""Issue 40, item 3: any object with .encode(list[str]) is an encoder (with the sentence-transformers and MTEB
keyword hints it names), a bare transformers model is refused saying what to pass, and an encoder's own error
or bad output is raised at the call with the task and the batch."""
from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import pytest

import usebench
from usebench.errors import BenchError, EncoderError

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def vectors(texts):
    return np.array([[len(t), t.count("e") + 1.0, 1.0] for t in texts])


class Plain:
    """Only ``encode(sentences)``: called in batches of batch_size."""

    def __init__(self):
        self.calls = []

    def encode(self, sentences):
        self.calls.append(list(sentences))
        return vectors(sentences)


class SentenceTransformersLike:
    def __init__(self):
        self.kwargs = []

    def encode(self, sentences, batch_size=32, show_progress_bar=None, convert_to_numpy=True, **kwargs):
        self.kwargs.append({"n": len(sentences), "batch_size": batch_size, "show_progress_bar": show_progress_bar,
                            "convert_to_numpy": convert_to_numpy, **kwargs})
        return vectors(sentences)


class MtebOneLike:
    """MTEB 1.x's protocol: ``encode(sentences, *, task_name, prompt_type=None, **kwargs)``."""

    mteb_model_meta = type("Meta", (), {"name": "org/mteb-like"})()

    def __init__(self):
        self.task_names = []

    def encode(self, sentences, *, task_name, prompt_type=None, **kwargs):
        self.task_names.append(task_name)
        return vectors(sentences)


class NeedsMetadata:
    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, **kwargs):
        raise AssertionError("never called")


def test_an_object_with_encode_is_an_encoder():
    plain = Plain()
    frame = usebench.evaluate(plain, "stsb", data_root=ASSETS, name="plain", batch_size=3, show_progress=False)
    ref = usebench.evaluate(vectors, "stsb", data_root=ASSETS, name="fn", show_progress=False)
    assert frame["value"].tolist() == ref["value"].tolist()
    assert max(len(c) for c in plain.calls) == 3


def test_the_sentence_transformers_and_mteb_keyword_hints():
    st = SentenceTransformersLike()
    usebench.evaluate(st, "stsb", data_root=ASSETS, name="st-like", batch_size=4, show_progress=False)
    (call,) = st.kwargs  # it batches itself: one call per task, with its keywords
    assert call["batch_size"] == 4 and call["show_progress_bar"] is False and call["convert_to_numpy"] is True
    mteb = MtebOneLike()
    frame = usebench.evaluate(mteb, ["stsb", "twitterpara"], data_root=ASSETS, show_progress=False)
    assert set(mteb.task_names) == {"STSBenchmark", "TwitterURLCorpus"} and set(frame["model"]) == {"org/mteb-like"}
    with pytest.raises(TypeError, match=r"NeedsMetadata.encode needs task_metadata, hf_split, hf_subset.*wrap it"):
        usebench.evaluate(NeedsMetadata(), "stsb", data_root=ASSETS, name="x")


def test_a_bare_transformers_model_is_refused_saying_what_to_pass():
    from transformers import BertConfig, BertModel

    bert = BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=16))
    with pytest.raises(TypeError, match=r"BertModel is a torch module .* pooling='mean'.* SentenceTransformer"):
        usebench.evaluate(bert, "stsb", data_root=ASSETS, name="hf")


def test_an_encoders_own_error_names_the_task_and_batch_and_is_raised_at_the_call():
    calls = []

    def broken(texts):
        calls.append(texts)
        if len(calls) == 3:
            raise ValueError("my encoder broke")
        return vectors(texts)

    with pytest.raises(EncoderError) as caught:
        usebench.evaluate(broken, ["twitterpara", "stsb"], data_root=ASSETS, name="broken", batch_size=2,
                          show_progress=False)
    message = str(caught.value)
    assert message.startswith("model 'broken' raised ValueError: my encoder broke (task ")
    assert "(task twitterpara, batch 3 of " in message and ": 2 texts, the first " in message
    assert isinstance(caught.value.__cause__, ValueError)  # the model's own exception, with its traceback
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert [f.name for f in frames][-1] == "evaluate" and len(frames) <= 2  # the test, then evaluate


@pytest.mark.parametrize("output, error, message", [
    (lambda t: None, TypeError, r"returned None \(task stsb, batch 1 of 1: 8 texts"),
    (lambda t: np.ones(len(t)), ValueError, r"returned shape \(8,\) for 8 texts \(task stsb"),
])
def test_a_bad_output_is_a_python_error_naming_the_task(output, error, message):
    with pytest.raises(error, match=message) as caught:
        usebench.evaluate(output, "stsb", data_root=ASSETS, name="bad", show_progress=False)
    assert isinstance(caught.value, BenchError)
