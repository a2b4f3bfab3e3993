"""Evidence is chunks: a long document whose answer spans three chunks (real index, real default agent)."""

from __future__ import annotations

from sieve.agent import AgentConfig, SearchAgent, make_policy
from sieve.core.defaults import DEFAULT_POLICY
from sieve.retriever.types import Document

STEPS = [
    "Close the suction valve and the discharge valve of the Harlow HX-40 pump, then lock out the motor breaker.",
    "Drain the HX-40 volute through the bottom plug into a tray; the volute holds about four litres of water.",
    "Remove the eight M10 bolts of the HX-40 volute cover with a 17 mm socket and lift the cover away.",
    "Hold the HX-40 shaft with the spanner flats and unscrew the impeller nut, which has a left-hand thread.",
    "Pull the old HX-40 impeller off the keyed shaft with the two-leg puller from the service kit.",
    "Clean the HX-40 shaft key and keyway, and check the shaft sleeve for scoring before fitting new parts.",
    "Slide the new HX-40 impeller onto the shaft, aligning its keyway, and fit a new impeller nut.",
    "Tighten the HX-40 impeller nut to 45 newton metres while holding the shaft at the spanner flats.",
    "Fit a new O-ring to the HX-40 volute cover and refit the cover, tightening the eight bolts crosswise.",
    "Refill the HX-40 volute, open both valves, unlock the breaker and run the pump to check for leaks.",
]


def _manual() -> Document:
    """A long manual: general chapters, then the impeller procedure (three chunks), then more chapters."""
    filler = [
        f"Chapter {i}. The Harlow HX-40 is installed in many plant rooms. This chapter covers {topic}. "
        + " ".join(
            f"Routine note {i}.{j}: record the {topic} readings in the plant log and compare them with "
            f"the previous month's figures before the quarterly review."
            for j in range(6)
        )
        for i, topic in enumerate(
            [
                "site selection",
                "electrical supply",
                "commissioning",
                "noise levels",
                "seasonal shutdown",
                "spare parts ordering",
            ],
            start=1,
        )
    ]
    procedure = "Chapter 7. Replacing the impeller of the HX-40. " + " ".join(
        f"Step {i}. {s} " + "Wear gloves and eye protection while you work on the pump. " * 2
        for i, s in enumerate(STEPS, start=1)
    )
    tail = [
        f"Chapter {i}. {topic.capitalize()} of the HX-40. "
        + " ".join(
            f"Guidance {i}.{j}: the {topic} schedule depends on the duty cycle and the water hardness at the site."
            for j in range(6)
        )
        for i, topic in enumerate(["warranty terms", "painting", "disposal"], start=8)
    ]
    return Document(
        doc_id="hx40-manual", title="Harlow HX-40 pump service manual", text="\n\n".join([*filler, procedure, *tail])
    )


def _distractors() -> list[Document]:
    pumps = ["Harlow HX-20", "Vetra V8 circulator", "Brandt BK-60 booster", "Harlow HX-90 dosing pump"]
    return [
        Document(
            doc_id=f"other-{i}",
            title=f"{p} quick guide",
            text=f"The {p} has an impeller that is replaced as a whole cartridge. To replace the impeller "
            f"of the {p}, order the cartridge kit and follow the leaflet in the box. The {p} needs no "
            f"volute drain and has no impeller nut.",
        )
        for i, p in enumerate(pumps)
    ]


def test_default_agent_returns_the_three_chunks_of_a_long_answer(make_index):
    index = make_index("manual", chunk_tokens=128, chunk_overlap=16)
    index.writer.index_documents([_manual(), *_distractors()], progress=False)
    chunks = index.read_document("hx40-manual")
    assert len(chunks) >= 8, "the manual is long: many chunks"
    answer = [c.chunk_id for c in chunks if any(s[:40] in c.text for s in STEPS[3:8])]
    # The impeller removal and refit steps (4-8) span three chunks of the manual.
    assert len(answer) == 3, answer
    config = AgentConfig(k=5)
    agent = SearchAgent(index, make_policy(DEFAULT_POLICY, config), config)
    trace = agent.run("How do I remove and refit the impeller of the HX-40 pump, and what torque does its nut need?")
    top5 = trace.returned_chunk_ids[:5]
    assert set(answer) <= set(top5), (answer, top5)
    assert all(0.0 <= e.score <= 1.0 for e in trace.returned)
    # Grouped by document, the same episode gives one chunk of the manual and the distractors after it.
    grouped = agent.run(
        "How do I remove and refit the impeller of the HX-40 pump, and what torque does its nut need?",
        group_by_doc=True,
    )
    assert len({e.doc_id for e in grouped.returned}) == len(grouped.returned)
    # The unit asked for reaches the policy: its own draw is by chunk (the manual's chunks), and
    # one chunk per document only when documents are asked for.
    drawn = [_policy_draw(t) for t in (trace, grouped)]
    assert sum(c.startswith("hx40-manual#") for c in drawn[0]) >= 3, drawn[0]
    assert len({c.split("#")[0] for c in drawn[1]}) == len(drawn[1]), drawn[1]


def _policy_draw(trace) -> list[str]:
    """The chunks the learned policy drew for its evidence (its last rank decision)."""
    return [d for t in trace.turns for d in t.meta["decisions"] if d["kind"] == "rank"][-1]["returned"]


def test_no_query_is_a_single_common_word(make_index):
    """Manuals capitalise every sentence and step ("Step", "Wear", "Chapter"): none of those becomes a query."""
    from sieve.agent.policies.entities import COMMON_SHARE

    index = make_index("manual2", chunk_tokens=160, chunk_overlap=16)
    index.writer.index_documents([_manual(), *_distractors()], progress=False)
    share = index.bm25_index().doc_share
    for policy in ("heuristic", "learned"):
        config = AgentConfig(k=5)
        agent = SearchAgent(index, make_policy(policy, config), config)
        for q in (
            "How do I remove and refit the impeller of the HX-40 pump?",
            "Which pumps replace the impeller as a whole cartridge?",
            "What readings go into the plant log before the quarterly review?",
        ):
            queries = [c.arguments["query"] for c in agent.run(q).tool_calls if c.name == "search"]
            assert queries, policy
            single = [w for w in queries if len(w.split()) == 1]
            assert all(share(w) <= COMMON_SHARE for w in single), (policy, single)
