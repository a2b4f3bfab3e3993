"""The closing ranker's trainer (the ranker itself is :mod:`sieve.agent.ranking`).

* ``episodes.py``: episodes run as serving runs them, each one's pool, feature rows and labels
  (:class:`~sieve.train.ranking.episodes.RankingData`), plus off-topic copies and a task split;
* ``fit.py``: fit a ranker on pooled episodes (one model or an ensemble of seeds), fine-tune one,
  and its recall table;
* ``__main__.py``: ``python -m sieve.train.ranking``, the shipped ranker's fit on declared data;
* ``corpus.py``: ``sieve train``'s part, the shipped ranker fine-tuned on a user's synthetic tasks
  (``--ranker retrain``), and Sieve as served scored per task for the verdict.

A new feature of :mod:`sieve.agent.ranking.features` needs no change here: episodes keep what
the features are computed from, and :func:`~sieve.train.ranking.episodes.refeaturize` recomputes
the rows of pickled ones.
"""
