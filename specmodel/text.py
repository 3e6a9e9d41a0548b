"""Text from users and servers made inert where it is shown: `clean_name` (a name: control and format
characters removed, whitespace collapsed, cut), `safe_text` (the one text-safety function, also for
Markdown) and `terminal_text` (what reaches a terminal). The bounds on text shown back live here:

    MAX_LABEL_CHARS        a name (workload, model) shown back to the user
    MAX_MESSAGE_CHARS      a message shown on a page or a terminal line
"""

from __future__ import annotations

import codecs
import re
import unicodedata

MAX_LABEL_CHARS = 200  # chosen: a name or label shown back is cut here (real ones are under 100)
MAX_MESSAGE_CHARS = 2_000  # chosen: a message shown on a page or a terminal line: a few sentences

# Markdown that user text must not trigger where Streamlit renders Markdown: emphasis, code, links, HTML,
# headings, tables and maths; and the bare URLs (`http://`, `www.`) and e-mail addresses Streamlit turns
# into links. Those are found in the text *after* escapes are read (remark-gfm's autolink-literal pass runs
# on the parsed text: `https\:\/\/x` became a link again), so they are broken with a zero-width joiner
# (U+200D) where the pattern needs two characters side by side: `https:‍//`, `www‍.`, `name‍@host`. The text
# reads the same; a copied address no longer opens.
_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|~$!"})
# A message (one line) keeps ordinary punctuation as typed; what would format it is escaped: emphasis and
# strikethrough (*, ~), code (`), HTML (<), maths ($), a link or image's "](" and "![", Streamlit's colour
# directive (":red[...]"), an underscore at a word's edge (_bold_; one inside a word, tokens_per_step,
# formats nothing and stays).
_MESSAGE_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`<*~$"})
_CODE_MESSAGE_SPECIAL = str.maketrans({c: "\\" + c for c in "\\<*~$"})  # ... the app's own words keep `code`
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_DIRECTIVE = re.compile(r"(:[A-Za-z][\w-]*)\[")
_AUTOLINK = re.compile(r"(?i)://|www\.|@")
_JOINER = "\u200d"  # zero-width joiner: breaks an autolink's pattern, shows nothing
_LINE_START = re.compile(r"(?m)^([ \t]*)(\d{1,9}(?=[.)]\s)|)([#>=|]|[.)+*-](?=\s))")


def _no_autolinks(escaped: str) -> str:
    return _AUTOLINK.sub(lambda m: ":" + _JOINER + "//" if m.group() == "://" else
                         _JOINER + "@" if m.group() == "@" else m.group()[:3] + _JOINER + ".", escaped)


def safe_text(value, limit: int = MAX_LABEL_CHARS, markdown: str | None = None) -> str:
    """THE text-safety function: every string from a user or a server that reaches a page or a
    terminal goes through it. Control and format characters removed (a forged terminal line, bidi
    overrides), whitespace and line breaks collapsed into one line (a label cannot start a line of its
    own), cut to `limit` characters (200 for a name), and where the text is rendered as Markdown made
    inert:

        markdown=None       a terminal line, st.code/st.text, a table cell: nothing to escape
        markdown="plain"    a user value inside Markdown: no formatting, link, image, HTML, heading or maths
        markdown="message"  a whole message for st.error/st.warning/st.info/st.caption quoting user
                            text: no link (bare URLs and e-mail addresses included), image, HTML, code,
                            emphasis, heading or maths; ordinary punctuation stays as typed
        markdown="code_message"  the same for the app's own words that mark `code` (a launch flag, a
                            config key): its code spans stay code
        markdown="figure"   a name in a chart (a legend, a title, a hover): Plotly reads a few HTML tags
                            (<a href>, <b>, <br>) in them, so < > & are written as entities
    """
    text = clean_name(value, limit)[0]
    if markdown in ("message", "code_message"):
        special = _MESSAGE_SPECIAL if markdown == "message" else _CODE_MESSAGE_SPECIAL
        text = text.translate(special).replace("](", "]\\(").replace("![", "!\\[")
        text = _no_autolinks(_DIRECTIVE.sub(r"\1\\[", _EDGE_UNDERSCORE.sub(r"\\_", text)))
        # a heading, quote, list or rule at the start is escaped: "\\# ", "1\\. "
        return _LINE_START.sub(lambda m: m.group(1) + m.group(2) + "\\" + m.group(3), text)
    if markdown == "plain":
        return _no_autolinks(text.translate(_MARKDOWN_SPECIAL))
    if markdown == "figure":
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def marked_name(value, limit: int = MAX_LABEL_CHARS) -> str:
    """A name as safe_text shows it, but with its invisible characters named instead of dropped: a
    zero-width space or a direction mark (any control or format character but a line break or a tab) reads
    <U+200B>, so a header 'concu\u200brrency' is not reported as the clean 'concurrency' it looks like."""
    text = str(value)[:limit * 4 + 64]
    if not text.isprintable():
        text = "".join(f"<U+{ord(c):04X}>" if c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf") else c
                       for c in text)
    return safe_text(text, limit)


PRINTABLE_ASCII = bytes(range(0x20, 0x7f)) + b"\n\t"  # chosen: what terminal_text keeps of ASCII as it is


def terminal_text(text: str) -> str:
    """What reaches a terminal: `text` with control and format characters removed (escape sequences,
    carriage returns, backspaces, text-direction overrides: a line forged inside a label), line breaks
    and tabs kept and the layout untouched (no cut, no collapsing: tables stay aligned, JSON stays JSON).
    The command line's stdout and stderr pass everything through it (cli.output.SafeStream); names are
    also cut and cleaned where they are read (clean_name)."""
    if text.isascii():  # 300 MB of `runs --json` in a fraction of a second: bytes with no control character
        data = text.encode("ascii")
        if not data.translate(None, PRINTABLE_ASCII):
            return text
    elif text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "".join(c if c in "\n\t" or c.isprintable() else " " if unicodedata.category(c) in ("Zs", "Zl", "Zp")
                   else "" for c in text)


# What the tool's own words write outside ASCII, spelled in ASCII for a stream that cannot encode them
# (PYTHONIOENCODING=ascii, a cron job's C locale, a Windows console): the rest decomposes (é -> e) or
# becomes "?".
ASCII_FALLBACKS = str.maketrans({
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "Δ": "delta", "η": "eta", "λ": "lambda", "μ": "u",
    "µ": "u", "σ": "sigma", "τ": "tau", "≠": "!=", "≤": "<=", "≥": ">=", "≈": "~", "…": "...", "×": "x",
    "÷": "/", "·": "*", "−": "-", "–": "-", "—": "--", "→": "->", "←": "<-", "↑": "^", "↓": "v", "±": "+/-",
    "′": "'", "‘": "'", "’": "'", "“": '"', "”": '"', "«": '"', "»": '"', "°": " deg", "√": "sqrt", "∞": "inf",
    "²": "^2", "³": "^3", "⁻": "^-", "¹": "^1", "⁰": "^0", "½": "1/2", "¼": "1/4", "✓": "ok", "✗": "x", "•": "*",
    "\u00a0": " ", "\u202f": " ", "\u2009": " ", "€": "EUR",
})


def _spelled_in_ascii(exc: UnicodeEncodeError) -> tuple[str, int]:
    """The codec error handler behind `encodable`: the characters a stream cannot encode, in ASCII."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    part = unicodedata.normalize("NFKD", exc.object[exc.start:exc.end].translate(ASCII_FALLBACKS))
    kept = "".join(c for c in part if not unicodedata.combining(c))
    return "".join(c if c.isascii() else "?" for c in kept), exc.end


codecs.register_error("specmodel_ascii", _spelled_in_ascii)


def encodable(text: str, encoding: str) -> str:
    """`text` as a stream with `encoding` can write it: unchanged where it can; else each character it
    cannot encode spelled in ASCII (the tool's symbols: α -> alpha, ≠ -> !=, … -> ...; accents dropped,
    é -> e; the rest '?'). The command line prints on any locale this way (cli.output.SafeStream)."""
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        return text.encode(encoding, "specmodel_ascii").decode(encoding)
    except LookupError:  # an encoding Python does not know: ASCII, which every stream writes
        return text.encode("ascii", "specmodel_ascii").decode("ascii")


def clean_name(value, limit: int = MAX_LABEL_CHARS) -> tuple[str, bool]:
    """A name as it may be shown: control and format characters removed (NUL, escapes, bidi
    overrides), whitespace collapsed, at most `limit` characters. Returns (name, changed)."""
    text = str(value)
    cut = len(text) > limit * 4 + 64
    if cut:  # never more than needed is looked at: the rest is cut anyway
        text = text[:limit * 4 + 64]
    if text.isprintable():  # no control, format or other C-category character: nothing to look at one by one
        kept = " ".join(text.split())
        return (kept[:limit - 1] + "…" if len(kept) > limit or cut else kept), cut
    kept = "".join(" " if c in "\t\r\n" else c for c in text
                   if c in "\t\r\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn"))
    kept = " ".join(kept.split())
    if len(kept) > limit or cut:
        kept = kept[:limit - 1] + "…"
    return kept, cut or any(unicodedata.category(c)[0] == "C" for c in text)
