"""The documentation build's generators: reference pages from the registries, the pipeline diagram and an
example report, each a function that returns the pages' text (or bytes) so that tests can call it without
MkDocs. ``hooks.py`` hands them to MkDocs as generated files; nothing here is typed in by hand."""
