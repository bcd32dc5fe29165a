"""``bench doctor``: what a new machine can do before a grid runs on it (issue 30).

Sections (each a dict of JSON-able numbers; a section that fails records ``error`` and the others still run):

- ``versions``: Python, torch (+ CUDA), transformers, sentence-transformers, numpy, faiss, bm25s, the device;
- ``precision``: bf16, fp16 and TF32 support on the device;
- ``faiss``: installed, GPU build, visible GPUs;
- ``matmul``: warmed-up square matmul TFLOP/s at bf16 and fp32 (fp16 and TF32 too on a GPU);
- ``training``: per trainer at BERT-base width (a random ``BertConfig()``, the packaged MiniLM's tokenizer, nothing
  downloaded), real 32 x 64 batches, in fp32, TF32 (GPU) and bf16: our step on the old path and the new (fast)
  path, sentence-transformers' step for the same loss where one exists, and a lean loop around the same module,
  each the median of 20 synced steps after a warm-up over every batch shape, plus a window mean
  (:mod:`usebench.doctor.steptime` says exactly what is on the clock); the ratios ours/ST and ours/lean; model
  FLOPs counted from the batches' shapes (:mod:`usebench.doctor.flops`), MFU against the measured matmul rate and
  the datasheet peak (:mod:`usebench.doctor.hardware`), peak GPU memory, the step path's notes;
- ``search``: exact top-100 at Quora's scale (522,931 x 768, 10,000 queries) per available backend on random unit
  vectors, and on an anisotropic set (mean cosine ~0.9, an untuned BERT's) the unsure-row fraction, peak GPU
  memory; CPU backends search a query sample on a GPU host (said in the row);
- ``encode``: encoder throughput (texts/s) of the random BERT-base on the device;
- ``determinism``: max abs weight difference between two identical runs and between a run and its
  crash-and-resume twin, with and without deterministic kernels.

``quick=True`` runs every section at toy size (CI runs it on the CPU in seconds).

The modules: ``common`` (sizes, trainer list, device helpers), ``probes`` (versions, precision, FAISS, matmul),
``trainers`` (the random BERT, data, configs, determinism), ``training`` (the timed training section),
``steptime`` (the clock), ``references`` (sentence-transformers' steps), ``lean`` (the lean loop), ``retrieval``
(search, encode), ``report``
(the section runner, the finite-number check, the summary). The names below are the package's interface.
"""
from __future__ import annotations

from usebench.doctor.common import (
    FULL,
    QUICK,
    QUORA_DIM,
    QUORA_DOCS,
    QUORA_QUERIES,
    SECTIONS,
    TRAINERS,
    WORDS,
    Size,
    device_name,
    toy_sentences,
)
from usebench.doctor.probes import faiss_info, matmul, matmul_tflops, precision, versions
from usebench.doctor.report import finite_numbers, run_doctor, summary
from usebench.doctor.retrieval import encode, search, unit_vectors
from usebench.doctor.trainers import (
    determinism,
    max_abs_difference,
    method_config,
    random_bert,
    step_flops,
    training_data,
)
from usebench.doctor.training import PATHS, StepBench, training, training_row, trainer_setup

__all__ = [
    "FULL", "PATHS", "QUICK", "QUORA_DIM", "QUORA_DOCS", "QUORA_QUERIES", "SECTIONS", "TRAINERS", "WORDS", "Size",
    "determinism", "device_name", "encode", "faiss_info", "finite_numbers", "matmul", "matmul_tflops",
    "max_abs_difference", "method_config", "precision", "random_bert", "run_doctor", "search", "step_flops",
    "StepBench", "summary", "toy_sentences", "trainer_setup", "training", "training_data", "training_row",
    "unit_vectors", "versions",
]
