"""Cheap entity spotting for query reformulation: capitalised spans, no NLP model.

Multi-hop questions bridge through a named entity of the first passage (the author of a book,
the founder of a company); its name, searched on its own, usually finds the second passage by
title. Spans of capitalised words (with inner connectors like "of" or "de") are a serviceable
stand-in for a named-entity tagger, in any Latin-script language, at microseconds per chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sieve.retriever.bm25 import STOPWORDS, rarity

_WORD_RE = re.compile(r"[^\s]+")
_STRIP = "\"'“”‘’()[]{},.;:!?«»*`"  # "*" and "`": Markdown's emphasis and code marks ("**WSL**")
# Inner words allowed inside a name ("Bank of America", "Leonardo da Vinci").
_CONNECTORS = frozenset("of the de del della da di von van der den du la le y and & al bin el for in on".split())
# Capitalised words that are not names on their own: function words at a sentence start, pronouns,
# numerals, months and days. Only closed classes of English: no topic words of any data set.
_STOP = (
    frozenset(
        """a an the he she it its his her they their them this that these those there here in on at
for from by with of to as and or but if when where which who whom whose what why how was were is are be been
after before during while since until also however although though both either neither each every all some
many most more other such one two three first second third january february march april may june july august
september october november december monday tuesday wednesday thursday friday saturday sunday i we you our
""".split()
    )
    | frozenset(
        # More closed classes that open a sentence and name nothing: the other pronouns and possessives,
        # auxiliaries, discourse adverbs ("Now", "Then") and interjections ("Congratulations").
        """me my mine your yours us ours him hers himself herself itself myself yourself ourselves themselves
not no yes so then now thus hence just only already again instead otherwise anyway finally meanwhile
do does did done has have had can could should would must shall am being let lets please thanks thank hello
hi hey welcome congratulations oh ok okay
""".split()
    )
    | frozenset(
        # Degree adverbs and prepositions: rare in a small corpus (httpx's 306 chunks hold "too" in a few),
        # so they passed as one-word keyphrases ("too" from "opens too many connections").
        """too very much few any own than about into onto out up down over under off through else ever never
always often still yet even quite rather
""".split()
    )
    | frozenset(
        # Subordinating conjunctions: as rare and as empty ("because" from "garbled because the server
        # didn't send a charset" was searched alone on httpx's docs).
        """because unless whether whereas whilst lest till whenever wherever whatever whichever whoever
""".split()
    )
    | frozenset(
        # Interjections that open a chat's turns ("Congrats Caroline!", "Woohoo Melanie"); none that starts a
        # film's or a book's title ("Goodbye Lenin!", "Wow").
        """congrats woohoo yay yep nope ugh hmm haha lol omg aww whoa oops aha
""".split()
    )
)


# A contraction: a word, an apostrophe, and what is left of the second word ("I'm", "don't", "they'll").
_CONTRACTION = re.compile(r"(\w+)['’](m|s|d|t|ve|re|ll)", re.IGNORECASE)


def stop_contraction(word: str) -> bool:
    """Whether ``word`` is a stop word contracted ("I'm", "You're", "It's", "Let's") or a negated
    auxiliary ("Don't", "Can't", "Won't"): as empty as a stop word, but normalised to words that are
    not all stop words ("i m", "don t"). The learned policy searched "I'm" or "I've" alone 306 times on
    locomo-dev, "Can't" or "Don't" 40 times, and "I'd" on Poetry's docs.

    Example:
        >>> [stop_contraction(w) for w in ("I'm", "Don't", "won’t", "They'll", "Macy's", "O'Brien", "Don")]
        [True, True, True, True, False, False, False]
    """
    m = _CONTRACTION.fullmatch(word.strip(_STRIP))
    if m is None:
        return False
    base, rest = m.group(1).lower(), m.group(2).lower()
    return base in _STOP or (rest == "t" and base.endswith("n"))


@dataclass(frozen=True)
class Mention:
    text: str
    start: int  # character offset in the source text
    context: str  # the few words before the mention
    initial: bool = False  # it opens a sentence, a line or a list item: capitals there say nothing of a name


# A corpus-agnostic test of "is this one capitalised word a name?": how many chunks of *this*
# corpus hold it. Names are rare; "Make", "Adding", "Next" or "Typically" are not, whatever the
# text. A word opening a sentence or a line is capitalised anyway, so it must be rarer still.
COMMON_SHARE = 0.02
INITIAL_SHARE = 0.002


MAX_NAME_WORDS = 6  # a longer run of capitalised words is a heading, a menu or a table row, not a name


def searchable(mention: Mention, share: Callable[[str], float] | None, chunks: int | None = None) -> Mention | None:
    """The mention as a query worth a search of its own on this corpus, or None.

    Leading words that are common on this corpus are dropped when the mention opens a sentence
    ("Does AMCOR" -> "AMCOR", "The Company" -> "Company"); a run of more than ``MAX_NAME_WORDS``
    words is refused. What is left is searchable when it has two or more words, or one word that
    the corpus holds in at most ``COMMON_SHARE`` of its chunks (``INITIAL_SHARE`` when it opens a
    sentence or line, where any word is capitalised). ``share`` maps a lower-cased word to its
    share of chunks (BM25's document frequency); without it, only a single line-opening word is
    refused. With the corpus's count of ``chunks``, what :func:`query_problem` refuses is refused
    too, and so is a single word that opens a sentence and is held by that one chunk only: its
    capitals say nothing of a name, and its search finds only the chunk it was read in
    ("Therefore", "Congratulations").

    Example:
        >>> share = {"make": 0.2, "lindbergh": 0.001, "does": 1.0, "amcor": 0.01}.get
        >>> searchable(Mention("Make", 0, "", initial=True), lambda w: share(w, 0.0)) is None
        True
        >>> searchable(Mention("Lindbergh", 40, "by"), lambda w: share(w, 0.0)).text
        'Lindbergh'
        >>> searchable(Mention("Does AMCOR", 0, "", initial=True), lambda w: share(w, 0.0)).text
        'AMCOR'
    """
    words = mention.text.split()
    if not words or len(words) > MAX_NAME_WORDS:
        return None
    if share is not None:
        # A stop word never names anything ("The Company"); at a sentence start, nor does a common word.
        limit = COMMON_SHARE if mention.initial else 0.999
        while len(words) > 1 and share(normalise(words[0]) or words[0]) > limit:
            words = words[1:]
        while len(words) > 1 and share(normalise(words[-1]) or words[-1]) > 0.999:
            words = words[:-1]  # "Executive Officers The": a stop word ends no name
    if len(words) != len(mention.text.split()):
        # What is left no longer opens the sentence: its capitals are its own.
        mention = Mention(" ".join(words), mention.start, mention.context, initial=False)
    norm = normalise(mention.text).split()
    if share is not None and chunks and query_problem(mention.text, share, chunks) is not None:
        return None
    if share is not None and mention.initial and len(mention.text.split()) == 1 and held_once(norm, share, chunks):
        return None  # one token opening a sentence, of this chunk only ("Therefore", "Breath-taking")
    if len(norm) != 1:
        return mention if norm and not all(is_number(w) for w in norm) else None
    if share is None:
        return None if mention.initial else mention
    return mention if share(norm[0]) <= (INITIAL_SHARE if mention.initial else COMMON_SHARE) else None


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:s|st|nd|rd|th)?")


def is_number(word: str) -> bool:
    """Whether a (normalised) word is a bare number, a year or a decade: "2020", "1990s", "3rd", "1.5".

    Example:
        >>> [is_number(w) for w in ("2020", "1990s", "3rd", "fy2023", "b52")]
        [True, True, True, False, False]
    """
    return bool(_NUMBER.fullmatch(word))


def query_problem(
    query: str, share: Callable[[str], float] | None, chunks: int | None = None, question: str = ""
) -> str | None:
    """Why ``query`` is no search a person would write on this corpus, or None when it is one.

    Refused, whatever the corpus: a query of stop words or sentence-opening filler words only ("my",
    "Now", "Congratulations"), of bare numbers only ("2020"), or of several tokens that are only
    these ("1985 July"; one token such as "I-40" or "A-10" names a road or an aircraft). Refused by the corpus's own
    statistics (``share``: a lower-cased word's share of its ``chunks`` chunks): a single word held
    by more than ``COMMON_SHARE`` of the chunks ("Make" in a manual), and a single token (no space)
    that is no plain word ("UCAVs", "AEW&Cs", "C467/46"), is not the ``question``'s own and has a
    word held by at most one chunk: such a search finds only the chunk it was read in, and reads as
    noise. (A plain capitalised word of one chunk is a name where its capitals are its own:
    :func:`searchable` refuses it where it opens a sentence.)

    Example:
        >>> share = {"make": 0.2, "ucavs": 0.001, "lindbergh": 0.004, "fy2023": 0.001, "i": 0.3}.get
        >>> [query_problem(q, lambda w: share(w, 0.0), 1000) for q in ("my", "Now", "2020", "Make", "UCAVs")]
        ['stop words only', 'stop words only', 'a bare number', 'a common word of the corpus', 'a token of one chunk']
        >>> [query_problem(q, lambda w: share(w, 0.0), 1000) for q in ("Lindbergh", "L'uomo", "Weston-super-Mare", "I-40")]
        [None, None, None, None]
        >>> query_problem("1985 July", lambda w: share(w, 0.0), 1000)
        'stop words and numbers only'
        >>> query_problem("FY2023", lambda w: share(w, 0.0), 1000, question="Has the ratio improved in FY2023?") is None
        True
    """
    words = normalise(query).split()
    if not words:
        return "no words"
    if all(is_number(w) for w in words):
        return "a bare number"
    if all(w in _STOP or w in STOPWORDS for w in words) or all(map(stop_contraction, query.split())):
        return "stop words only"
    if len(query.split()) > 1 and all(w in _STOP or w in STOPWORDS or is_number(w) for w in words):
        return "stop words and numbers only"  # "1985 July", "Now 2020"; one token such as "I-40" is a name
    if share is None or len(query.split()) != 1:
        return None
    if len(words) == 1 and share(words[0]) > COMMON_SHARE:
        return "a common word of the corpus"
    if (
        not _plain(query.strip(_STRIP))
        and held_once(words, share, chunks)
        and not set(words) <= set(normalise(question).split())
    ):
        return "a token of one chunk"
    return None


def _plain(token: str) -> bool:
    """A word as prose writes it: letters, lower-case or capitalised, parts joined by a hyphen or an
    apostrophe ("Weston-super-Mare", "L'été"); no acronym, digits, symbols or inner capitals."""
    parts = re.split(r"[-'’]", token)
    return all(p.isalpha() and (p.islower() or (p[0].isupper() and (len(p) == 1 or p[1:].islower()))) for p in parts)


def held_once(words: list[str], share: Callable[[str], float], chunks: int | None) -> bool:
    """Whether a word of ``words`` is held by at most one of the corpus's ``chunks`` chunks (False without a count)."""
    if not chunks:
        return False
    return any(share(w) * chunks < 1.5 for w in words if not is_number(w))


KEYPHRASE_MAX_SHARE = 0.05  # a word in more of the corpus's chunks than this is no part of a keyphrase
KEYPHRASE_WORDS = 3


def keyphrases(question: str, share: Callable[[str], float] | None, most: int = 3) -> list[str]:
    """The question's keyphrases on this corpus, most specific first: runs of up to
    ``KEYPHRASE_WORDS`` adjacent words that the corpus holds in at most ``KEYPHRASE_MAX_SHARE`` of its
    chunks (no stop words, no punctuation inside), ranked by their words' summed rarity
    (``log(1 + 1/share)``). A one-word keyphrase must be as rare as a one-word name
    (``COMMON_SHARE``). Capitals play no part: "quick ratio" or "restructuring liability" is what a
    question about a filing turns on, and it is written in lower case.

    Example:
        >>> share = {"quick": 0.01, "ratio": 0.02, "amcor": 0.01, "improved": 0.08, "fy2023": 0.004}.get
        >>> keyphrases("Has AMCOR's quick ratio improved in FY2023?", lambda w: share(w, 0.0))
        ['AMCOR quick ratio', 'FY2023']
    """
    if share is None:
        return []
    runs: list[list[tuple[str, float]]] = []
    current: list[tuple[str, float]] = []
    for m in _WORD_RE.finditer(question):
        word = m.group(0)
        core = re.sub(r"(?:'s|’s)$", "", word.strip(_STRIP))
        key = normalise(core)
        ratio = share(key) if key and " " not in key else 0.0
        if key not in _STOP and 0.0 < ratio <= KEYPHRASE_MAX_SHARE:
            current.append((core, ratio))
            if word.rstrip("'’\"”)")[-1:] in ",.;:!?":  # punctuation after a word ends the run
                runs.append(current)
                current = []
            continue
        if current:
            runs.append(current)
        current = []
    if current:
        runs.append(current)
    scored: list[tuple[float, str]] = []
    for run in runs:
        for i in range(0, len(run), KEYPHRASE_WORDS):
            part = run[i : i + KEYPHRASE_WORDS]
            if len(part) == 1 and part[0][1] > COMMON_SHARE:
                continue
            if all(is_number(normalise(w)) for w, _ in part):
                continue  # "2020": a bare number or year names nothing on its own
            text = " ".join(w for w, _ in part)
            scored.append((sum(rarity(r) for _, r in part), text))
    out = [t for _, t in sorted(scored, key=lambda st: -st[0]) if t]
    return list(dict.fromkeys(out))[:most]


def question_names(question: str, share: Callable[[str], float] | None) -> list[str]:
    """What both no-LLM policies search beside the question itself: its names worth a search on this
    corpus (:func:`searchable` mentions), then its :func:`keyphrases`, each once (by
    :func:`normalise`), none equal to the whole question.

    Example:
        >>> share = {"has": 0.4, "quick": 0.01, "ratio": 0.02, "amcor": 0.001, "improved": 0.3}.get
        >>> question_names("Has Amcor's quick ratio improved?", lambda w: share(w, 0.0))
        ['Amcor', 'Amcor quick ratio']
    """
    names = [m.text for m in (searchable(m, share) for m in mentions(question)) if m is not None]
    first: dict[str, str] = {}
    for name in [*names, *keyphrases(question, share)]:
        if query_problem(name, share, question=question) is None:
            first.setdefault(normalise(name), name)
    first.pop(normalise(question), None)
    return list(first.values())


def opens_only(word: str, text: str) -> bool:
    """Whether ``word`` occurs in ``text`` and every time at the opening of a sentence, a line or a list
    item, where any word is capitalised (so its capitals say nothing of a name).

    Example:
        >>> opens_only("Therefore", "It fails. Therefore, pin it."), opens_only("Balzac", "Read Balzac. Balzac wrote.")
        (True, False)
    """
    starts = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", text)]
    return bool(starts) and all(_opens(text, i) for i in starts)


def _opens(text: str, start: int, *, line: bool = False) -> bool:
    """Whether the word at ``start`` opens the text, a line, a sentence or a list item (with ``line``: the
    text, a line, a list item or a code comment only)."""
    before = text[max(0, start - 4) : start].rstrip(" \t")
    return not before or before[-1] in ("\n*#>-•/" if line else "\n.!?:;*#>-|•/")  # "/": a comment's "//"


def _is_cap(word: str) -> bool:
    w = word.strip(_STRIP)
    return bool(w) and (w[0].isupper() or (w[0].isdigit() and len(w) == 4 and w.isdigit()))


_ABBREV = frozenset("st mr mrs ms dr jr sr mt ft co inc ltd vs".split())


def _ends_name(word: str) -> bool:
    """Whether the punctuation after ``word`` closes a name (a period after an initial does not), as
    does a closing code mark ("`POETRY_VIRTUALENVS_CREATE`" is a name of its own).

    Example:
        >>> [_ends_name(w) for w in ("Paris,", "J.", "`POETRY_HOME`", "Poetry?**", "Bank")]
        [True, False, True, True, False]
    """
    if word.endswith("`"):
        return True
    word = word.rstrip("*_")  # Markdown's emphasis after the punctuation ("**Why Poetry?** Execute")
    if word[-1:] in ',;:!?)"”':
        return True
    if word.endswith("."):
        core = word.rstrip(".").strip(_STRIP)
        return not (len(core) == 1 or core.lower() in _ABBREV)
    return False


# Markdown links: the brackets and the target, so "[Private Modules](https://...)" reads as its words.
# The target may hold spaces: a title ('(url "Title")') or a Hugo shortcode ('({{< relref "pyproject#extras" >}})').
_LINK_MARKUP = re.compile(r"\]\([^)\n]*\)|\[")


def mentions(text: str) -> list[Mention]:
    """Capitalised spans of ``text`` in order of appearance (single stop words dropped).

    Example:
        >>> [m.text for m in mentions("The novel was written by Ilse Marnow and edited by Tomás Vera.")]
        ['Ilse Marnow', 'Tomás Vera']
        >>> [m.text for m in mentions("see [Private Modules](https://docs.npmjs.com/private-modules/intro).")]
        ['Private Modules']
    """
    # Same length, so offsets hold; a link's end ends a name, as a comma would.
    text = _LINK_MARKUP.sub(lambda m: ("," if m.group(0) != "[" else " ").ljust(len(m.group(0))), text)
    words = [(m.group(0), m.start()) for m in _WORD_RE.finditer(text)]
    out: list[Mention] = []
    i = 0
    while i < len(words):
        if not _is_cap(words[i][0]) or words[i][0][0].isdigit():
            i += 1
            continue
        j = i + 1
        while j < len(words):
            w = words[j][0]
            prev = words[j - 1][0]
            if _ends_name(prev) or "\n\n" in text[words[j - 1][1] + len(prev) : words[j][1]]:
                break  # punctuation or a paragraph's end ends a name ("Paris, France" is two)
            if w.startswith("("):
                # A one-word disambiguator belongs to the name, as in encyclopedia titles: "Mercury (Planet)'s".
                if re.fullmatch(r"\([^\s()]+\)(?:'s|’s)?[,.;:!?]*", w) and _is_cap(w.lstrip("(")):
                    j += 1
                break
            if _is_cap(w):
                j += 1
                continue
            if w.lower() in _CONNECTORS and j + 1 < len(words) and _is_cap(words[j + 1][0]):
                j += 2
                continue
            break
        span = [w for w, _ in words[i:j]]
        # Trim stop words at the edges ("The Beatles" keeps "The" only inside a longer name).
        while (
            span and span[0].strip(_STRIP).lower() in _STOP and len(span) > 1 and span[0].strip(_STRIP).lower() != "the"
        ):
            span = span[1:]
        name = re.sub(r"(?:'s|’s)?[,.;:!?]*$", "", " ".join(span))
        name = name.strip(_STRIP.replace(")", "")).strip()
        if name.endswith(")") and "(" not in name:
            name = name.rstrip(")")
        lone = len(span) == 1 and _no_name(span[0], _opens(text, words[i][1], line=True))
        if name and not lone and len(name) > 2:
            ctx_words = [w for w, _ in words[max(0, i - 6) : i]]
            out.append(
                Mention(text=name, start=words[i][1], context=" ".join(ctx_words), initial=_opens(text, words[i][1]))
            )
        i = j
    return out


def _no_name(word: str, opens_line: bool) -> bool:
    """Whether one capitalised word names nothing whatever the corpus: a stop word or its contraction
    (:func:`stop_contraction`), or a label in capitals opening a line and closed by a colon or a comma
    ("NOTE:", "// BAD, will throw": an admonition or a code comment's verdict, not a name; "ICAO: KELP,"
    inside a sentence is a code, and stays).

    Example:
        >>> [_no_name(w, i) for w, i in (("Don't", True), ("NOTE:", True), ("AMCOR,", False), ("NASA", True))]
        [True, True, False, False]
    """
    core = word.strip(_STRIP)
    if core.lower() in _STOP or stop_contraction(core):
        return True
    return opens_line and core.isalpha() and core.isupper() and word.rstrip("*`")[-1:] in ":,"


def normalise(name: str) -> str:
    """Lower-cased alphanumeric words, for comparing names and titles.

    Example:
        >>> normalise("The Harbour (1999 Novel)")
        'the harbour 1999 novel'
    """
    return " ".join(re.findall(r"\w+", name.lower()))


def name_match(name: str, title: str) -> float:
    """How well ``title`` names ``name``: share of the name's words in the title, 0..1.

    Example:
        >>> name_match("Ilse Marnow", "Ilse Marnow")
        1.0
        >>> name_match("Marnow", "Ilse Marnow")
        1.0
        >>> name_match("Ilse Marnow", "The Harbour")
        0.0
    """
    return words_match(set(normalise(name).split()), set(normalise(title).split()))


def words_match(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    """:func:`name_match` on already normalised word sets (for callers that compare one name many times)."""
    if not a or not b:
        return 0.0
    inter = len(a & b)
    # Containment of the shorter in the longer, damped when the title has many extra words.
    return inter / len(a) * min(1.0, (inter + 1) / len(b) + 0.5) if inter else 0.0


__all__ = [
    "COMMON_SHARE",
    "keyphrases",
    "question_names",
    "INITIAL_SHARE",
    "MAX_NAME_WORDS",
    "held_once",
    "is_number",
    "query_problem",
    "Mention",
    "mentions",
    "name_match",
    "normalise",
    "opens_only",
    "searchable",
    "words_match",
]
