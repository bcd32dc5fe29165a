"""Planning, nothing trained: every run unit built and checked from presets, chains, settings, variants,
stage data and requirements, its stages' identities, and what it will cost."""
