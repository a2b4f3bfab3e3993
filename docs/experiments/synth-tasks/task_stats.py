"""Shape of a tasks file: how much its questions quote their gold passages, their length, their kinds.

    python docs/experiments/synth-tasks/task_stats.py DATA_DIR [DATA_DIR ...]   # each with corpus.jsonl + tasks.jsonl

Quoting is :func:`sieve.train.synth_facts.quoted_content_words`: the most content words of one verbatim
run of question words found in a gold passage (names, numbers and stopwords do not count).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from sieve.train.synth_facts import quoted_content_words


def stats(folder: Path) -> dict[str, object]:
    texts = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts[str(row["id"])] = row["text"]
    tasks = [json.loads(line) for line in (folder / "tasks.jsonl").open(encoding="utf-8") if line.strip()]
    quoted = [quoted_content_words(t["question"], [texts[g] for g in t["gold_ids"] if g in texts]) for t in tasks]
    kinds = Counter(
        str((t.get("meta") or {}).get("kind") or (t.get("meta") or {}).get("type") or "?").split(":")[0] for t in tasks
    )
    return {
        "tasks": len(tasks),
        "quoted_mean": round(statistics.mean(quoted), 2),
        "quoted_max": max(quoted),
        "quoted_over_4": round(sum(q > 4 for q in quoted) / len(tasks), 3),
        "question_words": round(statistics.mean(len(t["question"].split()) for t in tasks), 1),
        "kinds": dict(kinds.most_common()),
    }


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(arg, json.dumps(stats(Path(arg))))
