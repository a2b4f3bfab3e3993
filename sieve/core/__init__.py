"""The bottom layer every other part of Sieve may import: errors, defaults, the runtime switches, the
registry-backed pydantic choice type, lazy exports, loopback helpers, and a retrained run's record
(:class:`~sieve.core.runs.RunArtifact`, read by the policy loader below the commands that write it).

Nothing here imports another part of Sieve (``tests/test_layers.py`` holds it), so an import of
``sieve.core`` never pulls in a model library, the retriever or the web stack.
"""
