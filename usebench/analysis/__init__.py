"""`bench analyze`: content words and POS tags of a training corpus."""
