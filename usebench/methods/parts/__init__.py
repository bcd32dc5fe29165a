"""The parts trainers are built from: noise (TSDAE deletion, BERT masking), ConSERT's augmentations, MLM heads,
losses, BERT-flow's Glow, DenoSent's prompt and [MASK] pooling and its denoising decoder, PaSeR's phrase masking
(RAKE phrases, WordNet synonyms) and phrase decoder, the supervised stages' labeled-data sources, example checks and
chain pooling, and the sentence-transformers modules some exports need (the flow, DenoSent's prompt)."""
