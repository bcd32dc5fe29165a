"""Executing run units, what `bench run` and `bench eval` execute: a unit's stages trained through the loop (each
distinct stage once) and evaluated on its tasks, the baselines, the evaluation of a model on a list of tasks, with
their locks, faults, manifest, status and progress. Planning, which trains nothing, is ``usebench.plan``."""
