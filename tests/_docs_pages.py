"""Small documentation pages for the embedder-adaptation tests, and a real "other model" for them.

Six Markdown pages with a heading per aspect (pairs to mine, sections to chunk), and the bundled
MiniLM with its weights nudged: another model, as an adapted one is, without minutes of training.
"""

from __future__ import annotations

from pathlib import Path

TOPICS = ["caching", "logging", "plugins", "publishing", "testing", "security"]
ASPECTS = ["Overview", "Settings", "Troubleshooting", "Examples"]


def docs_page(topic: str) -> str:
    parts = [f"# {topic.title()}\n\nThis page explains how the tool handles {topic} in everyday projects and teams."]
    for i, aspect in enumerate(ASPECTS):
        parts.append(
            f"## {aspect}\n\nThe {aspect.lower()} of {topic} cover case number {i} in detail. Teams that rely on "
            f"{topic} read it before changing anything. It lists what to check first, which command to run, and "
            f"what output to expect when {topic} works as intended."
        )
    return "\n\n".join(parts)


def nudged_minilm(out: Path) -> Path:
    """The bundled MiniLM with small seeded noise on every weight, saved as a sentence-transformers folder."""
    import torch
    from sentence_transformers import SentenceTransformer

    from sieve.retriever.config import default_embedder_path

    model = SentenceTransformer(default_embedder_path(), device="cpu")
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.02)
    model.save(str(out))
    return out
