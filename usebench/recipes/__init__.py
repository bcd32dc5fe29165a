"""The recipes: one TOML file per paper's setup (``<name>.toml``, read by :mod:`usebench.reproduce.recipes`), and the
presets a recipe gives every method it trains (``laptop_presets.py``: each method's ``laptop`` preset;
``thesis_presets.py``: the thesis' Table 5.3 setup behind the ``thesis`` presets).

The method plugins build their preset tables from those modules, so this package imports nothing of the suite and
sits below the trainers (tests/test_layers.py): the recipe contributes its presets downward, and the recipe engine
above (usebench.reproduce) reads the TOML files beside them.
"""
