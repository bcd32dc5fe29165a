"""The CPU's blocked AdamW and RMSprop update bit for bit as torch's per-parameter loop (``foreach=False``), keep its
state, and refuse the options they do not implement."""
from __future__ import annotations

import pytest
import torch

from usebench.train.blocked_optim import BLOCK, BlockedAdamW, BlockedRMSprop

# larger than a block and not a multiple of one (a short last block), a vector-width tail, a tiny vector
SHAPES = [(3 * BLOCK // 64 + 7, 64 + 3), (BLOCK + 5,), (384, 384), (5,), (1, 1)]


def parameters(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in SHAPES]


def gradients(step: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1000 + step)
    return [torch.randn(s, generator=g) * 10.0 ** (step % 3 - 2) for s in SHAPES]  # scales 1e-2 .. 1


def groups(params: list[torch.Tensor], weight_decay: float) -> list[dict]:
    return [{"params": params[:3], "weight_decay": weight_decay}, {"params": params[3:], "weight_decay": 0.0}]


def train(make, steps: int, state: dict | None = None, first: int = 0):
    """(parameters, optimizer) after ``steps`` steps with a changing learning rate, from ``state`` if given."""
    params = [p.requires_grad_() for p in parameters()]
    optimizer = make(params)
    if state is not None:
        params_state, optimizer_state = state
        with torch.no_grad():
            for p, q in zip(params, params_state):
                p.copy_(q)
        optimizer.load_state_dict(optimizer_state)
    for step in range(first, first + steps):
        for group in optimizer.param_groups:
            group["lr"] = 1e-3 / (1 + step)  # a schedule of the global step, so a resumed run takes the same
        for p, g in zip(params, gradients(step)):
            p.grad = g
        optimizer.step()
    return params, optimizer


def assert_same(a, b):
    params_a, opt_a = a
    params_b, opt_b = b
    for p, q in zip(params_a, params_b):
        assert torch.equal(p, q)
    state_a, state_b = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    assert state_a.keys() == state_b.keys()
    for i in state_a:
        assert state_a[i].keys() == state_b[i].keys()
        for k in state_a[i]:
            assert state_a[i][k].dtype == state_b[i][k].dtype and torch.equal(state_a[i][k], state_b[i][k]), (i, k)


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


OPTIMIZERS = {
    "adamw": (lambda ps, wd: torch.optim.AdamW(groups(ps, wd), lr=1e-3, eps=1e-6, foreach=False),
              lambda ps, wd: BlockedAdamW(groups(ps, wd), lr=1e-3, eps=1e-6)),
    "rmsprop": (lambda ps, wd: torch.optim.RMSprop(groups(ps, wd), lr=1e-3, alpha=0.9, eps=1e-7, foreach=False),
                lambda ps, wd: BlockedRMSprop(groups(ps, wd), lr=1e-3, alpha=0.9, eps=1e-7)),
}


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_the_blocked_update_is_torch_s_loop_bit_for_bit(name, weight_decay, threads):
    torch_loop, blocked = OPTIMIZERS[name]
    assert_same(train(lambda ps: blocked(ps, weight_decay), 5), train(lambda ps: torch_loop(ps, weight_decay), 5))


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_run_resumes_under_either_from_the_other_s_state(name):
    torch_loop, blocked = OPTIMIZERS[name]
    expected = train(lambda ps: torch_loop(ps, 0.01), 6)
    for first, then in ((torch_loop, blocked), (blocked, torch_loop)):
        params, optimizer = train(lambda ps: first(ps, 0.01), 3)
        state = ([p.detach().clone() for p in params], optimizer.state_dict())
        assert_same(train(lambda ps: then(ps, 0.01), 3, state=state, first=3), expected)


def test_a_closure_s_loss_is_returned_and_parameters_without_gradients_are_left_alone():
    used, unused = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    optimizer = BlockedAdamW([used, unused], lr=0.1)

    def closure():
        loss = (used * 2).sum()
        loss.backward()
        return loss

    assert float(optimizer.step(closure).detach()) == 6.0
    assert not torch.equal(used, torch.ones(3)) and torch.equal(unused, torch.ones(3))
    assert unused not in optimizer.state


@pytest.mark.parametrize("make, option", [
    (lambda p: BlockedAdamW([p], lr=1e-3, amsgrad=True), "amsgrad"),
    (lambda p: BlockedAdamW([p], lr=1e-3, maximize=True), "maximize"),
    (lambda p: BlockedAdamW([p], lr=torch.tensor(1e-3)), "lr as a tensor"),
    (lambda p: BlockedRMSprop([p], lr=1e-3, momentum=0.9), "momentum"),
    (lambda p: BlockedRMSprop([p], lr=1e-3, centered=True), "centered"),
    (lambda p: BlockedAdamW([torch.ones(4, 4).t()], lr=1e-3), "contiguous"),
    (lambda p: BlockedAdamW([torch.ones(4, dtype=torch.complex64)], lr=1e-3), "floating-point"),
])
def test_what_the_blocks_do_not_implement_is_refused_by_name(make, option):
    with pytest.raises(ValueError, match=option):
        make(torch.ones(4, requires_grad=True))


def test_a_sparse_gradient_is_refused():
    p = torch.ones(4, 2, requires_grad=True)
    p.grad = torch.ones(4, 2).to_sparse()
    with pytest.raises(RuntimeError, match="sparse"):
        BlockedAdamW([p], lr=1e-3).step()


@pytest.mark.parametrize("optimizer, blocked_class, torch_class", [("adamw", BlockedAdamW, torch.optim.AdamW),
                                                                   ("rmsprop", BlockedRMSprop, torch.optim.RMSprop)])
def test_build_optimizer_blocks_a_cpu_s_parameters_and_leaves_the_rest_to_torch(optimizer, blocked_class,
                                                                                 torch_class):
    """The CPU's reference path takes the blocks; a parameter they cannot take (here a transposed, non-contiguous
    one) sends the whole model to torch's foreach kernels, the same bits, instead of an error."""
    from usebench.train.config import TrainConfig
    from usebench.train.optim import build_optimizer

    cfg = TrainConfig(optimizer=optimizer)
    contiguous = [("w", torch.nn.Parameter(torch.ones(3, 2))), ("b", torch.nn.Parameter(torch.ones(2)))]
    assert type(build_optimizer(cfg, contiguous)) is blocked_class
    transposed = contiguous + [("t", torch.nn.Parameter(torch.ones(2, 3).t()))]
    torch_own = build_optimizer(cfg, transposed)
    assert type(torch_own) is torch_class and torch_own.defaults["foreach"]
