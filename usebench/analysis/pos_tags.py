"""Penn Treebank POS tags for the relevant-content-words analysis (TSDAE paper §7.2, Figure 4) and the tag groups
its figure reports.

The paper tagged with Stanford CoreNLP (Java, models downloaded separately). Here the tagger is TextBlob's
``PatternTagger``: Pattern's Brill-style English tagger whose lexicon and rules ship inside the ``textblob`` wheel
(PyPI, MIT), so it works offline once installed (``pip install 'usebench[pos]'``); NLTK's perceptron tagger needs
a data download, and spaCy/Stanza/Flair download their models at run time. It emits Penn tags on the tokens it is
given. Its agreement with hand-assigned Penn tags is measured by ``tests/analysis/test_pos_tags.py`` on
``tests/assets/pos/penn_hand_tagged.txt`` (docs/papers/tsdae.md: token accuracy and agreement after grouping).

Groups (Figure 4's columns; the paper does not print its mapping, this one is ours): IN; PRP (PRP, PRP$); SYM
(SYM and punctuation tags: the paper's prior of 9.1% SYM fits punctuation); VB-AUX (MD, and verb tags on forms
of be / have / do); VB-NAUX (other verb tags); DT (DT, PDT, WDT); CC; NN (NN, NNS, NNP, NNPS); JJ (JJ, JJR, JJS);
RB (RB, RBR, RBS, WRB); CD; OTHER (everything else: TO, RP, POS, EX, WP, UH, FW, LS...).
"""
from __future__ import annotations

from collections.abc import Sequence

from usebench.errors import BenchError

GROUPS: tuple[str, ...] = ("IN", "PRP", "SYM", "VB-AUX", "VB-NAUX", "DT", "CC", "NN", "JJ", "RB", "CD", "OTHER")
TAGGER = "textblob-pattern"
PUNCT = {".", ",", ":", "``", "''", "-LRB-", "-RRB-", "(", ")", "#", "$", "HYPH", "NFP", '"', "SYM"}
AUX_FORMS = {"be", "am", "is", "are", "was", "were", "been", "being", "'s", "'re", "'m", "have", "has", "had",
             "having", "'ve", "'d", "do", "does", "did", "doing"}
_DIRECT = {"IN": "IN", "PRP": "PRP", "PRP$": "PRP", "DT": "DT", "PDT": "DT", "WDT": "DT", "CC": "CC", "CD": "CD",
           **dict.fromkeys(("NN", "NNS", "NNP", "NNPS"), "NN"), **dict.fromkeys(("JJ", "JJR", "JJS"), "JJ"),
           **dict.fromkeys(("RB", "RBR", "RBS", "WRB"), "RB")}


def tag_group(word: str, tag: str) -> str:
    """Figure 4's group of one tagged word."""
    if tag in PUNCT:
        return "SYM"
    if tag == "MD":
        return "VB-AUX"
    if tag.startswith("VB"):
        return "VB-AUX" if word.lower() in AUX_FORMS else "VB-NAUX"
    return _DIRECT.get(tag, "OTHER")


def require_tagger() -> None:
    """A clear error when the optional tagger is not installed."""
    try:
        import textblob.en  # noqa: F401
    except ImportError:
        raise BenchError("the content-words analysis tags words with TextBlob's bundled Pattern tagger: "
                         "pip install 'usebench[pos]' (or pip install textblob); it needs no data download") from None


def pos_tag(tokens: Sequence[str]) -> list[str]:
    """Penn tags of ``tokens`` (one sentence, already tokenized), by the Pattern tagger shipped with TextBlob."""
    require_tagger()
    from textblob.en import parser

    if not tokens:
        return []
    tagged = parser.find_tags(list(tokens))
    if len(tagged) != len(tokens):  # the tagger keeps the tokens it is given; anything else is a bug upstream
        raise BenchError(f"POS tagger returned {len(tagged)} tags for {len(tokens)} tokens: {list(tokens)!r}")
    return [t[1] for t in tagged]
