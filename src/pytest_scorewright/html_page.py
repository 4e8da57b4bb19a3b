"""The HTML every page of ours shares (the run report, the leaderboard, the audit): text from
result files made safe (cleaned of control and bidi characters, escaped, bounded), and a
whole self-contained page under a Content-Security-Policy that fetches nothing and runs no
script. A leaf: it depends on the text helpers only.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from pytest_scorewright._text import clean

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1160px;
  padding: 0 1rem; color: #1b1f24; }
h1 { font-size: 1.4rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.1rem; margin: 2rem 0 0.3rem; border-bottom: 1px solid #d0d7de; }
p.meta, p.note { color: #57606a; margin: 0.2rem 0; }
.cards { display: flex; flex-wrap: wrap; gap: 0.6rem; margin: 1rem 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 0.4rem 0.8rem; }
.card b { display: block; font-size: 1.2rem; }
.legend span { display: inline-block; margin-right: 1rem; font-size: 0.85rem; }
.swatch { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.3rem;
  vertical-align: middle; }
table { border-collapse: collapse; font-size: 0.85rem; width: 100%; }
th, td { padding: 0.25rem 0.5rem; border-bottom: 1px solid #d0d7de; text-align: left; }
th { background: #f6f8fa; }
.status { color: #fff; border-radius: 4px; padding: 0 0.35rem; white-space: nowrap; }
.status.light { color: #1b1f24; }
details { border-bottom: 1px solid #eaeef2; padding: 0.3rem 0; font-size: 0.85rem; }
details pre { white-space: pre-wrap; background: #f6f8fa; padding: 0.4rem; margin: 0.3rem 0; }
code { font-size: 0.85em; }
"""


def text(value: str, limit: int = 200) -> str:
    value = clean(value)
    return html.escape(value if len(value) <= limit else value[: limit - 1] + "…")


def document(title: str, body: Sequence[str]) -> str:
    """A whole page around ``body`` (HTML already escaped): the report's style, and a
    Content-Security-Policy under which nothing is fetched and no script runs."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        # Nothing is fetched when the page is opened, and no script runs, whatever the text.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title)}</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
