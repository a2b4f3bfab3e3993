"""The learned policy's network, its decisions and their log-probabilities, and checkpoints.

Four small MLP heads (a few thousand parameters each) score what the policy decides:

* ``select``: each candidate action (search / read) given the episode state, against an
  ``end`` logit of the state alone. A turn's actions are drawn one by one without replacement
  (a Plackett-Luce choice) until ``end`` is drawn; ``end`` first means *finish the episode*;
* ``prune``: one Bernoulli per chunk that cannot make the returned set;
* ``rank``: a score per chunk; the returned evidence is a Plackett-Luce draw of ``k`` chunks
  (one per document first when documents are asked for; greedy at serving: the top scores).

Every decision is a :class:`Decision` holding its inputs (feature matrices), what was chosen
and the per-step log-probabilities at the time; :func:`collate` + :func:`score_decisions`
re-score any batch of them with the current weights (the PPO ratio of GRPO training).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from sieve.agent.policies.learned.decisions import (
    FORMAT,
    VERSION,
    Decision,
    DecisionKind,
    LearnedConfig,
    draw_bernoulli,
    draw_sequence,
    read_checkpoint,
)
from sieve.agent.policies.learned.features import CANDIDATE_FEATURES, CHUNK_FEATURES, STATE_FEATURES


def _mlp(n_in: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))


class PolicyNetwork(nn.Module):
    """The four heads. Inputs are the feature vectors of :mod:`~sieve.agent.policies.learned.features`."""

    def __init__(
        self,
        hidden: int = 64,
        n_chunk: int = len(CHUNK_FEATURES),
        n_cand: int = len(CANDIDATE_FEATURES),
        n_state: int = len(STATE_FEATURES),
    ) -> None:
        super().__init__()
        self.select = _mlp(n_cand + n_state, hidden)
        self.end = _mlp(n_state, hidden)
        self.prune = _mlp(n_chunk + n_state, hidden)
        self.rank = _mlp(n_chunk, hidden)
        with torch.no_grad():  # start out pruning rarely: pruning gold is costly, pruning noise is cheap
            self.prune[-1].bias.fill_(-2.0)

    def select_scores(self, items: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """[..., n] candidate logits with the END logit prepended at index 0: [..., n + 1]."""
        s = state.unsqueeze(-2).expand(*items.shape[:-1], state.shape[-1])
        cand = self.select(torch.cat([items, s], dim=-1)).squeeze(-1)
        return torch.cat([self.end(state), cand], dim=-1)

    def prune_logits(self, items: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        s = state.unsqueeze(-2).expand(*items.shape[:-1], state.shape[-1])
        return self.prune(torch.cat([items, s], dim=-1)).squeeze(-1)

    def rank_scores(self, items: torch.Tensor) -> torch.Tensor:
        return self.rank(items).squeeze(-1)

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


# -- re-scoring (torch, batched) --------------------------------------------------------------------


@dataclass
class KindBatch:
    """Padded tensors of the decisions of one kind."""

    items: torch.Tensor  # [D, N, F]
    state: torch.Tensor  # [D, S]
    valid: torch.Tensor  # [D, N] real items (select: N includes END at 0)
    picks: torch.Tensor  # [D, J] long
    step_mask: torch.Tensor  # [D, J] real steps
    avail: torch.Tensor | None  # [D, J, N] items available at each step (select, rank)
    old_logp: torch.Tensor  # [D, J]
    episode: torch.Tensor  # [D] long
    temperature: torch.Tensor  # [D]


def _pad(arrs: list[np.ndarray], n: int, width: int) -> np.ndarray:
    out = np.zeros((len(arrs), n, width), dtype=np.float32)
    for i, a in enumerate(arrs):
        if len(a):
            out[i, : len(a)] = a
    return out


def _collate_kind(decisions: list[Decision], kind: DecisionKind) -> KindBatch | None:
    ds = [d for d in decisions if d.kind == kind]
    if not ds:
        return None
    width = ds[0].items.shape[1] if ds[0].items.ndim == 2 else 0
    offset = 1 if kind == "select" else 0  # END sits at index 0 of select scores
    n = max(len(d.items) for d in ds) + offset
    j = max(max(len(d.picks) for d in ds), 1)
    items = _pad([d.items for d in ds], n - offset, width)
    valid = np.zeros((len(ds), n), dtype=bool)
    picks = np.zeros((len(ds), j), dtype=np.int64)
    step_mask = np.zeros((len(ds), j), dtype=bool)
    old = np.zeros((len(ds), j), dtype=np.float32)
    avail = np.zeros((len(ds), j, n), dtype=bool) if kind != "prune" else None
    for i, d in enumerate(ds):
        valid[i, : len(d.items) + offset] = True
        picks[i, : len(d.picks)] = d.picks
        step_mask[i, : len(d.picks)] = True
        old[i, : len(d.step_logps)] = d.step_logps
        if avail is None:
            continue
        groups = list(range(n)) if kind == "select" else list(d.groups or range(len(d.items)))
        live = valid[i].copy()
        for s, p in enumerate(d.picks):
            row = live.copy()
            if kind == "select" and s == 0 and not d.end_first:
                row[0] = False
            avail[i, s] = row
            g = groups[p]
            live &= np.array([gg != g for gg in groups] + [True] * (n - len(groups)))
    return KindBatch(
        items=torch.from_numpy(items),
        state=torch.from_numpy(np.stack([d.state for d in ds])),
        valid=torch.from_numpy(valid),
        picks=torch.from_numpy(picks),
        step_mask=torch.from_numpy(step_mask),
        avail=None if avail is None else torch.from_numpy(avail),
        old_logp=torch.from_numpy(old),
        episode=torch.tensor([d.episode for d in ds], dtype=torch.long),
        temperature=torch.tensor([d.temperature for d in ds], dtype=torch.float32),
    )


def collate(decisions: list[Decision]) -> dict[str, KindBatch]:
    """Padded tensors per decision kind (kinds with no decision are left out)."""
    out = {}
    for kind in ("select", "prune", "rank"):
        b = _collate_kind(decisions, kind)  # type: ignore[arg-type]
        if b is not None:
            out[kind] = b
    return out


@dataclass
class Scored:
    """Per-step log-probabilities and entropies of one kind under the current weights."""

    logp: torch.Tensor  # [D, J]
    entropy: torch.Tensor  # [D, J]
    mask: torch.Tensor  # [D, J]
    old_logp: torch.Tensor  # [D, J]
    episode: torch.Tensor  # [D]


def score_batch(net: PolicyNetwork, kind: str, b: KindBatch) -> Scored:
    """Log-probability and entropy of every recorded step of ``b`` under ``net``'s current weights."""
    temp = b.temperature.unsqueeze(1)
    if kind == "prune":
        logits = net.prune_logits(b.items, b.state) / temp  # [D, N]
        acts = b.picks[:, : logits.shape[1]].float()
        logp = acts * nn.functional.logsigmoid(logits) + (1 - acts) * nn.functional.logsigmoid(-logits)
        p = torch.sigmoid(logits)
        ent = -(p * nn.functional.logsigmoid(logits) + (1 - p) * nn.functional.logsigmoid(-logits))
        mask = b.valid[:, : logits.shape[1]] & b.step_mask[:, : logits.shape[1]]
        return Scored(logp=logp, entropy=ent, mask=mask, old_logp=b.old_logp[:, : logits.shape[1]], episode=b.episode)
    scores = (net.select_scores(b.items, b.state) if kind == "select" else net.rank_scores(b.items)) / temp  # [D, N]
    assert b.avail is not None
    masked = scores.unsqueeze(1).masked_fill(~b.avail, float("-inf"))  # [D, J, N]
    lse = torch.logsumexp(masked, dim=-1)
    chosen = torch.gather(scores, 1, b.picks)
    logp = torch.where(b.step_mask, chosen - lse, torch.zeros_like(lse))
    logq = torch.log_softmax(masked, dim=-1)
    ent = -(logq.exp() * logq.masked_fill(~b.avail, 0.0)).sum(-1)
    ent = torch.where(b.step_mask, ent, torch.zeros_like(ent))
    return Scored(logp=logp, entropy=ent, mask=b.step_mask, old_logp=b.old_logp, episode=b.episode)


def score_decisions(net: PolicyNetwork, decisions: list[Decision]) -> dict[str, Scored]:
    """Re-score ``decisions`` with ``net`` (one padded forward pass per kind)."""
    return {kind: score_batch(net, kind, b) for kind, b in collate(decisions).items()}


# -- checkpoints ------------------------------------------------------------------------------------


def save_checkpoint(
    folder: str | Path, net: PolicyNetwork, config: LearnedConfig, meta: dict[str, Any] | None = None
) -> Path:
    """Write ``model.safetensors`` + ``config.json`` into ``folder`` (atomically per file)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "model.safetensors.tmp"
    save_file({k: v.detach().contiguous() for k, v in net.state_dict().items()}, str(tmp))
    tmp.replace(folder / "model.safetensors")
    body = {
        "format": FORMAT,
        "version": VERSION,
        "policy": asdict(config),
        "features": {
            "chunk": list(CHUNK_FEATURES),
            "candidate": list(CANDIDATE_FEATURES),
            "state": list(STATE_FEATURES),
        },
        "n_parameters": net.n_parameters(),
        "meta": meta or {},
    }
    tmp_json = folder / "config.json.tmp"
    tmp_json.write_text(json.dumps(body, indent=2, default=str), encoding="utf-8")
    tmp_json.replace(folder / "config.json")
    return folder


def load_checkpoint(folder: str | Path) -> tuple[PolicyNetwork, LearnedConfig, dict[str, Any]]:
    """Read a checkpoint folder written by :func:`save_checkpoint` into a torch network (training).

    Serving loads the same files without torch: :meth:`NumpyNetwork.load`.

    Raises:
        NotFound: the folder lacks ``config.json`` or ``model.safetensors``.
        InvalidInput: the files are not a learned-policy checkpoint of this feature set.
    """
    from safetensors.torch import load_file

    config, meta, weights = read_checkpoint(folder)
    net = PolicyNetwork(config.hidden)
    net.load_state_dict(load_file(str(weights)))
    net.eval()
    return net, config, meta


__all__ = [
    "FORMAT",
    "VERSION",
    "Decision",
    "DecisionKind",
    "KindBatch",
    "LearnedConfig",
    "PolicyNetwork",
    "Scored",
    "collate",
    "draw_bernoulli",
    "draw_sequence",
    "load_checkpoint",
    "save_checkpoint",
    "score_batch",
    "score_decisions",
]
