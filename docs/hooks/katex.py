"""An mkdocs hook: KaTeX, the math typesetter, goes into the site from a local copy.

The site must work offline, so KaTeX is served with it, not from a CDN. Its files come
from Debian's ``libjs-katex`` package (``apt-get install libjs-katex``; KaTeX is MIT
licensed, and its licence goes along), or from the directory named by ``KATEX_DIR``
that has the same layout (``katex.min.js``, ``katex.min.css``, ``contrib/auto-render.js``,
``fonts/``), such as the ``dist/`` folder of npm's ``katex`` package. The build stops
with an error that says so when neither is there.

The files land under ``assets/katex/`` in the site, where ``mkdocs.yml``'s
``extra_css`` and ``extra_javascript`` load them. Only the WOFF2 fonts are copied:
every browser that runs KaTeX reads them, and it asks for no other format then.
"""
from __future__ import annotations

import os
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

DEBIAN_KATEX = Path("/usr/share/javascript/katex")
DEBIAN_LICENSE = Path("/usr/share/doc/libjs-katex/copyright")
SITE_FOLDER = "assets/katex"
# The site's file name -> the file's name in the KaTeX folder.
SCRIPTS = {
    "katex.min.js": "katex.min.js",
    "katex.min.css": "katex.min.css",
    "contrib/auto-render.min.js": "contrib/auto-render.js",
}


def katex_files() -> dict[str, Path]:
    """The site's KaTeX files (path under ``assets/katex/`` -> the local file)."""
    if os.environ.get("KATEX_DIR"):
        source = Path(os.environ["KATEX_DIR"])
        licences = (source / "LICENSE", source.parent / "LICENSE")    # npm: beside dist/
    else:
        source, licences = DEBIAN_KATEX, (DEBIAN_LICENSE,)
    files = {name: source / local for name, local in SCRIPTS.items()}
    files.update({f"fonts/{font.name}": font
                  for font in sorted((source / "fonts").glob("KaTeX_*.woff2"))})
    licence = next((path for path in licences if path.is_file()), None)
    missing = [str(path) for path in files.values() if not path.is_file()]
    if not any(name.startswith("fonts/") for name in files):
        missing.append(str(source / "fonts" / "KaTeX_*.woff2"))
    if licence is None:
        missing.append(" or ".join(map(str, licences)))
    if missing:
        raise PluginError(
            "KaTeX, which typesets the site's math, was not found: missing "
            + ", ".join(missing) + ". Install it with `apt-get install libjs-katex`, or set "
            "KATEX_DIR to a folder with KaTeX's katex.min.js, katex.min.css, "
            "contrib/auto-render.js and fonts/ (such as the dist/ folder of npm's katex).")
    files["LICENSE"] = licence
    return files


def on_files(files, config):
    """Add KaTeX's files to the site's files, so that mkdocs copies them (and serves them)."""
    for name, path in katex_files().items():
        files.append(File.generated(config, f"{SITE_FOLDER}/{name}", abs_src_path=str(path)))
    return files
