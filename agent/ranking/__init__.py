"""The closing ranking: how every episode's returned evidence is ranked, after the policy is done.

An episode ends with the policy's own ranking; the harness, not the policy, then ranks it together
with the question's own hybrid search (``SearchAgent.floor``), one of two ways
(``FloorConfig.method``):

* ``features.py``: the pool of both rankings' chunks and each chunk's feature row
  (:class:`~sieve.agent.ranking.features.RankingFeatures`, named by ``FEATURES``);
* ``model.py``: the ranker, a small learned model over those rows (:class:`~sieve.agent.ranking.model.Ranker`,
  the shipped ``ranker_default.json``), and :func:`~sieve.agent.ranking.model.fuse`, which returns the
  pool by its probability of being evidence (method ``"fusion"``, the default);
* ``floor.py``: the fixed per-document interleave (method ``"interleave"``), tuned by
  ``python -m sieve.eval.tune_floor``.

The ranker is fitted by :mod:`sieve.train.ranking` (``python -m sieve.train.ranking`` on declared
data; :mod:`sieve.train.ranking.corpus` adapts it to a user's corpus). To add a feature: a field of
``RankingFeatures`` and its value in :func:`~sieve.agent.ranking.features.features`, then refit.
The learned policy's own chunk features (``CHUNK_FEATURES``) are another thing: they live with the
policy and steer its searches during the episode.
"""
