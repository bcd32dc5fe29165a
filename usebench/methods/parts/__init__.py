"""The parts trainers are built from: noise (TSDAE deletion, BERT masking), ConSERT's augmentations, MLM heads,
losses, BERT-flow's Glow, RAKE phrases and WordNet synonyms (PaSeR), labeled-data sources (the supervised stages),
and the sentence-transformers modules some exports need (the flow, DenoSent's prompt)."""
