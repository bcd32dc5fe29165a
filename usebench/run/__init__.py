"""Run units, what `bench run` and `bench eval` execute: the grid of (method, corpus, seed) units, each trained
through the loop and evaluated on its tasks, and the evaluation of a model on a list of tasks. It is the layer
that knows the registered methods and tasks by name."""
