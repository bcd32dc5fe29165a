"""BERT-flow: the Glow (usebench/methods/parts/flow.py) and the plugin with its `flow` pooling (usebench/methods/bertflow.py)."""
from __future__ import annotations

import math

import pytest
import torch

from usebench.errors import ConfigError
from usebench.methods.parts.flow import Glow, ddi_closed_form_bits_per_dim, standard_normal_logp
from tests.methods.helpers import one_thread


def _data(n: int = 64, dim: int = 16, seed: int = 0) -> torch.Tensor:
    """Correlated, shifted, anisotropic vectors, like raw BERT embeddings (one distribution per ``dim``)."""
    mix = torch.randn(dim, dim, generator=torch.Generator().manual_seed(dim)) / math.sqrt(dim)
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, dim, generator=g) * torch.linspace(0.2, 3.0, dim)) @ mix + 2.0


def _perturbed_glow(dim: int = 16, scale: float = 0.05) -> Glow:
    """A Glow past its DDI with every parameter moved, so the couplings are not identities."""
    torch.manual_seed(1)
    glow = Glow(dim).double()
    glow(_data(dim=dim).double())  # data-dependent init
    with torch.no_grad():
        for p in glow.parameters():
            p.add_(scale * torch.randn_like(p))
    return glow


def test_inverse_undoes_forward():
    glow = _perturbed_glow()
    u = _data(n=10, seed=3).double()
    z, _ = glow(u)
    assert not torch.allclose(z, u)
    assert torch.allclose(glow.inverse(z), u, atol=1e-10)


def test_logdet_matches_numerical_jacobian():
    glow = _perturbed_glow()
    u = _data(n=3, seed=4).double()
    z, loglik = glow(u)
    for i in range(3):
        jac = torch.autograd.functional.jacobian(lambda v: glow(v[None])[0][0], u[i])  # (dim, dim)
        logdet_numeric = torch.linalg.slogdet(jac).logabsdet
        logdet_flow = loglik[i] - standard_normal_logp(z[i : i + 1])[0]
        assert logdet_flow.item() == pytest.approx(logdet_numeric.item(), abs=1e-8)


def test_only_actnorm_contributes_logdet():
    glow = _perturbed_glow()
    u = _data(n=4, seed=5).double()
    z, loglik = glow(u)
    actnorm_logdet = sum(step.actnorm.log_scale().sum() for level in glow.levels for step in level)
    assert torch.allclose(loglik - standard_normal_logp(z), actnorm_logdet.expand(4))


def test_step0_loss_equals_ddi_closed_form():
    u = _data(n=256, dim=32, seed=6)
    _, loss = Glow(32).bits_per_dim(u)
    assert loss.item() == pytest.approx(ddi_closed_form_bits_per_dim(u), abs=1e-4)


def test_structure_factors_out_half_per_level():
    glow = Glow(768)
    assert [len(level) for level in glow.levels] == [3, 3, 3]
    assert [level[0].actnorm.loc.numel() for level in glow.levels] == [768, 384, 192]
    with pytest.raises(ConfigError, match="divisible"):
        Glow(20)


def test_training_whitens_held_out_data():
    # Max likelihood with a finite flow does not force exact N(0, I) marginals (KL of a variance of 0.7 is only
    # 0.03 nats), hence loose per-dimension bounds; the decorrelation is what training must add beyond the DDI.
    with one_thread():  # hundreds of tiny steps: thread start-up would dominate
        torch.manual_seed(0)
        train, held_out = _data(n=4096, dim=8, seed=7), _data(n=2048, dim=8, seed=8)
        glow = Glow(8)
        opt = torch.optim.Adam(glow.parameters(), lr=3e-3)
        losses = []
        for _ in range(500):
            _, loss = glow.bits_per_dim(train[torch.randint(0, len(train), (64,))])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        with torch.no_grad():
            z, _ = glow(held_out)
            standardized = (held_out - held_out.mean(0)) / held_out.std(0)
    assert sum(losses[-50:]) / 50 < losses[0] - 0.5
    assert z.mean(0).abs().mean() < 0.25 and z.mean(0).abs().max() < 0.5
    assert abs(z.var(0).mean() - 1) < 0.15 and 0.6 < z.var(0).min() and z.var(0).max() < 1.4
    off_identity = (torch.cov(z.T) - torch.eye(8)).norm()
    assert off_identity < 0.35 * (torch.cov(standardized.T) - torch.eye(8)).norm()


# --- the plugin on the tiny BERT ---------------------------------------------------------------------------------

CORPUS = [f"sentence number {i} about {w} and {v}" for i, (w, v) in
          enumerate((w, v) for w in ("cats", "dogs", "rain", "code", "music", "tea") for v in ("red", "blue", "big",
                                                                                                "small", "old"))]


def _cfg(tiny_bert_dir, **kw):
    from usebench.registry import METHODS

    base = {"model": str(tiny_bert_dir), "max_steps": 12, "batch_size": 8, "max_length": 32, "lr": 1e-3,
            "log_every": 1, "ddi_batch_size": 24}
    return METHODS.get("bertflow").config("smoke", {**base, **kw})


def test_config_rejects_a_non_flow_pooling_and_unknown_base(tiny_bert_dir):
    with pytest.raises(ConfigError, match="base_pooling"):
        _cfg(tiny_bert_dir, pooling="mean")
    with pytest.raises(ConfigError, match="did you mean"):
        _cfg(tiny_bert_dir, base_pooling="first_last_av")


def test_step0_loss_on_the_ddi_batch_matches_closed_form(tiny_bert_dir):
    import numpy as np

    from usebench.registry import METHODS

    method = METHODS.get("bertflow")
    cfg = _cfg(tiny_bert_dir, dropout=False)
    module = method.build(cfg, torch.device("cpu")).train()
    batch = method.collate(cfg, module.tokenizer, CORPUS[:24], np.random.default_rng(0))
    with torch.no_grad():
        u = module.encoder(**batch)
    loss = module(batch)["loss"]
    assert loss.item() == pytest.approx(ddi_closed_form_bits_per_dim(u), abs=1e-3)


def test_training_changes_only_the_flow_and_export_gives_z(tiny_bert_dir, tmp_path):
    import json

    import numpy as np

    from usebench.eval.encoder import HFEncoder
    from usebench.registry import METHODS
    from usebench.train.loop import train
    from usebench.methods.bertflow import BertFlowModule, load_flow

    method = METHODS.get("bertflow")
    cfg = _cfg(tiny_bert_dir)
    seen = {}
    original_build = method.build

    def spy_build(c, device):  # keep the trained module to compare its weights with a fresh one
        seen["module"] = original_build(c, device)
        seen["before"] = {k: v.clone() for k, v in seen["module"].state_dict().items()}
        return seen["module"]

    method.build = spy_build  # instance attribute: shadows the class method for this test only
    try:
        with one_thread():
            result = train(method, cfg, CORPUS, tmp_path / "run", seed=0, show_progress=False, device="cpu")
    finally:
        del method.build
    module, before = seen["module"], seen["before"]
    assert {n for n, _ in method.trainable_parameters(module)} == {n for n, _ in module.named_parameters()
                                                                  if n.startswith("glow.")}
    after = module.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith("glow.") for k in changed)
    assert any(k.startswith("glow.levels.0.0.coupling") for k in changed)  # the couplings learn, not only DDI

    ckpt = result.checkpoint
    assert json.loads((ckpt / "method.json").read_text())["pooling"] == "flow"
    texts = CORPUS[:5]
    z = HFEncoder(str(ckpt), show_progress=False).encode(texts)
    plain = HFEncoder(str(ckpt), pooling="first_last_avg", show_progress=False).encode(texts)
    glow, base = load_flow(ckpt)
    assert base == "first_last_avg" and isinstance(module, BertFlowModule)
    with torch.no_grad():
        expected = glow(torch.from_numpy(plain))[0].numpy()
        back = glow.inverse(torch.from_numpy(z)).numpy()
    # Two encoder instances agree to ~1e-7 on u; ActNorm's 1/std on near-constant dims of the random tiny BERT
    # can magnify that, hence the relative tolerance.
    np.testing.assert_allclose(z, expected, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(back, plain, rtol=1e-3, atol=1e-4)  # z really is f(u)


def test_flow_pooling_without_flow_weights_is_a_clear_error(tiny_bert_dir):
    from usebench.eval.encoder import HFEncoder
    from usebench.errors import BenchError

    with pytest.raises(BenchError, match="flow/config.json"):
        HFEncoder(str(tiny_bert_dir), pooling="flow", show_progress=False)


def test_actnorm_drops_a_constant_input_dimension_instead_of_scaling_it_by_a_million():
    """The packaged MiniLM's mean-pooled last layer has dead dimensions (3 of 384, std ~1e-32 over the Twitter
    corpus): the reference's init 1 / (std + 1e-6) scaled them by 1e6 at every step's ActNorm and the flow's gradient
    was infinite at step 1. Such a channel is dropped at init: output 0, its log-scale in no logdet (the old runs
    refused it with a ConfigError; issue 55 asks for App. B's mean pooling with the constant dimensions dropped)."""
    import math

    import torch

    from usebench.methods.parts.flow import ActNorm

    x = torch.randn(8, 5, dtype=torch.float64).float()
    x[:, 3] = 0.25  # one channel constant over the init batch
    norm = ActNorm(5)
    y, logdet = norm(x)
    assert norm.dropped() == [3] and torch.equal(y[:, 3], torch.zeros(8))
    live = [0, 1, 2, 4]
    std = x[:, live].double().std(0, unbiased=False)
    assert float(logdet) == pytest.approx(-sum(math.log(float(s) + 1e-6) for s in std), rel=1e-5)
    assert torch.allclose(y[:, live].mean(0), torch.zeros(4), atol=1e-5)
    assert torch.allclose(norm.inverse(y), x, atol=1e-5)  # the constant comes back as it was
    y, _ = ActNorm(5)(torch.randn(8, 5))  # a varied batch initialises as before: zero mean, unit std
    assert torch.allclose(y.mean(0), torch.zeros(5), atol=1e-5) and torch.allclose(y.std(0, unbiased=False),
                                                                                   torch.ones(5), atol=1e-3)


def test_a_flow_on_dead_dimensions_trains_with_finite_gradients_and_gives_them_no_weight():
    """MiniLM's case: 3 of 16 input dimensions ~1e-33 (LayerNorm weight ~0). The loss and every gradient stay
    finite, the dead dimensions of z are 0 at init, and a flow saved before channels could be dropped loads as
    all live."""
    import torch

    from usebench.methods.parts.flow import Glow

    torch.manual_seed(0)
    u = torch.randn(64, 16)
    u[:, [2, 7, 11]] = 1e-33 * torch.rand(64, 3)  # not quite constant: float noise at 1e-33
    glow = Glow(16, levels=2, depth=2, width=8)
    z, loss = glow.bits_per_dim(u)
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in glow.parameters() if p.grad is not None)
    first = glow.levels[0][0].actnorm
    assert first.dropped() == [2, 7, 11]
    assert int((z.detach().abs().sum(0) == 0).sum()) == 3  # the dead dimensions (permuted by the flow) are 0 in z
    state = {k: v for k, v in glow.state_dict().items() if not k.endswith(".live")}
    old = Glow(16, levels=2, depth=2, width=8)
    old.load_state_dict(state)
    assert all(bool((m.live == 1).all()) for m in old.modules() if hasattr(m, "live"))