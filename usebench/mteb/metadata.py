"""What MTEB's ``TaskMetadata`` says about each USEB task: data only, the logic is in usebench/mteb/useb_tasks.py.

Names: ``USEB-<Task>``, never MTEB's own ``AskUbuntuDupQuestions``, ``CQADupstack*Retrieval``, ``TwitterURLCorpus`` /
``TwitterSemEval2015`` or ``SciDocsRR``, whose data and protocols differ (docs/mteb.md). Licenses are what each
release states (AskUbuntu's and SciDocs' READMEs state none for the data; CQADupStack's download carries a LICENCE
file, Apache 2.0 as BEIR and MTEB record it; the Twitter URL corpus' README says CC BY-NC-SA 3.0 and PIT-2015's
says nothing, so TwitterPara is "multiple"). The dataset revision is not here: it is the sha256 of the files the
data root holds (usebench/mteb/useb_tasks.py), so MTEB's result cache never mixes two data roots.
"""
from __future__ import annotations

from dataclasses import dataclass

TSDAE = """@inproceedings{wang-etal-2021-tsdae-using,
  author = {Wang, Kexin and Reimers, Nils and Gurevych, Iryna},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2021},
  pages = {671--688},
  title = {{TSDAE}: Using Transformer-based Sequential Denoising Auto-Encoder for Unsupervised Sentence Embedding Learning},
  url = {https://aclanthology.org/2021.findings-emnlp.59},
  year = {2021},
}"""
TSDAE_URL = "https://aclanthology.org/2021.findings-emnlp.59"
PROTOCOL = ("Scored with usebench's implementation of the TSDAE paper's protocol (UKPLab/useb evaluators, reproduced "
            "exactly; bit-equal to `bench eval`), on the USEB release's files under the usebench data root.")


@dataclass(frozen=True)
class UsebMeta:
    """The MTEB metadata of one USEB task (``task``: the usebench adapter it runs)."""

    task: str
    name: str
    type: str
    folder: str  # under the data root
    description: str
    license: str
    domains: tuple[str, ...]
    subtypes: tuple[str, ...]
    annotations: str
    citation: str


USEB_META: dict[str, UsebMeta] = {
    "askubuntu": UsebMeta(
        task="askubuntu", name="USEB-AskUbuntu", type="Reranking", folder="useb/data-eval/askubuntu",
        description="AskUbuntu duplicate questions (Lei et al. 2016) as USEB evaluates them: the 20 BM25 candidates of "
                    "each query re-ranked by the cosine of the titles; MAP (also P@1, P@5, MRR) over the queries with a "
                    "similar question. Not MTEB's AskUbuntuDupQuestions (other data preparation, map_at_1000). License: "
                    "none stated by the release (taolei87/askubuntu). " + PROTOCOL,
        license="not specified", domains=("Programming", "Web", "Written"), subtypes=("Question answering",),
        annotations="human-annotated",
        citation=TSDAE + """
@inproceedings{lei-etal-2016-semi,
  author = {Lei, Tao and Joshi, Hrishikesh and Barzilay, Regina and Jaakkola, Tommi and Tymoshenko, Katerina and Moschitti, Alessandro and M{\\`a}rquez, Llu{\\'\\i}s},
  booktitle = {Proceedings of NAACL-HLT 2016},
  pages = {1279--1289},
  title = {Semi-supervised Question Retrieval with Gated Convolutions},
  year = {2016},
}"""),
    "cqadupstack": UsebMeta(
        task="cqadupstack", name="USEB-CQADupStack", type="Retrieval", folder="useb/data-eval/cqadupstack",
        description="CQADupStack (Hoogeveen et al. 2015) as USEB evaluates it: per forum, each query title retrieves "
                    "from the forum's titles minus the split's queries; MAP@100 as sklearn average precision over the "
                    "top 100 (normalised by the duplicates found there), mean over the 12 forums; also nDCG@10. Not "
                    "MTEB's CQADupstack*Retrieval (BEIR's split and documents, ndcg_at_10). License: the release's "
                    "LICENCE file (Apache 2.0, as BEIR and MTEB record it). " + PROTOCOL,
        license="apache-2.0", domains=("Programming", "Web", "Written", "Non-fiction"),
        subtypes=("Question answering", "Duplicate Detection"), annotations="derived",
        citation=TSDAE + """
@inproceedings{hoogeveen2015cqadupstack,
  author = {Hoogeveen, Doris and Verspoor, Karin M. and Baldwin, Timothy},
  booktitle = {Proceedings of the 20th Australasian Document Computing Symposium (ADCS)},
  pages = {3:1--3:8},
  title = {CQADupStack: A Benchmark Data Set for Community Question-Answering Research},
  year = {2015},
}"""),
    "twitterpara": UsebMeta(
        task="twitterpara", name="USEB-TwitterPara", type="PairClassification", folder="useb/data-eval/twitterpara",
        description="TwitterPara as USEB evaluates it: the Twitter URL corpus test file (Lan et al. 2017; 9,334 "
                    "labelled pairs) and PIT-2015 test (Xu et al. 2015; 838): average precision of the cosine against "
                    "the binary label (middle grade dropped), the mean of the two APs (ap_avg); also Spearman. Not "
                    "MTEB's TwitterURLCorpus / TwitterSemEval2015 (51,534 / 16,777 pairs, max_ap over four "
                    "similarities). Licenses: Twitter URL corpus CC BY-NC-SA 3.0 (its README, non-commercial); "
                    "PIT-2015: none stated. " + PROTOCOL,
        license="multiple", domains=("Social", "Written"), subtypes=(), annotations="human-annotated",
        citation=TSDAE + """
@inproceedings{lan-etal-2017-continuously,
  author = {Lan, Wuwei and Qiu, Siyu and He, Hua and Xu, Wei},
  booktitle = {Proceedings of EMNLP 2017},
  pages = {1235--1245},
  title = {A Continuously Growing Dataset of Sentential Paraphrases},
  year = {2017},
}
@inproceedings{xu-etal-2015-semeval,
  author = {Xu, Wei and Callison-Burch, Chris and Dolan, Bill},
  booktitle = {Proceedings of SemEval 2015},
  pages = {1--11},
  title = {{S}em{E}val-2015 Task 1: Paraphrase and Semantic Similarity in {T}witter ({PIT})},
  year = {2015},
}"""),
    "scidocs": UsebMeta(
        task="scidocs", name="USEB-SciDocs", type="Reranking", folder="useb/data-eval/scidocs",
        description="SciDocs cite, co-cite, co-read and co-view (Cohan et al. 2020) as USEB evaluates them: each "
                    "query's candidates re-ranked by the cosine of the titles, trec MAP (pytrec_eval), mean of the "
                    "four (map_avg); also nDCG. Not MTEB's SciDocsRR (other candidates, map_at_1000). License: none "
                    "stated for the data by the release (allenai/scidocs). " + PROTOCOL,
        license="not specified", domains=("Academic", "Non-fiction", "Written"),
        subtypes=("Scientific Reranking",), annotations="derived",
        citation=TSDAE + """
@inproceedings{cohan-etal-2020-specter,
  author = {Cohan, Arman and Feldman, Sergey and Beltagy, Iz and Downey, Doug and Weld, Daniel},
  booktitle = {Proceedings of ACL 2020},
  pages = {2270--2282},
  title = {{SPECTER}: Document-level Representation Learning using Citation-informed Transformers},
  year = {2020},
}"""),
}

AVERAGE_NAME = "USEB-Average"
AVERAGE_METRIC = "useb_avg"
AVERAGE_DESCRIPTION = ("The TSDAE paper's USEB average: the mean of the main scores of USEB-AskUbuntu (map), "
                       "USEB-CQADupStack (map@100), USEB-TwitterPara (ap_avg) and USEB-SciDocs (map_avg), each "
                       "computed with the paper's protocol (scores 0-1; the paper prints them x100).")
BENCHMARK_NAME = "USEB"
BENCHMARK_DESCRIPTION = ("USEB (Wang, Reimers & Gurevych 2021): AskUbuntu, CQADupStack, TwitterPara and SciDocs with "
                         "the TSDAE paper's exact evaluation protocol, from the usebench data root, and their average.")
NAME_TO_TASK = {meta.name: task for task, meta in USEB_META.items()}
