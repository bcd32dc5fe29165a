"""SentEval's STS preprocessing. Golden strings are lines of the SentEval release itself (original -> SentEval
form, as SOURCES.md describes the shared copies), not output of the code under test."""
from __future__ import annotations

import pytest

from usebench.data.senteval import convert_sts_input, convert_stsb_csv, perl_lc, senteval_sentence, senteval_sts_dir, \
    senteval_stsb_dir

RELEASE_PAIRS = [  # (official release, SentEval file): MSRpar / answers-forums / headlines lines
    ('"It\'s a huge black eye," said publisher Arthur Ochs Sulzberger Jr., whose family has controlled the paper '
     'since 1896.',
     '" it \' s a huge black eye , " said publisher arthur ochs sulzberger jr . , whose family has controlled the '
     'paper since 1896 .'),
    ("Only Intel Corp.'s 0.3 percent yield was lower.", "only intel corp . ' s 0.3 percent yield was lower ."),
    ("Semiconductor giant Intel Corp. said yesterday that its second-quarter profits doubled",
     "semiconductor giant intel corp. said yesterday that its second-quarter profits doubled"),
    ("It was announced that Green will replace Park in the Dale Earnhardt Inc. No. 1 Chevrolet, beginning with the "
     "Winston Open at Lowe's Motor Speedway next week.",
     "it was announced that green will replace park in the dale earnhardt inc . no . 1 chevrolet , beginning with "
     "the winston open at lowe ' s motor speedway next week ."),
    ('Bush said resistance forces hostile to the U.S. presence "feel like ... the conditions are such that they can '
     'attack us there.',
     'bush said resistance forces hostile to the u.s. presence " feel like ... the conditions are such that they '
     'can attack us there .'),
    ("Shares of MONY were gaining $2.57, or 9%, to $31.90 in after-hours trading on Instinet.",
     "shares of mony were gaining $ 2.57 , or 9 % , to $ 31.90 in after-hours trading on instinet ."),
    ("To any observer between 'A' and 'B' where the light wave passes, it passes with the speed of light.",
     "to any observer between ' a ' and ' b ' where the light wave passes , it passes with the speed of light ."),
    ("'Fast &amp; Furious' star Paul Walker dies in car crash",
     "'fast & amp ; furious ' star paul walker dies in car crash"),
    ("The ADRs fell 10 cents to $28.95 at 10:06 a.m. in New York Stock Exchange composite trading today.",
     "the adrs fell 10 cents to $ 28.95 at 10 : 06 a.m. in new york stock exchange composite trading today ."),
]


@pytest.mark.parametrize("original,expected", RELEASE_PAIRS)
def test_sentences_as_the_senteval_release_has_them(original, expected):
    assert senteval_sentence(original) == expected


def test_blank_and_whitespace_lines_pass_through():
    assert senteval_sentence("") == ""
    assert senteval_sentence("  ") == "  "


def test_perl_lc_has_no_final_sigma():
    assert perl_lc("ΟΔΟΣ") == "οδοσ"  # Python's str.lower alone gives "οδος"


def test_input_file_uses_cut_semantics(tmp_path):
    path = tmp_path / "STS.input.x.txt"
    path.write_text("A b.\tC d.\tsrc1\tsrc2\nno tab\n\t\nlast line without newline.\tOk.")
    convert_sts_input(path)
    # cut -f1/-f2: a line without a tab is printed whole; fields beyond 2 are dropped; output ends with \n
    assert path.read_text() == "a b .\tc d .\nno tab\tno tab\n\t\nlast line without newline .\tok .\n"


def test_stsb_csv_keeps_columns_1_to_5(tmp_path):
    path = tmp_path / "sts-dev.csv"
    path.write_text("main-news\theadlines\t2013\t0001\t3.4\tObama's plan.\tA plan.\tsrc-a\tsrc-b\n")
    convert_stsb_csv(path)
    assert path.read_text() == "main-news\theadlines\t2013\t0001\t3.4\tobama ' s plan .\ta plan .\n"


def _compare(mine, ref):
    """(byte-identical lines, compared lines, identical files, files) of two folders' reference files."""
    same_lines = lines = same_files = files = 0
    for rf in sorted(ref.iterdir()):
        files += 1
        same_files += (mine / rf.name).read_bytes() == rf.read_bytes()
        if "input" in rf.name or rf.suffix == ".csv":
            a = (mine / rf.name).read_text(encoding="utf-8").split("\n")
            b = rf.read_text(encoding="utf-8").split("\n")
            assert len(a) == len(b), rf
            pairs = [(x, y) for x, y in zip(a, b, strict=True) if y]
            lines += len(pairs)
            same_lines += sum(x == y for x, y in pairs)
    return same_lines, lines, same_files, files


@pytest.mark.slow
def test_conversion_reproduces_the_senteval_release(real_data, tmp_path):
    """The official releases in sts/original, converted, against SentEval's own files in sts/senteval."""
    subsets = {"STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
               "STS13": ("FNWN", "headlines", "OnWN"),
               "STS14": ("deft-forum", "deft-news", "headlines", "OnWN", "images", "tweet-news"),
               "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
               "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")}
    counts = []
    for year, subs in subsets.items():
        senteval_sts_dir(real_data / f"sts/original/{year}-en-test", tmp_path / year, subs,
                         "STS2016." if year == "STS16" else "STS.")
        counts.append(_compare(tmp_path / year, real_data / f"sts/senteval/{year}-en-test"))
    csvs = ["sts-train.csv", "sts-dev.csv", "sts-test.csv"]
    senteval_stsb_dir(real_data / "sts/original/stsbenchmark", tmp_path / "stsb", csvs)
    counts.append(_compare(tmp_path / "stsb", real_data / "sts/senteval/STSBenchmark"))
    same_lines, lines, same_files, files = (sum(c[i] for c in counts) for i in range(4))
    # measured: 34679 of 34684 lines (99.986%) and 58 of 62 files; the 5 lines are listed in the report
    assert lines == 34684
    assert same_lines >= 34679, f"{same_lines}/{lines}"
    assert (same_files, files) == (58, 62)
