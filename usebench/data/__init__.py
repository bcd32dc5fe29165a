"""Data: the data manager (download, import, verify), the manifest of sources and checksums, SentEval's
tokenisation, and corpus reading. Below the tasks: it knows files and formats, not task adapters."""
