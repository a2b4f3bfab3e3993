"""Files the ingestion tests write: a hand-made PDF, a damaged one, and HTML pages with navigation around content."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def pdf_pages(pages: list[list[tuple[int, str]]]) -> bytes:
    """A PDF of ``pages``, each a list of (font size, line) shown top down in Helvetica, written by hand."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for lines in pages:
        y, shown = 740, []
        for size, line in lines:
            shown.append(f"BT /F1 {size} Tf 72 {y} Td ({line}) Tj ET")
            y -= size + 10
        content = " ".join(shown).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % len(objects)
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica."""
    return pdf_pages([[(12, text)]])


def pdf_with_a_wrong_startxref(path: Path) -> None:
    """A PDF pypdf still reads, after logging that its startxref pointer is wrong."""
    data = minimal_pdf("Damaged but readable")
    start = data.rindex(b"startxref\n") + len(b"startxref\n")
    path.write_bytes(data[:start] + b"12" + data[data.index(b"\n", start) :])


ARTICLE = (
    "Otters hold hands while they sleep so that they do not drift apart on the current. "
    "A group of resting otters is called a raft, and a raft may hold more than a hundred animals. "
)

# A documentation page as site generators write it: banner, menu, breadcrumbs, sidebar, article, footer.
SITE_PAGE = f"""<!DOCTYPE html>
<html><head><title>Otters | Field Guide</title><meta charset="utf-8">
<style>body {{ font-family: serif }}</style><script>var tracker = "analytics";</script></head>
<body>
<header><a href="/">Field Guide home</a> <span>Sign in to your account</span></header>
<nav class="menu"><ul><li><a href="/beavers">Beavers menu entry</a></li><li><a href="/stoats">Stoats menu entry</a></li></ul></nav>
<div role="navigation">Breadcrumb trail: Mammals / Mustelids</div>
<main><article>
<h1>Sea otters</h1>
<p>{ARTICLE * 3}</p>
<p>They use stones as tools to open shellfish, and each otter keeps a favourite stone in a pouch of skin under its arm.</p>
<pre>otters = ["sea", "river"]</pre>
</article></main>
<aside>Related: Top ten rodents sidebar</aside>
<footer>Copyright 2026 Field Guide footer. Privacy policy. Terms of use.</footer>
</body></html>"""

# makeinfo --html (the libffi manual's shape): a "Next: … Previous: … Up: …" header on every page.
TEXINFO_PAGE = """<html><head><title>The Basics (libffi)</title></head><body lang="en">
<div class="section" id="The-Basics"><div class="header"><p>
Next: <a href="Simple-Example.html" accesskey="n" rel="next">Simple Example</a>,
Previous: <a href="Introduction.html" rel="prev">What is libffi?</a>,
Up: <a href="Using-libffi.html" accesskey="u" rel="up">Using libffi</a> &nbsp; [<a href="Index.html">Index</a>]</p>
</div><hr><h3 class="section">2.1 The Basics</h3>
<p><code>libffi</code> assumes that you have a pointer to the function you wish to call and that you know the
number and types of arguments to pass it, as well as the return type of the function.</p>
<p>The first thing you must do is create an <code>ffi_cif</code> object that matches the signature of the
function you wish to call. This is a separate step because it is common to make multiple calls using a single
<code>ffi_cif</code>. The cif in ffi_cif stands for Call InterFace.</p>
<ul class="section-toc"><li><a href="Simple-Example.html">Simple Example</a></li></ul>
</div></body></html>"""

__all__ = ["ARTICLE", "SITE_PAGE", "TEXINFO_PAGE", "minimal_pdf", "pdf_pages", "pdf_with_a_wrong_startxref"]
