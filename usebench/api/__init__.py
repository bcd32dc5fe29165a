"""The Python API (``usebench.evaluate``, ``load_results``, ``aggregate``, ``table``, ``list_tasks``): evaluation of any model on tasks,
its arguments, in-memory models' identities, the staging store, results as pandas frames, the task list."""
