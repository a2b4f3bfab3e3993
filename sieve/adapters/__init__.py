"""Drop-in retrievers for RAG frameworks: ``sieve.adapters.langchain`` and ``sieve.adapters.llamaindex``.

Each is an optional extra (``pip install 'sieve[langchain]'`` / ``'sieve[llamaindex]'``) and is
imported only when its module is; importing this package loads neither framework.
"""

from sieve.adapters._common import fetch_results, result_metadata, result_modes

__all__ = ["fetch_results", "result_metadata", "result_modes"]
