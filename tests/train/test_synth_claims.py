"""The claims writer (``sieve train synth --generator claims``) on six real-shaped scientific abstracts."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sieve.cli.main import app
from sieve.train.synth_claims import finding_score, verify_claim, write_claim


def test_write_claim_states_the_finding_without_framing_brackets_or_statistics():
    claim = write_claim(
        "In conclusion, our data suggest that vitamin D deficiency was significantly associated "
        "with higher mortality (p < 0.01) in dialysis patients."
    )
    assert claim == "Vitamin D deficiency is associated with higher mortality in dialysis patients."
    assert (
        write_claim(
            "Through a genome-wide screen in lung cancer cells, we found that erlotinib resistance was "
            "associated with reduced expression of NF1."
        )
        == "Erlotinib resistance is associated with reduced expression of NF1."
    )
    # "for" keeps its "or": statistics are stripped only as whole tokens (OR, CI, p <)
    assert (
        write_claim("Statins are protective for stroke, OR 0.8, in older women.")
        == "Statins are protective for stroke in older women."
    )


def test_write_claim_keeps_subject_and_verb_together():
    # a non-restrictive clause between subject and verb is not a cut point (the cut left "The toxin GsMTx-4.")
    assert (
        write_claim(
            "Conversely, the toxin GsMTx-4, which inhibits stretch-activated channels, had no effect on currents."
        )
        == "The toxin GsMTx-4, which inhibits stretch-activated channels, had no effect on currents."
    )
    # "we found" without "that" takes an object: stripping it would leave a noun phrase
    assert (
        write_claim("Second, we found the strongest correlation between mouth opening and vocal tract resonances.")
        == "We found the strongest correlation between mouth opening and vocal tract resonances."
    )
    assert (
        write_claim("We have shown that Dicer-2 is a dsRNA-stimulated ATPase.")
        == "Dicer-2 is a dsRNA-stimulated ATPase."
    )
    # a structured abstract's heading run into the sentence goes; an acronym subject stays
    assert (
        write_claim("RESULTS There are differences in FA values at all locations of the corpus callosum.")
        == "There are differences in FA values at all locations of the corpus callosum."
    )
    assert (
        write_claim("DNA damage is sharply different in these two phases of the cycle.")
        == "DNA damage is sharply different in these two phases of the cycle."
    )


def test_write_claim_refuses_fragments_rather_than_cutting_them():
    assert write_claim("In the particular case of follicular lymphoma cells, which depend on T helper cells.") is None
    long = "Treatment " + " ".join(["with drug"] * 15) + " reduced relapse."
    assert write_claim(long, max_words=20) is None
    assert write_claim("Cells divide.") is None  # too short to single a document out


def test_finding_score_prefers_results_to_background():
    background = "Microglia are the resident immune cells of the brain and respond to many kinds of injury."
    finding = "These results indicate that commensal Bifidobacterium abundance predicts response to therapy."
    assert finding_score(finding, 0.9) > finding_score(background, 0.0)


def test_verify_claim_checks_support_ambiguity_and_findability(abstracts_index):
    texts = {d: " ".join(c.text for c in abstracts_index.read_document(d)) for d in ("a1", "a4")}
    # every content word is in a1 and in a5 too (a test phrase, not prose): the gold set would be ambiguous
    assert verify_claim("Placebo over adults", "a1", texts["a1"], abstracts_index)[0] == "ambiguous"
    assert verify_claim("Fibre supplement cured adenoma", "a1", texts["a1"], abstracts_index)[0] == "unsupported"
    assert verify_claim("Adenoma recurrence", "a1", texts["a1"], abstracts_index)[0] == "too_few_content_words"
    reason, facts = verify_claim(
        "Commensal Bifidobacterium abundance predicts response to anti-PD-1 therapy.",
        "a4",
        texts["a4"],
        abstracts_index,
    )
    assert reason is None and facts["single_shot_rank"] == 1
    assert all(not c.startswith("a4#") for c in facts["distractor_ids"])


def _synth(session_data_dir, out, n, seed=0):
    return CliRunner().invoke(
        app,
        [
            "train",
            "synth",
            "-c",
            "abstracts",
            "--data-dir",
            str(session_data_dir),
            "--generator",
            "claims",
            "--n",
            str(n),
            "--seed",
            str(seed),
            "--out",
            str(out),
            "--json",
        ],
    )


def test_claims_cli_writes_verified_single_hop_tasks_and_resumes(abstracts_index, session_data_dir, tmp_path):
    out = tmp_path / "claims.jsonl"
    res = _synth(session_data_dir, out, 3)
    assert res.exit_code == 0, res.output
    first = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(first) == 3
    for t in first:
        doc = t["gold_ids"][0]
        source = " ".join(c.text for c in abstracts_index.read_document(doc))
        assert len(t["gold_ids"]) == 1 and t["meta"]["hops"] == 1 and t["meta"]["kind"] == "claim"
        # no answer string (the reward would match it in any text), the verdict kept in meta
        assert t["answers"] == [] and t["meta"]["verdict"] == "SUPPORT"
        assert t["meta"]["source_sentence"] in source and t["meta"]["gold_chunk_ids"][0].startswith(doc + "#")
        assert 5 <= len(t["question"].split()) <= 20 and t["question"].endswith(".")
        # the framing and statistics of the source sentence are gone
        low = t["question"].lower()
        assert "our data suggest" not in low and "p <" not in low and "these results" not in low
    # a rerun with the same n writes nothing; a larger n resumes and never repeats a document
    assert json.loads(_synth(session_data_dir, out, 3).stdout)["written"] == 0
    body = json.loads(_synth(session_data_dir, out, 6).stdout)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[:3] == first and len(rows) == 3 + body["written"]
    assert len({r["gold_ids"][0] for r in rows}) == len(rows) == len({r["id"] for r in rows})
    assert body["written"] >= 1
    # how easy the file's claims are for one hybrid search, from the ranks recorded at verification
    ranks = [r["meta"]["single_shot_rank"] for r in rows]
    assert body["single_shot_recall_at_10"] == round(sum(r <= 10 for r in ranks) / len(ranks), 4)
    # same seed, same tasks, in the same order
    again = tmp_path / "again.jsonl"
    assert _synth(session_data_dir, again, 3).exit_code == 0
    assert again.read_text() == "".join(line + "\n" for line in out.read_text().splitlines()[:3])


def test_single_shot_recall_counts_claim_tasks_only():
    """`train all` fills hard tasks up with claims: the hard ones' per-chunk rank dicts are not claim ranks."""
    from sieve.train.synth_claims import single_shot_recall

    tasks = [
        {"meta": {"generator": "hard", "single_shot_rank": {"d#0": 3}}},
        {"meta": {"generator": "claims", "single_shot_rank": 4}},
        {"meta": {"generator": "claims", "single_shot_rank": 40}},
    ]
    assert single_shot_recall(tasks, k=10) == 0.5
