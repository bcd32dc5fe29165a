"""SentEval's STS preprocessing: the official STS12-16 / STS-benchmark releases -> the `sts/senteval/` form.

SentEval's ``data/downstream/get_transfer_data.bash`` (Conneau & Kiela 2018) unzips each release, renames the
STS16 files to ``STS.input/STS.gs.<subset>.txt``, and rewrites every input file as
``cut -f1 | tokenizer.perl -l en -no-escape | lowercase.perl`` pasted beside the same for ``-f2`` (STS-benchmark:
columns 1-5 kept verbatim, columns 6 and 7 tokenised, the source columns dropped). SimCSE-style STS numbers
are computed on those files.

``moses_tokenize`` is our own port of Moses' ``tokenizer.perl`` (the non-Penn path, English, no escaping) with
the behaviour that the SentEval release files themselves show where it differs from today's Moses:

- an apostrophe with a character on each side is split off on both sides (``it's`` -> ``it ' s``,
  ``787's`` -> ``787 ' s``), by Moses' four alpha/non-alpha context rules applied left to right; one at the
  very start or end of a sentence stays attached;
- a known non-breaking prefix (``Mr.``, ``Corp.``) keeps its period only when the next token starts with a
  letter (``Corp. ,`` -> ``Corp . ,``; ``Aug. 15`` -> ``Aug . 15``); numeric-only prefixes are not honoured;
- a sentence-final ``.'`` becomes `` . '`` with no trailing space.

With these rules the conversion reproduces 34679 of the 34684 non-empty STS12-16/STSb input lines of the
SentEval release byte for byte (99.986%; tests/data/test_senteval.py), against 84% for stock Moses
English rules. The five other lines: ``vs.`` before a number and ``Rev.'s`` keep their period in the release,
and one ``İ`` is split from its combining dot. The Unicode classes and the English non-breaking-prefix list are
Moses' own, as shipped by ``sacremoses``.
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from usebench.data.corpus import read_lines_lf
from usebench.errors import DataFormatError

# Perl's \s (Unicode); Python's \s also matches \x1c-\x1f, which Perl instead deletes as control characters.
PERL_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


@dataclass(frozen=True)
class _Rules:
    """Compiled regular expressions of the tokenizer (built once, on first use)."""

    blank: re.Pattern
    spaces: re.Pattern
    one_space: re.Pattern
    control: re.Pattern
    pad_special: re.Pattern
    comma_after: re.Pattern
    comma_before: re.Pattern
    comma_final: re.Pattern
    apostrophes: tuple[re.Pattern, ...]
    word_period: re.Pattern
    alpha: re.Pattern
    starts_alpha: re.Pattern
    starts_lower: re.Pattern
    prefixes: frozenset[str]


@lru_cache(maxsize=1)
def _rules() -> _Rules:
    from sacremoses.corpus import NonbreakingPrefixes, Perluniprops

    props = Perluniprops()

    def cls(name: str) -> str:
        return re.escape("".join(props.chars(name)))

    alpha, alnum, num, lower = cls("IsAlpha"), cls("IsAlnum"), cls("IsN"), cls("IsLower")
    # "Mr", "Corp"...; entries marked #NUMERIC_ONLY# ("No 2") are not honoured by the SentEval release.
    prefixes = frozenset(w.strip() for w in NonbreakingPrefixes().words("en") if "#" not in w)
    return _Rules(
        blank=re.compile(f"[{PERL_SPACE}]*"),
        spaces=re.compile(f"[{PERL_SPACE}]+"),
        one_space=re.compile(f"[{PERL_SPACE}]"),
        control=re.compile(r"[\000-\037]"),
        pad_special=re.compile(f"([^{alnum}{PERL_SPACE}.'`,\\-])"),
        comma_after=re.compile(f"([^{num}]),"),
        comma_before=re.compile(f",([^{num}])"),
        comma_final=re.compile(f"([{num}]),$"),
        # the four alpha/non-alpha contexts of Moses' English rules, each splitting on both sides
        apostrophes=tuple(re.compile(f"({a})'({b})") for a, b in (
            (f"[^{alpha}]", f"[^{alpha}]"), (f"[^{alpha}]", f"[{alpha}]"),
            (f"[{alpha}]", f"[^{alpha}]"), (f"[{alpha}]", f"[{alpha}]"))),
        word_period=re.compile(f"^([^{PERL_SPACE}]+)\\.$"),
        alpha=re.compile(f"[{alpha}]"),
        starts_alpha=re.compile(f"^[{alpha}]"),
        starts_lower=re.compile(f"^[{lower}]"),
        prefixes=prefixes,
    )


def _perl_split(pattern: re.Pattern, text: str) -> list[str]:
    """``split(/pattern/, text)`` as Perl does it: trailing empty fields are dropped."""
    parts = pattern.split(text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _multidots(text: str) -> str:
    text = re.sub(r"\.([.]+)", r" DOTMULTI\1", text)
    while "DOTMULTI." in text:
        text = re.sub(r"DOTMULTI\.([^.])", r"DOTDOTMULTI \1", text)
        text = text.replace("DOTMULTI.", "DOTDOTMULTI")
    return text


def _restore_multidots(text: str) -> str:
    while "DOTDOTMULTI" in text:
        text = text.replace("DOTDOTMULTI", "DOTMULTI.")
    return text.replace("DOTMULTI", ".")


def _periods(words: list[str], r: _Rules) -> list[str]:
    """Split a word's final period unless it marks an abbreviation (see the module docstring)."""
    out = []
    for i, word in enumerate(words):
        m = r.word_period.match(word)
        if m:
            pre = m.group(1)
            nxt = words[i + 1] if i + 1 < len(words) else None
            keep = nxt is not None and (  # the last word's period always ends the sentence
                ("." in pre and r.alpha.search(pre)) or (pre in r.prefixes and r.starts_alpha.match(nxt))
                or r.starts_lower.match(nxt))
            if not keep:
                word = pre + " ."
        out.append(word)
    return out


def moses_tokenize(text: str) -> str:
    """One line through Moses' tokenizer (English, ``-no-escape``) as the SentEval release applied it."""
    r = _rules()
    if r.blank.fullmatch(text):
        return text  # tokenizer.perl prints blank lines unchanged
    text = r.control.sub("", r.spaces.sub(" ", f" {text} "))
    text = re.sub(" +", " ", text).removeprefix(" ").removesuffix(" ")
    text = _multidots(r.pad_special.sub(r" \1 ", text))
    text = r.comma_after.sub(r"\1 , ", text)
    text = r.comma_before.sub(r" , \1", text)
    text = r.comma_final.sub(r"\1 ,", text)
    for rule in r.apostrophes:
        text = rule.sub(r"\1 ' \2", text)
    text = " ".join(_periods(_perl_split(r.one_space, text), r)) + " "
    text = re.sub(" +", " ", text).removeprefix(" ").removesuffix(" ")
    text = re.sub(r"\.' ?$", " . '", text, count=1)
    return _restore_multidots(text)


def perl_lc(text: str) -> str:
    """``lc`` as lowercase.perl applies it (Perl has no final-sigma rule: every capital sigma becomes σ)."""
    return text.replace("\u03a3", "\u03c3").lower()


def senteval_sentence(text: str) -> str:
    """A sentence as SentEval's STS files hold it: Moses-tokenised, then lowercased."""
    return perl_lc(moses_tokenize(text))


def _cut(line: str, field: int) -> str:
    """``cut -f<field>`` (1-based) of one line: a line without a tab is printed whole."""
    if "\t" not in line:
        return line
    fields = line.split("\t")
    return fields[field - 1] if field <= len(fields) else ""


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))


def convert_sts_input(path: Path) -> None:
    """Rewrite an ``STS.input.<subset>.txt`` in place as ``tok(cut -f1) \\t tok(cut -f2)``."""
    lines = read_lines_lf(path)
    _write_lines(path, [senteval_sentence(_cut(ln, 1)) + "\t" + senteval_sentence(_cut(ln, 2)) for ln in lines])


def convert_stsb_csv(path: Path) -> None:
    """Rewrite an STS-benchmark ``sts-*.csv`` in place: columns 1-5 verbatim, sentences 6 and 7 tokenised."""
    out = []
    for ln in read_lines_lf(path):
        head = ln if "\t" not in ln else "\t".join(ln.split("\t")[:5])
        out.append(f"{head}\t{senteval_sentence(_cut(ln, 6))}\t{senteval_sentence(_cut(ln, 7))}")
    _write_lines(path, out)


def senteval_sts_dir(src: Path, out: Path, subsets: Sequence[str], prefix: str = "STS.") -> None:
    """``out`` = the release folder ``src`` in SentEval's form: every file copied, the subsets' files renamed
    from ``<prefix>input/gs.<subset>.txt`` to ``STS.input/gs.<subset>.txt`` and their inputs tokenised."""
    shutil.copytree(src, out)
    for subset in subsets:
        for kind in ("input", "gs"):
            old, new = out / f"{prefix}{kind}.{subset}.txt", out / f"STS.{kind}.{subset}.txt"
            if not old.is_file():
                raise DataFormatError(src / old.name, None, f"the {subset!r} {kind} file of this STS release",
                                      "no such file")
            old.rename(new)
        convert_sts_input(out / f"STS.input.{subset}.txt")


def senteval_stsb_dir(src: Path, out: Path, files: Sequence[str]) -> None:
    """``out`` = the STS-benchmark folder ``src`` in SentEval's form (the listed csv files converted)."""
    shutil.copytree(src, out)
    for name in files:
        if not (out / name).is_file():
            raise DataFormatError(src / name, None, "an STS-benchmark split file", "no such file")
        convert_stsb_csv(out / name)
