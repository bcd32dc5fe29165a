"""``stop_at_step``: a run truncated inside its budget keeps the budget's LR schedule (the paper's schedule,
truncated: the laptop recipe's one policy), and a run stopped at step 0 exports its start untrained (the step-0
counterpart of a method's own pooling)."""
from __future__ import annotations

import json

import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.errors import ConfigError
from usebench.registry import METHODS
from usebench.train.loop import check_trainable, train
from usebench.train.optim import lr_multiplier
from usebench.train.sampling import run_steps
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


def _log(path) -> list[dict]:
    return [json.loads(line) for line in (path / "log.jsonl").read_text().splitlines() if '"loss"' in line]


def _weights(checkpoint) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "model.safetensors"))


def test_a_truncated_run_takes_the_first_steps_of_the_whole_budgets_schedule(tiny_bert_dir, tmp_path):
    """MLM's schedule (warm-up then linear decay) over a 40-step budget with 8 warm-up steps, stopped after 12:
    the LR of each step is the 40-step schedule's (HF's linear warm-up and decay, computed here by hand), not a
    12-step schedule squeezed into the run."""
    method = METHODS.get("mlm")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=40, warmup_steps=8, stop_at_step=12, log_every=1,
                      save_every=0, max_length=16)
    with one_thread():
        out = train(method, cfg, toy_corpus(64), tmp_path / "a", seed=0, show_progress=False, device="cpu")
    assert out.steps == 12
    lrs = [line["lr"] for line in _log(tmp_path / "a")]
    # the lr logged with step k (1-based) is the one it took: HF's multiplier of its 0-based index j = k - 1,
    # j / 8 in the warm-up, then (40 - j) / 32
    by_hand = [cfg.lr * (j / 8 if j < 8 else (40 - j) / 32) for j in range(12)]
    assert lrs == pytest.approx(by_hand, rel=1e-9)
    assert json.loads((tmp_path / "a" / "checkpoint" / "method.json").read_text())["steps"] == 12
    # a 12-step schedule (the budget compressed) would decay to 0 by step 12; the truncated one does not
    squeezed = lr_multiplier(cfg, 12)
    assert lrs[-1] != pytest.approx(cfg.lr * squeezed(11)) and lrs[-1] > 0.8 * cfg.lr


def test_a_truncated_run_has_the_weights_of_the_whole_run_at_that_step(tiny_bert_dir, tmp_path):
    """Stopping at step 5 of 10 leaves the weights the 10-step run had after its 5th step (same batches, same
    schedule): the truncation changes when the run ends, nothing before."""
    method = METHODS.get("tsdae")
    corpus = toy_corpus(32)
    cut = tiny_config(method, tiny_bert_dir, max_steps=10, stop_at_step=5, save_every=0, max_length=16)
    whole = tiny_config(method, tiny_bert_dir, max_steps=10, save_every=5, max_length=16)
    state = {}

    def keep_state(step: int) -> None:
        if step == 5:
            state.update(torch.load(tmp_path / "b" / "train_state" / "state.pt", weights_only=False)["module"])

    with one_thread():
        a = train(method, cut, corpus, tmp_path / "a", seed=1, show_progress=False, device="cpu")
        train(method, whole, corpus, tmp_path / "b", seed=1, show_progress=False, device="cpu", on_step=keep_state)
    ours = _weights(a.checkpoint)
    theirs = {k.removeprefix("encoder.model."): v for k, v in state.items() if k.startswith("encoder.model.")}
    shared = [k for k in ours if k in theirs]
    assert len(shared) > 10
    for k in shared:
        torch.testing.assert_close(ours[k], theirs[k], rtol=0, atol=0, msg=k)


def test_a_run_stopped_at_step_zero_exports_the_start_untrained(tiny_bert_dir, tmp_path):
    method = METHODS.get("tsdae")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=10, stop_at_step=0, max_length=16)
    with one_thread():
        out = train(method, cfg, toy_corpus(32), tmp_path / "a", seed=0, show_progress=False, device="cpu")
    assert out.steps == 0 and not (tmp_path / "a" / "log.jsonl").exists()
    start = _weights(tiny_bert_dir)
    ours = _weights(out.checkpoint)
    for k in ours:
        torch.testing.assert_close(ours[k], start[k], rtol=0, atol=0, msg=k)
    meta = json.loads((out.checkpoint / "method.json").read_text())
    assert meta["steps"] == 0 and meta["pooling"] == "cls"


def test_a_simcse_step_zero_export_keeps_the_seeds_fresh_mlp_the_trained_run_starts_from(tiny_bert_dir, tmp_path):
    """SimCSE's MLP is new at step 0: the step-0 export carries the draw of its seed, the same MLP the seed's
    training run starts from (seeded before the module is built), and another seed draws another one."""
    from safetensors.torch import load_file

    from usebench.train.loop_state import setup_run
    from usebench.train.runtime import Dist

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=10, stop_at_step=0, batch_size=4, max_length=16,
                      mlp_only_train=False, pooling="cls", variant="official")
    mlps = []
    with one_thread():
        for seed in (0, 1):
            out = train(method, cfg, toy_corpus(32), tmp_path / f"s{seed}", seed=seed, show_progress=False,
                        device="cpu")
            mlps.append(load_file(str(out.checkpoint / "2_Dense" / "model.safetensors"))["linear.weight"])
        run = setup_run(method, cfg.replace(stop_at_step=None), toy_corpus(32), 1, Dist(), torch.device("cpu"), 10,
                        tmp_path / "x", "h", None)
    torch.testing.assert_close(mlps[1], run.module.mlp[0].weight.detach(), rtol=0, atol=0)
    assert not torch.equal(mlps[0], mlps[1])


def test_bertflow_stopped_at_step_zero_exports_the_flow_after_actnorms_init_on_its_first_batch(tiny_bert_dir,
                                                                                             tmp_path):
    """BERT-flow's export needs ActNorm's data-dependent init: at step 0 the first batch passes once (no update),
    so z is u standardised per dimension on that batch (zero-initialised couplings are identities)."""
    from usebench.eval.encoder import HFEncoder
    from usebench.train.batches import collate_step

    method = METHODS.get("bertflow")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=10, stop_at_step=0, ddi_batch_size=16, max_length=16)
    corpus = toy_corpus(32)
    with one_thread():
        out = train(method, cfg, corpus, tmp_path / "a", seed=2, show_progress=False, device="cpu")
        module = method.build(cfg, torch.device("cpu"))
        module.eval()  # u of the same batch, without dropout, to compare with the export's
        batch = collate_step(method, cfg, module.tokenizer, corpus, 0, 2)
        idx = method.batch_indices(cfg, len(corpus), 0, 2)
        z = HFEncoder(str(out.checkpoint), show_progress=False).encode([corpus[i] for i in idx])
    assert batch["input_ids"].shape[0] == z.shape[0] == 16 and z.shape[1] == module.encoder.dim
    # standardised on the DDI batch (u with dropout on there, so only approximately here): mean ~0, std ~1 per dim
    assert abs(float(z.mean())) < 0.2 and 0.5 < float(z.std(axis=0).mean()) < 1.5


def test_stop_at_step_must_not_be_negative_and_caps_the_planned_steps(tiny_bert_dir):
    method = METHODS.get("tsdae")
    with pytest.raises(ConfigError, match="stop_at_step must be >= 0"):
        tiny_config(method, tiny_bert_dir, stop_at_step=-1)
    cfg = tiny_config(method, tiny_bert_dir, max_steps=100, stop_at_step=7)
    assert check_trainable(method, cfg, toy_corpus(64)) == 7
    assert run_steps(method, cfg, 64) == 7 and method.total_steps(cfg, 64) == 100
    assert run_steps(method, cfg.replace(stop_at_step=500), 64) == 100  # a stop past the budget changes nothing


def test_denosent_stopped_at_step_zero_is_the_start_model_under_its_prompt_and_mask_pooling(tiny_bert_dir, tmp_path):
    """DenoSent's step-0 unit (the laptop recipe's counterpart of its [MASK] pooling): the start model's weights,
    exported with DenoSent's prompt and its mask_token pooling, the new decoder left out."""
    method = METHODS.get("denosent")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=10, stop_at_step=0, max_length=16)
    with one_thread():
        out = train(method, cfg, toy_corpus(32), tmp_path / "a", seed=0, show_progress=False, device="cpu")
    start, ours = _weights(tiny_bert_dir), _weights(out.checkpoint)
    assert ours.keys() <= start.keys() and len(ours) > 10
    for k in ours:
        torch.testing.assert_close(ours[k], start[k], rtol=0, atol=0, msg=k)
    meta = json.loads((out.checkpoint / "method.json").read_text())
    assert meta["pooling"] == "mask_token" and "[MASK]" in meta["prompt"] and meta["steps"] == 0
