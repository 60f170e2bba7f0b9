"""A rendered card as a self-contained HTML page: GitHub-like Markdown rendering, the report's plots inlined."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath
from urllib.parse import quote

HTML_PAGE = """<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #ccc; padding: .3rem .5rem; vertical-align: top; }}
blockquote {{ border-left: .25rem solid #d29922; margin-left: 0; padding-left: 1rem; }}
img {{ max-width: 100%; }}
</style>
</head>
<body>
{body}</body>
</html>
"""


def markdown_to_html(markdown: str) -> str:
    """The HTML body GitHub-like renderers give: CommonMark plus GFM tables (markdown-it-py)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(markdown)


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def embed_plots(html: str, folder: Path, files: Sequence[str]) -> str:
    """The report's plots (PNG files beside results.json) put into the page as data URIs, so the page shows them
    wherever it is written; a file that is missing or not a PNG stays a link."""
    import base64

    for file in files:
        path = folder / file
        if PurePath(file).name != file or not path.is_file():
            continue
        data = path.read_bytes()
        if not data.startswith(PNG_MAGIC):
            continue
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        html = html.replace(f'src="{quote(file, safe="")}"', f'src="{uri}"')
    return html


def render_html(markdown: str, title: str, lang: str = "en") -> str:
    """A minimal self-contained page around the rendered card, for a browser or a static host."""
    import html

    return HTML_PAGE.format(lang=html.escape(lang, quote=True), title=html.escape(title),
                            body=markdown_to_html(markdown))
