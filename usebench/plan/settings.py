"""The TSDAE paper's evaluation setups (§4, Table 2, Fig. 2) as named expansions into chains of methods.

A chain is a tuple of method names trained one after the other, each stage starting from the previous stage's
exported checkpoint (``tsdae>nli-sts``). ``--setting`` expands the methods the user named into the chains of
the chosen setups:

- ``unsupervised``: ``m`` on the target task's unlabeled sentences;
- ``adapt-nli-first``: ``nli-sts>m`` (NLI+STSb supervised, then the target domain, unlabeled);
- ``adapt-target-first``: ``m>nli-sts`` (target domain first, then NLI+STSb);
- ``supervised``: the in-domain supervised upper bound, the task's own labeled data (MNRL on relevant pairs for
  AskUbuntu, CQADupStack and SciDocs; MSE on graded pairs for TwitterPara, TSDAE paper §6), once per task;
- ``all``: every setup above.
With ``--labeled-sizes`` (pre-training, Fig. 2 / Table 10) each method ``m`` becomes ``m>sup`` and the plain
backbone ``sup`` is added, for each labeled-set size.

A chain is filed under the setting its shape says (:func:`chain_shape`), whether typed (``--methods
"tsdae>nli-sts"``) or expanded: a chain with a supervised stage is never filed as unsupervised. A chain of other
shapes with a supervised stage (``nli-sts`` alone, ``sbert-nli>tsdae``...) is ``other-supervised``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

from usebench.errors import ConfigError

Setting = Literal["unsupervised", "adapt-nli-first", "adapt-target-first", "supervised", "all"]
SETTINGS: tuple[str, ...] = get_args(Setting)
NLI_STS = "nli-sts"  # the SBERT-nli-stsb recipe the domain-adaptation rows use
# In-domain supervised method per target task (TSDAE paper §6: MNRL where relevant pairs are labeled, MSE on
# TwitterPara's graded pairs).
SUPERVISED_FOR_TASK: dict[str, str] = {
    "askubuntu": "sbert-mnrl", "cqadupstack": "sbert-mnrl", "scidocs": "sbert-mnrl",
    "twitterpara": "sbert-cosine", "stsb": "sbert-cosine",
}
CHAIN_SEP = ">"
OTHER_SUPERVISED = "other-supervised"  # a chain with supervised stages in none of the paper's shapes


def parse_chain(spec: str) -> tuple[str, ...]:
    """``"tsdae>nli-sts"`` -> ``("tsdae", "nli-sts")``; an empty stage is an error naming the spec."""
    stages = tuple(s.strip() for s in spec.split(CHAIN_SEP))
    if not all(stages):
        raise ConfigError(f"--methods: empty stage in chain {spec!r} (write stages as a>b)")
    return stages


def expand_aliases(chain: tuple[str, ...]) -> tuple[str, ...]:
    """The chain with every alias replaced by the stages it stands for."""
    return tuple(stage for name in chain for stage in CHAIN_ALIASES.get(name, (name,)))


def chain_label(chain: tuple[str, ...]) -> str:
    return CHAIN_SEP.join(chain)


def supervised_method(task: str) -> str:
    """The in-domain supervised method for ``task`` (its labeled data decides the loss)."""
    if task not in SUPERVISED_FOR_TASK:
        raise ConfigError(f"task {task!r} has no in-domain labeled training data for the supervised setups "
                          f"(tasks with one: {', '.join(SUPERVISED_FOR_TASK)})")
    return SUPERVISED_FOR_TASK[task]


def expand_setting(setting: str, chains: list[tuple[str, ...]], task: str) -> list[tuple[tuple[str, ...], str]]:
    """(chain, setting name) pairs for one target task; ``chains`` are the user's methods/chains."""
    if setting not in SETTINGS:
        raise ConfigError(f"--setting {setting!r} is not one of {', '.join(SETTINGS)}")
    wanted = [s for s in SETTINGS if s != "all"] if setting == "all" else [setting]
    out: list[tuple[tuple[str, ...], str]] = []
    for s in wanted:
        if s == "supervised":
            out.append(((supervised_method(task),), s))
            continue
        for chain in chains:
            if s == "unsupervised":
                out.append((chain, s))
            elif s == "adapt-nli-first":
                out.append(((NLI_STS, *chain), s))
            else:
                out.append(((*chain, NLI_STS), s))
    return list(dict.fromkeys(out))


def chain_shape(chain: tuple[str, ...], labeled: Callable[[str], bool]) -> str:
    """The setting a chain's shape says; ``labeled(name)`` tells whether a stage trains on labeled data."""
    sup_stages = [m for m in chain if labeled(m)]
    if not sup_stages:
        return "unsupervised"
    n = len(NLI_STS_STAGES)
    in_domain = set(SUPERVISED_FOR_TASK.values())
    unsup = lambda part: bool(part) and not any(labeled(m) for m in part)  # noqa: E731
    if chain[:n] == NLI_STS_STAGES and unsup(chain[n:]):
        return "adapt-nli-first"
    if chain[-n:] == NLI_STS_STAGES and unsup(chain[:-n]):
        return "adapt-target-first"
    if len(chain) == 1 and chain[0] in in_domain:
        return "supervised"
    if chain[-1] in in_domain and (unsup(chain[:-1]) or chain[:-1] == NLI_STS_STAGES):
        return "pretraining"
    return OTHER_SUPERVISED


def check_shape(chain: tuple[str, ...], setting: str, labeled: Callable[[str], bool]) -> None:
    """A chain is filed only under the setting its shape says (the supervised stage alone is also the
    pre-training curve's starting point, SBERT from the backbone)."""
    shape = chain_shape(chain, labeled)
    if shape != setting and not (setting == "pretraining" and shape == "supervised"):
        raise ConfigError(f"chain {chain_label(chain)!r} has the shape of the {shape} setting, not {setting} "
                          f"(a chain with a supervised stage is never filed as unsupervised); drop --setting or "
                          f"name the methods that setting expands")


def pretraining_chains(chains: list[tuple[str, ...]], task: str,
                       labeled: Callable[[str], bool] = lambda m: False) -> list[tuple[tuple[str, ...], str]]:
    """Fig. 2: each method followed by the task's supervised stage, plus the supervised stage alone, plus each
    method alone (unsupervised, on the same split): the figure's "TSDAE: unsupervised" line and the score Table 10's
    break-even is searched for."""
    sup = supervised_method(task)
    alone = [(tuple(c), "unsupervised") for c in chains if not any(labeled(m) for m in expand_aliases(c))]
    return ([((sup,), "pretraining")] + alone
            + [((*c, sup), "pretraining") for c in chains])


# Names that stand for a chain of registered stages (expanded when a chain is parsed). nli-sts is the
# SBERT-base-nli-stsb-v2 recipe as sentence-transformers trains it: two runs with their own loss, batch size,
# epochs, schedule and dev selection (usebench/methods/supervised.py), so two stages, each resumable on its own.
NLI_STS_STAGES = ("sbert-nli", "sbert-stsb")
CHAIN_ALIASES: dict[str, tuple[str, ...]] = {NLI_STS: NLI_STS_STAGES}
