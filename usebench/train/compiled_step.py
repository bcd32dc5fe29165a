"""The fast path's compiled training step: the train module's forward through ``torch.compile`` (its backward is
compiled by AOTAutograd with it), eager after a failure.

:class:`CompiledStep` wraps the plugin's :class:`~usebench.train.plugin.TrainModule` (under DDP it is the module
DDP wraps: "compile the inner module"). Before a call it hands the module only what a compiled graph should see
(:func:`step_inputs`): a Python number that changes every step would otherwise recompile the step. Any exception
while compiling or running the compiled graph (dynamo, AOTAutograd or inductor) switches it to eager for the rest
of the run: torch's RNG is put back where it was before the failed call and that step's forward runs eagerly, so
the run goes on as the eager step would have (the backward is compiled together with the forward, see
:func:`compile_settings`, so a failing backward compile fails in the forward, before any gradient exists). The
failure becomes a note of the run's step path (:mod:`usebench.train.fast_path`).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
from torch import nn

RECOMPILE_LIMIT = 64  # compiled graphs per forward: length buckets x count buckets x a partial last batch
# The loop runs backward outside autocast (usebench.train.loop_step.one_step), so the compiled backward must be
# traced without it too: AOTAutograd's default ("same_as_forward") traces the backward under the forward's autocast,
# which autocasts the backward of every op the forward ran in fp32 on purpose (an ``autocast(enabled=False)``
# region: NT-Xent's similarity logits) back down to fp16. Their gradients (the loss scale x 1/temperature) then
# overflow fp16 at a quarter of the scale eager takes (issue 50: consert's 5-row batch, 2^18 against 2^20).
BACKWARD_AUTOCAST = "off"


def step_inputs(module: nn.Module, batch: Any, device: torch.device) -> Any:
    """``batch`` as the compiled forward takes it: the module's own filter (``TrainModule.compiled_inputs``), then
    top-level Python floats as one-element float64 tensors on ``device`` (a float is a constant to dynamo: one
    recompile per value; float64 keeps it exact when it comes back as a logged extra; made by a fill kernel, not
    copied from the host, on the device so that CUDA graphs see no CPU tensor, and not 0-dim: dynamo reads a 0-dim
    float64 input back as a Python number, a host read per call)."""
    hook = getattr(module, "compiled_inputs", None)
    if hook is not None:
        batch = hook(batch)
    if isinstance(batch, dict):
        return {k: torch.full((1,), v, dtype=torch.float64, device=device) if isinstance(v, float) else v
                for k, v in batch.items()}
    return batch


def _rng_state(device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """torch's CPU RNG state and, on CUDA, the device's (host-side generator state: no device synchronisation)."""
    return torch.get_rng_state(), torch.cuda.get_rng_state(device) if device.type == "cuda" else None


def _set_rng_state(state: tuple[torch.Tensor, torch.Tensor | None], device: torch.device) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)


def describe(error: BaseException) -> str:
    """``Type: first line of the message`` (at most 200 characters), for a step-path note; a compiler error that
    wraps another (dynamo's BackendCompilerFailed) names the one inside: ``Outer (Inner: first line)``."""
    inner = getattr(error, "inner_exception", None) or error.__cause__
    if inner is not None and inner is not error:
        text = f"{type(error).__name__} ({describe(inner)})"
    else:
        lines = str(error).strip().splitlines()
        text = f"{type(error).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= 200 else text[:197] + "..."


class CompiledStep(nn.Module):
    """``module``'s forward compiled (``mode``, ``dynamic`` as :func:`torch.compile` takes them), eager for the
    first ``eager_calls`` calls (a plugin's host-side warm-up, ``Method.eager_steps``) and once a compiled call has
    failed (``failure`` says why, ``failed_call`` on which call, 0-based)."""

    def __init__(self, module: nn.Module, mode: str | None = None, dynamic: bool | None = False,
                 eager_calls: int = 0):
        super().__init__()
        self.eager_calls = eager_calls
        self.module = module
        # kept out of the module tree: the compiled wrapper shares the module's parameters (DDP must see them once)
        self.__dict__["compiled"] = torch.compile(module, mode=None if mode in (None, "default") else mode,
                                                  dynamic=dynamic)
        self.failure: str | None = None
        self.failed_call: int | None = None
        self.calls = 0
        self.cuda_graphs = uses_cuda_graphs(mode)

    def forward(self, batch: Any) -> Any:
        """The module's output for ``batch``, compiled while compiling works."""
        device = _device_of(self.module)
        inputs = step_inputs(self.module, batch, device)
        self.calls += 1
        if self.failure is None and self.calls > self.eager_calls:
            state = _rng_state(device)
            try:
                if self.cuda_graphs:  # a new step: the previous replay's outputs may be overwritten from here on
                    torch.compiler.cudagraph_mark_step_begin()
                    return _cloned(self.__dict__["compiled"](inputs))
                return self.__dict__["compiled"](inputs)
            except Exception as e:  # noqa: BLE001  any compiler or compiled-graph error: eager from here on
                self.failure, self.failed_call = describe(e), self.calls - 1
                _set_rng_state(state, device)  # the eager forward draws the dropout the failed call would have
        return self.module(inputs)


def uses_cuda_graphs(mode: str | None) -> bool:
    """Whether torch.compile's ``mode`` records CUDA graphs (inductor's ``triton.cudagraphs`` option): not only
    ``reduce-overhead`` but ``max-autotune`` too. Each such mode needs the same care: a step begin marked before
    each call and the outputs cloned out of the graphs' memory, which the next replay overwrites."""
    if mode in (None, "default"):
        return False
    try:
        from torch._inductor import list_mode_options

        return bool(list_mode_options(mode).get("triton.cudagraphs", False))
    except (ImportError, AttributeError, RuntimeError):  # a torch that does not say: the modes it documents
        return mode in ("reduce-overhead", "max-autotune")


def _cloned(out: Any) -> Any:
    """The step's outputs copied out of CUDA graph memory: the loop keeps losses until the next log point, past
    replays that reuse that memory."""
    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, dict):
        return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in out.items()}
    return out


def _device_of(module: nn.Module) -> torch.device:
    param = next(module.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def graph_counts() -> tuple[int, int]:
    """(graphs compiled, graph breaks) so far in this process: dynamo's counters, read before and after a run."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"]), int(sum(counters["graph_break"].values()))


def graph_break_reasons(limit: int = 2) -> list[str]:
    """The most frequent graph-break reasons of this process (for a note; dynamo's own wording, shortened)."""
    from torch._dynamo.utils import counters

    reasons = sorted(counters["graph_break"].items(), key=lambda kv: -kv[1])[:limit]
    return [describe(Exception(reason)).removeprefix("Exception: ") for reason, _ in reasons]


@contextmanager
def compile_settings() -> Iterator[None]:
    """Dynamo and AOTAutograd settings for a run's compiled step, restored afterwards: room for one graph per
    shape bucket (:data:`RECOMPILE_LIMIT`), the backward compiled with the forward (not at the first backward), so
    that a failing compile fails where :class:`CompiledStep` can still fall back, and traced without autocast, as
    the loop runs it (:data:`BACKWARD_AUTOCAST`)."""
    import torch._dynamo.config as dynamo_config
    import torch._functorch.config as functorch_config

    with ExitStack() as stack:
        stack.enter_context(dynamo_config.patch(recompile_limit=max(RECOMPILE_LIMIT, dynamo_config.recompile_limit)))
        stack.enter_context(functorch_config.patch(force_non_lazy_backward_lowering=True))
        if hasattr(functorch_config, "backward_pass_autocast"):  # an older torch has no such setting to choose
            stack.enter_context(functorch_config.patch(backward_pass_autocast=BACKWARD_AUTOCAST))
        yield
