"""What the learned policy needs at decision time, without torch: its config, its decisions and a numpy network.

Serving never trains, so it never needs autograd: :class:`NumpyNetwork` runs the same four MLP
heads as :class:`~sieve.agent.policies.learned.network.PolicyNetwork` on numpy arrays, read from
the same ``model.safetensors``, and ``sieve search`` / the server start without importing torch.
Training (sampling with recorded decisions, re-scoring, updates) uses the torch network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from sieve.agent.policies.learned.features import CANDIDATE_FEATURES, CHUNK_FEATURES, STATE_FEATURES
from sieve.core.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from collections.abc import Sequence

FORMAT = "sieve-learned-policy"
VERSION = 1
DecisionKind = Literal["select", "prune", "rank"]
HEADS = ("select", "end", "prune", "rank")


@dataclass
class LearnedConfig:
    """Shape of the network and of the episodes the learned policy runs (saved with each checkpoint)."""

    hidden: int = field(default=64, metadata={"help": "Width of each head's two hidden layers."})
    max_search_turns: int = field(default=4, metadata={"help": "Turns that may search; the next one finishes."})
    max_picks: int = field(default=6, metadata={"help": "Most searches/reads issued in one turn."})
    seed_chunks: int = field(default=5, metadata={"help": "Best chunks whose mentions become candidate queries."})
    mentions_per_chunk: int = field(default=5, metadata={"help": "Mentions of one chunk offered as candidates."})
    max_candidates: int = field(default=32, metadata={"help": "Candidate actions scored per turn."})
    hop_k: int = field(default=3, metadata={"help": "Chunks shown by a search other than the question's own."})
    prune_margin: int = field(
        default=5, metadata={"help": "Chunks ranked within k + this margin are never pruned (they may be returned)."}
    )

    def __post_init__(self) -> None:
        bad = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) < (0 if f.name == "prune_margin" else 1)
        }
        if bad:
            raise InvalidInput(f"Expected positive LearnedConfig values, got {bad}")


@dataclass
class Decision:
    """One decision of an episode, with what is needed to re-score it.

    ``picks``: *select* — indices into ``[END] + items`` in draw order (0 = END); *rank* — indices
    into ``items`` in draw order; *prune* — one 0/1 action per item. ``groups`` (rank): the
    document of each item (drawing one removes its whole group). ``end_first``: *select* — whether
    END could be drawn first. ``step_logps``: log-probability of each step as sampled.
    """

    kind: DecisionKind
    items: np.ndarray
    state: np.ndarray
    picks: list[int]
    step_logps: list[float]
    groups: list[int] | None = None
    end_first: bool = True
    temperature: float = 1.0  # logits were divided by this when sampling (exploration in training)
    episode: int = 0  # index of the episode in a training batch (set by the trainer)

    @property
    def logp(self) -> float:
        return float(sum(self.step_logps))


# -- choosing (numpy, at decision time) ------------------------------------------------------------


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def draw_sequence(
    scores: np.ndarray,
    n_draws: int,
    *,
    groups: Sequence[int] | None = None,
    stop_index: int | None = None,
    stop_first: bool = True,
    rng: np.random.Generator | None = None,
) -> tuple[list[int], list[float]]:
    """Draw up to ``n_draws`` items without replacement (Plackett-Luce), or take the best (``rng=None``).

    Drawing ``stop_index`` ends the sequence (it may not come first unless ``stop_first``); after
    ``n_draws`` other items the sequence ends without it. Drawing an item removes every item of its
    group. Returns (picks, log-probability of each pick).

    Example:
        >>> draw_sequence(np.array([0.0, 2.0, 1.0]), 2, stop_index=0)[0]
        [1, 2]
    """
    n = len(scores)
    groups = list(groups) if groups is not None else list(range(n))
    avail = np.ones(n, dtype=bool)
    picks: list[int] = []
    logps: list[float] = []
    while len(picks) < n_draws and avail.any():
        mask = avail.copy()
        if stop_index is not None and not picks and not stop_first:
            mask[stop_index] = False
        if not mask.any():
            break
        idx = np.flatnonzero(mask)
        lp = _log_softmax(scores[idx].astype(np.float64))
        j = int(np.argmax(lp)) if rng is None else int(rng.choice(len(idx), p=np.exp(lp)))
        pick = int(idx[j])
        picks.append(pick)
        logps.append(float(lp[j]))
        if pick == stop_index:
            break
        g = groups[pick]
        avail &= np.array([gg != g for gg in groups])
    return picks, logps


def draw_bernoulli(logits: np.ndarray, rng: np.random.Generator | None = None) -> tuple[list[int], list[float]]:
    """One 0/1 action per logit (``rng=None``: 1 where the logit is positive) and its log-probability."""
    p = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    acts = (p > 0.5) if rng is None else (rng.random(len(p)) < p)
    lp = np.where(acts, np.log(np.clip(p, 1e-12, 1.0)), np.log(np.clip(1.0 - p, 1e-12, 1.0)))
    return [int(a) for a in acts], [float(x) for x in lp]


def read_checkpoint(folder: str | Path) -> tuple[LearnedConfig, dict[str, Any], Path]:
    """A checkpoint folder's config, meta and weights file, checked against this version's features.

    Raises:
        NotFound: the folder lacks ``config.json`` or ``model.safetensors``.
        InvalidInput: the files are not a learned-policy checkpoint of this feature set.
    """
    folder = Path(folder)
    cfg_path, weights = folder / "config.json", folder / "model.safetensors"
    if not cfg_path.is_file() or not weights.is_file():
        raise NotFound(
            f"Expected a learned-policy checkpoint folder with config.json and model.safetensors, got {str(folder)!r}"
        )
    try:
        body = json.loads(cfg_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"Expected JSON in {cfg_path}, got {exc}") from None
    if not isinstance(body, dict):
        raise InvalidInput(f"Expected a JSON object in {cfg_path}, got {type(body).__name__}")
    if body.get("format") != FORMAT:
        raise InvalidInput(f"Expected format {FORMAT!r} in {cfg_path}, got {body.get('format')!r}")
    want = {"chunk": list(CHUNK_FEATURES), "candidate": list(CANDIDATE_FEATURES), "state": list(STATE_FEATURES)}
    if body.get("features") != want:
        raise InvalidInput(
            f"Expected a checkpoint of this version's features {want}, got {body.get('features')}; "
            "retrain it with `sieve train rl --policy learned`"
        )
    policy, meta = body.get("policy", {}), body.get("meta", {})
    if not isinstance(policy, dict) or not isinstance(meta, dict):
        raise InvalidInput(f"Expected objects under 'policy' and 'meta' in {cfg_path}")
    known = {f.name for f in fields(LearnedConfig)}
    if unknown := sorted(set(policy) - known):
        raise InvalidInput(f"Expected 'policy' keys among {sorted(known)} in {cfg_path}, got unknown {unknown}")
    try:
        config = LearnedConfig(**policy)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"Expected valid 'policy' settings in {cfg_path}, got {exc}") from None
    return config, meta, weights


class NumpyNetwork:
    """The four heads of a checkpoint as numpy matrices: Linear -> tanh -> Linear -> tanh -> Linear, per head.

    Same inputs and outputs as ``PolicyNetwork.select_scores`` / ``prune_logits`` / ``rank_scores``,
    on numpy arrays (float32), with no gradient.
    """

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.layers: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for head in HEADS:
            idx = sorted({int(k.split(".")[1]) for k in weights if k.startswith(f"{head}.") and k.endswith(".weight")})
            if not idx:
                raise InvalidInput(f"Expected weights of the {head!r} head in the checkpoint, got none")
            self.layers[head] = [
                (weights[f"{head}.{i}.weight"].T.astype(np.float32), weights[f"{head}.{i}.bias"].astype(np.float32))
                for i in idx
            ]

    @classmethod
    def load(cls, folder: str | Path) -> tuple[NumpyNetwork, LearnedConfig, dict[str, Any]]:
        """The checkpoint in ``folder`` (see :func:`read_checkpoint`) as a numpy network."""
        from safetensors.numpy import load_file

        config, meta, weights = read_checkpoint(folder)
        try:
            tensors = load_file(str(weights))
        except Exception as exc:  # safetensors raises its own SafetensorError, OSError, ...
            raise InvalidInput(
                f"Expected safetensors weights in {weights}, got an unreadable file ({type(exc).__name__}: {exc})"
            ) from None
        try:
            net = cls(tensors)
            net.check()
        except InvalidInput:  # a head missing: already said in words
            raise
        except (KeyError, ValueError, IndexError) as exc:
            raise InvalidInput(
                f"Expected the weights in {weights} to fit this version's features, got {type(exc).__name__}: {exc}; "
                "retrain it with `sieve train rl --policy learned`"
            ) from None
        return net, config, meta

    def check(self) -> None:
        """Run every head once on zeros of this version's feature widths: a checkpoint whose layers do
        not fit fails here, at load, not at a user's first search."""
        chunk, cand, state = (
            np.zeros((1, len(f)), np.float32) for f in (CHUNK_FEATURES, CANDIDATE_FEATURES, STATE_FEATURES)
        )
        shapes = (
            self.select_scores(cand, state[0]).shape,
            self.prune_logits(chunk, state[0]).shape,
            self.rank_scores(chunk).shape,
        )
        if shapes != ((2,), (1,), (1,)):
            raise ValueError(f"head outputs of shapes {shapes}")

    def _mlp(self, head: str, x: np.ndarray) -> np.ndarray:
        layers = self.layers[head]
        for w, b in layers[:-1]:
            x = np.tanh(x @ w + b)
        w, b = layers[-1]
        return (x @ w + b)[..., 0]

    def select_scores(self, items: np.ndarray, state: np.ndarray) -> np.ndarray:
        """[n] candidate logits with the END logit prepended at index 0: [n + 1]."""
        s = np.broadcast_to(state, (*items.shape[:-1], state.shape[-1]))
        cand = self._mlp("select", np.concatenate([items, s], axis=-1))
        return np.concatenate([np.atleast_1d(self._mlp("end", state)), cand], axis=-1)

    def prune_logits(self, items: np.ndarray, state: np.ndarray) -> np.ndarray:
        s = np.broadcast_to(state, (*items.shape[:-1], state.shape[-1]))
        return self._mlp("prune", np.concatenate([items, s], axis=-1))

    def rank_scores(self, items: np.ndarray) -> np.ndarray:
        return self._mlp("rank", items)


__all__ = [
    "FORMAT",
    "HEADS",
    "VERSION",
    "Decision",
    "DecisionKind",
    "LearnedConfig",
    "NumpyNetwork",
    "draw_bernoulli",
    "draw_sequence",
    "read_checkpoint",
]
