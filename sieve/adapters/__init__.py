"""Drop-in retrievers for RAG frameworks: ``sieve.adapters.langchain`` and ``sieve.adapters.llamaindex``.

Each is an optional extra (``pip install 'sieve[langchain]'`` / ``'sieve[llamaindex]'``) and is
imported only when its module is; importing this package loads neither framework.
"""

from sieve.adapters._common import RESULT_MODES, fetch_results, result_metadata

__all__ = ["RESULT_MODES", "fetch_results", "result_metadata"]
