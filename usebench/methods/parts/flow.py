"""The Glow used by BERT-flow (Li et al. 2020, EMNLP), as in its PyTorch port UKPLab/pytorch-bertflow.

A sentence embedding u (bsz, D) is treated as a D x 1 x 1 image, so every 1x1 convolution of the reference is a
``Linear`` on the channel vector. Structure (``tflow_utils.py``, = the TF original's ``config_l3_d3_w32``):
``levels`` (3) levels of ``depth`` (3) steps; a step is

1. :class:`ActNorm` - data-dependent init on the first batch (loc = -mean, log-scale = -log std, stored divided
   by ``logscale_factor`` 3); logdet = sum of the log-scales. A channel that is constant on that batch (std below
   :data:`FLAT_STD`: a dead dimension of the encoder, such as 3 of all-MiniLM-L6-v2's mean-pooled last layer, whose
   LayerNorm weight is ~1e-33) is dropped there: its output is 0 and its log-scale enters no logdet. The reference
   would scale it by 1 / (std + 1e-6) ~ 1e6 at every step's ActNorm, and the flow's gradient overflows; a channel
   that varies is normalised exactly as the reference does;
2. :class:`ReversePermutation` - the TF "invertible 1x1 conv" with ``permutation=True``: fixed, logdet 0;
3. :class:`AdditiveCoupling` - NICE: x2 += NN(x1); logdet 0. NN = Linear(c/2 -> 32, no bias) + ActNorm + ReLU
   -> Linear(32 -> 32, no bias) + ActNorm + ReLU -> :class:`ZeroLinear` (32 -> c/2, zero-init, x exp(3 * scale)).

After every level but the last, the second half of the channels is factored out and scored under N(0, 1)
(768 -> 384 -> 192); the last level's output is scored under N(0, 1) too. z = concat(factored parts..., last).
Loss = -(log N(z; 0, I) + log|det dz/du|) / (D ln 2), averaged over the batch (bits per dimension).
Keep this module in fp32: callers cast the input with ``.float()`` and disable autocast.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from usebench.errors import ConfigError

LOG_2PI = math.log(2 * math.pi)


FLAT_STD = 1e-6  # below the reference's epsilon: a channel ActNorm cannot normalise


class ActNorm(nn.Module):
    """Per-channel affine y = (x + loc) * exp(logscale * factor), initialised from the first batch it sees; a
    channel constant on that batch is dropped (``live`` 0: output 0, no logdet)."""

    def __init__(self, channels: int, logscale_factor: float = 3.0):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(channels))
        self.logscale = nn.Parameter(torch.zeros(channels))
        self.logscale_factor = logscale_factor
        self.register_buffer("initialized", torch.tensor(False))
        self.register_buffer("live", torch.ones(channels))  # 0: a channel constant at init, dropped
        self._ready = False  # the buffer's value as a Python bool: read once, not on every forward (a sync)

    @torch.no_grad()
    def initialize(self, x: torch.Tensor) -> None:
        """Data-dependent init: the first batch leaves this layer with zero mean and unit (population) std; a
        channel constant on it (std < :data:`FLAT_STD`) is dropped instead of being scaled by ~1e6."""
        mean = x.mean(dim=0)
        std = x.std(dim=0, unbiased=False)
        if x.shape[0] < 2:
            raise ConfigError(f"BERT-flow: ActNorm's data-dependent init needs at least 2 sentences, got {x.shape[0]}")
        self.live.copy_((std >= FLAT_STD).to(self.live.dtype))
        self.loc.copy_(-mean)
        self.logscale.copy_(torch.log(1.0 / (std + 1e-6)) / self.logscale_factor * self.live)
        self.initialized.fill_(True)

    def dropped(self) -> list[int]:
        """The channels dropped at init (constant on the init batch)."""
        return (self.live == 0).nonzero().flatten().tolist()

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        if prefix + "live" not in state_dict:  # a flow saved before channels could be dropped: all live
            state_dict[prefix + "live"] = torch.ones_like(self.live)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._ready = False  # the loaded buffer decides again

    def log_scale(self) -> torch.Tensor:
        """The effective per-channel log-scale (c,): the parameter times ``logscale_factor``."""
        return self.logscale * self.logscale_factor

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (bsz, c) -> (y, logdet scalar)."""
        if not self._ready:
            if not bool(self.initialized):
                self.initialize(x)
            self._ready = True
        logs = self.log_scale() * self.live  # x 1.0 where every channel lives: the reference's numbers exactly
        return (x + self.loc) * torch.exp(logs) * self.live, logs.sum()

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """x = y * exp(-logs) - loc (a dropped channel comes back as the constant it was at init)."""
        return y * torch.exp(-self.log_scale() * self.live) - self.loc


class ReversePermutation(nn.Module):
    """Reverses the channel order (the reference's fixed anti-diagonal 1x1 conv); no parameters, logdet 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flip(dims=[1])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """Reversing twice is the identity."""
        return y.flip(dims=[1])


class ZeroLinear(nn.Module):
    """Zero-initialised Linear whose output is scaled by exp(3 * scale): the coupling starts as the identity."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)
        self.scale = nn.Parameter(torch.zeros(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * torch.exp(self.scale * 3)


class CouplingNet(nn.Module):
    """The shift network of the additive coupling: (bsz, c/2) -> (bsz, c/2)."""

    def __init__(self, half: int, width: int = 32):
        super().__init__()
        self.lin1 = nn.Linear(half, width, bias=False)
        self.norm1 = ActNorm(width)
        self.lin2 = nn.Linear(width, width, bias=False)
        self.norm2 = ActNorm(width)
        self.out = ZeroLinear(width, half)
        for lin in (self.lin1, self.lin2):
            nn.init.normal_(lin.weight, 0.0, 0.05)  # reference: conv weights ~ N(0, 0.05)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.norm1(self.lin1(x))[0])  # these ActNorms' logdets do not enter the objective
        h = torch.relu(self.norm2(self.lin2(h))[0])
        return self.out(h)


class AdditiveCoupling(nn.Module):
    """NICE coupling: (x1, x2) -> (x1, x2 + NN(x1)); volume preserving."""

    def __init__(self, channels: int, width: int = 32):
        super().__init__()
        self.net = CouplingNet(channels // 2, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=1)
        return torch.cat([x1, x2 + self.net(x1)], dim=1)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """(y1, y2) -> (y1, y2 - NN(y1)): exact, since y1 = x1."""
        y1, y2 = y.chunk(2, dim=1)
        return torch.cat([y1, y2 - self.net(y1)], dim=1)


class FlowStep(nn.Module):
    """ActNorm -> reverse permutation -> additive coupling."""

    def __init__(self, channels: int, width: int = 32):
        super().__init__()
        self.actnorm = ActNorm(channels)
        self.permute = ReversePermutation()
        self.coupling = AdditiveCoupling(channels, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, logdet = self.actnorm(x)
        return self.coupling(self.permute(x)), logdet

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """The three layers undone in reverse order."""
        return self.actnorm.inverse(self.permute.inverse(self.coupling.inverse(y)))


def standard_normal_logp(x: torch.Tensor) -> torch.Tensor:
    """Sum over channels of log N(x; 0, 1). x: (bsz, c) -> (bsz,)."""
    return -0.5 * (x.pow(2) + LOG_2PI).sum(dim=1)


class Glow(nn.Module):
    """Multi-scale Glow on vectors: ``forward(u) -> (z, log-likelihood per example)``; ``inverse(z) -> u``."""

    def __init__(self, dim: int, levels: int = 3, depth: int = 3, width: int = 32):
        super().__init__()
        if levels < 1 or depth < 1 or dim % (2 ** levels):
            raise ConfigError(f"Glow needs levels, depth >= 1 and dim divisible by 2**levels; got dim={dim}, "
                              f"levels={levels}, depth={depth}")
        self.dim = dim
        self.levels = nn.ModuleList()
        channels = dim
        for _ in range(levels):
            self.levels.append(nn.ModuleList([FlowStep(channels, width) for _ in range(depth)]))
            channels //= 2  # the next level sees the half that was not factored out

    def forward(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """u: (bsz, dim) -> z (bsz, dim), log p(u) (bsz,) = log N(z) + log|det dz/du| (in nats)."""
        x, loglik = u, u.new_zeros(u.shape[0])
        factored = []
        for i, steps in enumerate(self.levels):
            for step in steps:
                x, logdet = step(x)
                loglik = loglik + logdet
            if i < len(self.levels) - 1:
                x, out = x.chunk(2, dim=1)  # keep the first half, factor out the second
                loglik = loglik + standard_normal_logp(out)
                factored.append(out)
        loglik = loglik + standard_normal_logp(x)
        return torch.cat(factored + [x], dim=1), loglik

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        """The exact inverse of :meth:`forward` (after the data-dependent init has run)."""
        sizes = [self.dim // 2 ** (i + 1) for i in range(len(self.levels) - 1)]
        parts = list(z.split(sizes + [z.shape[1] - sum(sizes)], dim=1))
        x = parts.pop()
        for i in reversed(range(len(self.levels))):
            if i < len(self.levels) - 1:
                x = torch.cat([x, parts.pop()], dim=1)
            for step in reversed(self.levels[i]):
                x = step.inverse(x)
        return x

    def bits_per_dim(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(z, loss): loss = batch mean of -log p(u) / (dim * ln 2), the reference's objective."""
        z, loglik = self(u)
        return z, (-loglik / (self.dim * math.log(2))).mean()


def ddi_closed_form_bits_per_dim(u: torch.Tensor) -> float:
    """Step-0 loss on the data-dependent-init batch: (1/2 ln(2 pi e) + mean_d ln sigma_d) / ln 2 (METHODS.md §5).

    After DDI every ActNorm standardises that batch and the zero-initialised couplings are identities, so z is
    u standardised per dimension and only the first ActNorm's log-scales (-ln sigma_d) enter the logdet.
    """
    sigma = u.double().std(dim=0, unbiased=False)
    return float((0.5 * math.log(2 * math.pi * math.e) + torch.log(sigma).mean()) / math.log(2))
