"""What planning decides about a chain as a whole: which expanded chains are real rows, which pooling each
stage trains and exports with, and where an NLI+STSb→target chain starts from.

- **No stage after BERT-flow.** BERT-flow trains a flow over a frozen encoder; a later stage would load the
  encoder without its flow, so ``bertflow>nli-sts`` would be NLI+STSb training of the plain backbone filed as
  BERT-flow. The paper reports BERT-flow only unsupervised and NLI+STSb→target (§5.5: "not suitable for the
  other evaluation setups"); expanded chains with such a stage are left out, with a note.
- **Pooling across stages.** A supervised stage keeps the pooling of the checkpoint it starts from, as
  sentence-transformers fine-tunes a saved model with the modules it was saved with (a plain backbone: its
  default, mean); an unsupervised stage uses its own method's pooling, as its reference script builds the
  model. ``--set <method>.pooling=...`` overrides either. The rule is
  :func:`usebench.methods.parts.chain_pooling.supervised_pooling`, which the report's pairing reads too.
- **A published NLI+STSb model.** ``--nli-sts-model`` replaces the two NLI+STSb stages of a chain that starts
  with them (``nli-sts>tsdae``) by that checkpoint: the chain trains only its target-domain stages.
"""
from __future__ import annotations

from collections.abc import Callable

from usebench.errors import BenchError
from usebench.plan.settings import NLI_STS_STAGES, chain_label

BERTFLOW_NOTE = ("{m}: left out of {settings}: its stage trains a flow over a frozen encoder, which a later stage "
                 "would load without the flow (the paper reports it unsupervised and NLI+STSb→target only, §5.5)")


def drop_unfit(chains: list[tuple[tuple[str, ...], str]], continuable: Callable[[str], bool],
               notes: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """The expanded (chain, setting) pairs without those that continue after a non-continuable stage."""
    kept, dropped = [], {}
    for chain, setting in chains:
        bad = next((m for m in chain[:-1] if not continuable(m)), None)
        if bad is None:
            kept.append((chain, setting))
        else:
            dropped.setdefault(bad, []).append(setting)
    for m, settings in dropped.items():
        note = BERTFLOW_NOTE.format(m=m, settings=" and ".join(dict.fromkeys(settings)))
        if note not in notes:
            notes.append(note)
    return kept


def backbone_pooling(model: str) -> str | None:
    """The pooling a first stage's backbone declares (a sentence-transformers or usebench checkpoint), if any."""
    from usebench.eval.models import resolve_model

    try:
        return resolve_model(model).pooling
    except BenchError:
        return None  # checked (with a clear error) where the plan requires the model


def published_start(chain: tuple[str, ...], model: str | None) -> tuple[tuple[str, ...], str | None]:
    """(stages to train, the checkpoint they start from): ``nli-sts>m`` with ``--nli-sts-model`` trains ``m``
    from that model; any other chain is unchanged."""
    n = len(NLI_STS_STAGES)
    if model and chain[:n] == NLI_STS_STAGES and len(chain) > n:
        return chain[n:], model
    return chain, None


def start_label(chain: tuple[str, ...], start: str | None) -> str:
    """``nli-sts[<model>]>tsdae`` for a chain that starts from a published NLI+STSb model."""
    return f"nli-sts[{start}]>{chain_label(chain)}" if start else chain_label(chain)
