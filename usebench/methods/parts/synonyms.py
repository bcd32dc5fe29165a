"""WordNet synonym replacement (EDA's "SR"), the data augmentation PaSeR found to help (paper Table 4).

Wei & Zou 2019, "EDA: Easy Data Augmentation Techniques for Boosting Performance on Text Classification Tasks".
PaSeR's released data was made with EDA's code at a synonym-replacement ratio of 0.5 (its README).

The replacement follows EDA's ``synonym_replacement``: ``n = max(1, int(ratio * number of words))``; the distinct
non-stop words are visited in random order and each one that has a WordNet synonym is replaced (all its
occurrences) by a random synonym, until n words have been replaced. A synonym is a lemma name of any synset of
the word (NLTK's ``synsets``, so inflected forms are found through WordNet's morphology), lower-cased, "_" and
"-" turned into spaces, only letters and spaces kept, the word itself excluded. Two changes, both for
determinism: synonym lists are sorted before the random choice (EDA picks from a ``set``, whose order changes with
``PYTHONHASHSEED``). :func:`eda_words` is EDA's clean-up (``get_only_chars``: apostrophes dropped, hyphens to
spaces, lower-case, every character that is not a letter a space), which EDA applies before replacing and PaSeR's
released data went through; :data:`EDA_STOPWORDS` is EDA's own stop-word list. Without the clean-up
(``eda_clean=false``) punctuation, digits and case stay, and only the replaced words change.

WordNet: NLTK's downloader cannot reach its server here, so the WordNet 3.0 database is read from the files of
Debian's ``wordnet-base`` package (``apt-get install wordnet-base`` puts them in ``/usr/share/wordnet``), or from
``$WNSEARCHDIR`` (WordNet's own variable for its database directory), or from an NLTK data directory. NLTK's
``WordNetCorpusReader`` opens that directory; two files that Debian does not ship are supplied in code (the
``lexnames`` table, fixed for WordNet 3.0) or not needed (the WordNet-version mapping used only by the
multilingual functions).
"""
from __future__ import annotations

import io
import os
import random
import re
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from pathlib import Path

from usebench.errors import MissingDataError
from usebench.methods.parts.rake import NLTK_ENGLISH_STOPWORDS, Token

INSTALL_HINT = "apt-get install wordnet-base"
WORDNET_DIRS = (
    "/usr/share/wordnet",
    "/usr/local/share/wordnet",
    "/usr/share/nltk_data/corpora/wordnet",
    "~/nltk_data/corpora/wordnet",
)
# WordNet 3.0's lexicographer files (lexnames(5WN)): index = position, syntactic category from the prefix.
LEXNAMES = ["adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl"]
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_NOT_LETTERS = re.compile(r"[^a-z ]")

SynonymFn = Callable[[str], Sequence[str]]
# EDA's stop words (jasonwei20/eda_nlp code/eda.py @04ab29c, `stop_words`): NLTK's older English list without the
# contracted forms, 127 words (EDA also lists ''). Words in it are never replaced.
EDA_STOPWORDS: frozenset[str] = frozenset("""i me my myself we our ours ourselves you your yours yourself
yourselves he him his himself she her hers herself it its itself they them their theirs themselves what which who
whom this that these those am is are was were be been being have has had having do does did doing a an the and but
if or because as until while of at by for with about against between into through during before after above below
to from up down in out on off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will just don should now""".split())
_EDA_DROP, _EDA_SPACE, _EDA_NOT_LETTER = re.compile("['’]"), re.compile(r"[-\t\n]"), re.compile(r"[^a-z ]")


def eda_words(text: str) -> list[str]:
    """EDA's ``get_only_chars`` clean-up, as words: apostrophes dropped, hyphens/tabs/newlines and every other
    character that is not a letter turned into spaces, lower-cased ("Don't-stop 89!" -> ["dont", "stop"])."""
    cleaned = _EDA_NOT_LETTER.sub(" ", _EDA_SPACE.sub(" ", _EDA_DROP.sub("", text)).lower())
    return cleaned.split()


def find_wordnet_dir() -> Path | None:
    """The first directory holding the WordNet database files (``$WNSEARCHDIR`` first), or None."""
    env = os.environ.get("WNSEARCHDIR")
    for candidate in ([env] if env else []) + list(WORDNET_DIRS):
        path = Path(candidate).expanduser()
        if (path / "index.noun").is_file() and (path / "data.noun").is_file():
            return path
    return None


def _lexnames_text() -> str:
    return "".join(f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))


@lru_cache(maxsize=4)
def load_wordnet(path: str | None = None):
    """NLTK's WordNet reader over the database in ``path`` (default: :func:`find_wordnet_dir`).

    Raises :class:`MissingDataError` naming the install command when no WordNet is found.
    """
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    root = Path(path) if path else find_wordnet_dir()
    if root is None or not (root / "index.noun").is_file():
        where = path or " or ".join(["$WNSEARCHDIR", *WORDNET_DIRS])
        raise MissingDataError("WordNet 3.0 database (for PaSeR's synonym replacement; "
                               "set synonym_ratio=0 to train without it)", where, INSTALL_HINT)
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))  # NLTK only opens corpus files under its data paths

    class _Reader(WordNetCorpusReader):
        def open(self, fileid):
            if fileid == "lexnames" and not (root / "lexnames").is_file():
                return io.StringIO(_lexnames_text())
            return super().open(fileid)

        def map_wn(self, version="wordnet"):
            return None  # this *is* WordNet 3.0; the mapping only serves the multilingual (OMW) functions

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": expected, not used
        return _Reader(str(root), None)


def wordnet_synonyms(wordnet) -> SynonymFn:
    """A cached ``word -> sorted synonyms`` function over a WordNet reader (EDA's ``get_synonyms``)."""

    @lru_cache(maxsize=200_000)
    def synonyms(word: str) -> tuple[str, ...]:
        found = set()
        for synset in wordnet.synsets(word):
            for lemma in synset.lemmas():
                name = lemma.name().replace("_", " ").replace("-", " ").lower()
                name = " ".join(_NOT_LETTERS.sub("", name).split())
                if name:
                    found.add(name)
        found.discard(word)
        return tuple(sorted(found))

    return synonyms


def synonym_replacements(tokens: Sequence[Token], ratio: float, rng: random.Random, synonyms: SynonymFn,
                         skip: Collection[int] = (), stop: frozenset[str] = NLTK_ENGLISH_STOPWORDS
                         ) -> dict[int, str]:
    """Token index -> replacement for EDA's synonym replacement of up to ``max(1, int(ratio * n_words))`` words.

    ``skip``: token indices that must not change (PaSeR's masked words). Every occurrence of a chosen word is
    replaced by the same synonym. Returns {} for ``ratio <= 0``.
    """
    words = [i for i, t in enumerate(tokens) if t.is_word]
    if ratio <= 0 or not words:
        return {}
    budget = max(1, int(ratio * len(words)))
    positions: dict[str, list[int]] = {}
    for i in words:
        word = tokens[i].text.lower()
        if i not in skip and word not in stop:
            positions.setdefault(word, []).append(i)
    candidates = list(positions)  # first-occurrence order, then shuffled by the seeded rng
    rng.shuffle(candidates)
    out: dict[int, str] = {}
    replaced = 0
    for word in candidates:
        options = synonyms(word)
        if not options:
            continue
        choice = rng.choice(options)
        out.update({i: choice for i in positions[word]})
        replaced += 1
        if replaced >= budget:
            break
    return out


def render(text: str, tokens: Sequence[Token], replace: dict[int, str]) -> str:
    """``text`` with token i replaced by ``replace[i]``; all other characters kept as they are."""
    parts: list[str] = []
    last = 0
    for i in sorted(replace):
        tok = tokens[i]
        parts.append(text[last:tok.start])
        parts.append(replace[i])
        last = tok.end
    parts.append(text[last:])
    return "".join(parts)
