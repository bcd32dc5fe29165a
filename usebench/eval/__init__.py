"""The evaluation engine the task adapters build on: model resolution, encoder + pooling, scorers (dense,
BM25), exact retrieval, metrics, the embedding cache, and one task's evaluation (load -> encode -> score)."""
