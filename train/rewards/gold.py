"""What a task says is true: gold documents / chunks and the answer strings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sieve.core.errors import InvalidInput
from sieve.eval.metrics import doc_id_of as doc_of  # one definition of chunk id -> doc id


@dataclass(frozen=True)
class Gold:
    """Gold evidence of one task.

    Attributes:
        doc_ids: gold document ids (``task["gold_ids"]``).
        chunk_ids: gold chunk ids (``task["meta"]["gold_chunk_ids"]``), empty when unknown.
        answers: accepted answer strings.
        answer_chunk_ids: chunks known to hold the answer (``meta.answer_chunk_ids``); optional,
            the answer strings are matched against returned text as well.
    """

    doc_ids: frozenset[str]
    chunk_ids: frozenset[str] = field(default_factory=frozenset)
    answers: tuple[str, ...] = ()
    answer_chunk_ids: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_task(cls, task: dict[str, Any]) -> Gold:
        """Read a task in the ``shared/eval/*/tasks.jsonl`` schema.

        Raises:
            InvalidInput: if the task has no ``gold_ids``.

        Example:
            >>> Gold.from_task({"gold_ids": ["a"], "answers": ["x"]}).doc_ids
            frozenset({'a'})
        """
        gold_ids = task.get("gold_ids")
        if not gold_ids or not isinstance(gold_ids, (list, tuple)):
            raise InvalidInput(
                f"Expected a task with a non-empty 'gold_ids' list, got {gold_ids!r} (task {task.get('id', '?')!r})"
            )
        meta = task.get("meta") or {}
        answers = task.get("answers") or []
        if isinstance(answers, str):
            answers = [answers]
        return cls(
            doc_ids=frozenset(str(g) for g in gold_ids),
            chunk_ids=frozenset(str(c) for c in meta.get("gold_chunk_ids") or ()),
            answers=tuple(str(a) for a in answers),
            answer_chunk_ids=frozenset(str(c) for c in meta.get("answer_chunk_ids") or ()),
        )

    def ids(self, level: str) -> frozenset[str]:
        """Gold ids at ``level`` ('chunk' falls back to documents when chunk gold is unknown)."""
        return self.chunk_ids if level == "chunk" and self.chunk_ids else self.doc_ids

    def is_gold_chunk(self, chunk_id: str) -> bool:
        """A chunk is gold if listed in ``chunk_ids``, or (chunk gold unknown) if its document is gold."""
        if self.chunk_ids:
            return chunk_id in self.chunk_ids
        return doc_of(chunk_id) in self.doc_ids


__all__ = ["Gold", "doc_of"]
