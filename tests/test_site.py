"""The documentation site: built with ``mkdocs build --strict``, then read in a browser.

The site is built once, into a temporary directory (with ``TINYNET_SITE_DIR`` set, the
site already built there is tested instead: CI's ``make docs`` builds ``site/``), and
served on the loopback interface. Headless Chromium opens the home page, the tutorial
and the LayerNorm page, as a reader would, and each test checks one thing a reader would
see: the formulas typeset by KaTeX (no LaTeX source left in the text), every figure
loaded, no error in the browser's console, the search box and its results. The site must
work offline, so any request to another host would show as a console error.

Chromium is driven through its DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages ended by a NUL byte on file descriptors 3 and 4), which needs nothing
beyond the standard library. The tests skip, with the reason, where mkdocs (the
``docs`` extra) or Chromium (Debian's ``chromium``) is missing. With
``TINYNET_SITE_ARTIFACTS=1`` (CI) the pages' screenshots are saved in
``site/screenshots/``, which git ignores.
"""
from __future__ import annotations

import base64
import fcntl
import functools
import http.server
import json
import os
import re
import select
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"home": "", "tutorial": "tutorial/", "layernorm": "layernorm/"}
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
SCREENSHOTS = ROOT / "site" / "screenshots"
TIMEOUT = 30.0          # seconds for any one step in the browser
# What a page reports once its fonts and images are loaded and its math is typeset.
READ_PAGE = r"""(async () => {
  await document.fonts.ready;
  await Promise.all(Array.from(document.images, (img) => img.complete ? null
    : new Promise((done) => { img.onload = img.onerror = done; })));
  const article = document.querySelector("article").cloneNode(true);
  article.querySelectorAll(".katex-mathml").forEach((node) => node.remove());
  return {
    text: article.textContent,
    katex: document.querySelectorAll(".arithmatex .katex").length,
    untypeset: Array.from(document.querySelectorAll(".arithmatex"))
      .filter((node) => !node.querySelector(".katex"))
      .map((node) => node.textContent.trim().slice(0, 60)),
    images: Array.from(document.images, (img) => [img.getAttribute("src"), img.naturalWidth]),
    search: document.querySelector("input.md-search__input") !== null,
  };
})()"""
# Types QUERY into the search box; the number of results, once there are any (0 after 10 s).
SEARCH = r"""(async () => {
  const input = document.querySelector("input.md-search__input");
  input.focus();
  input.value = QUERY;
  input.dispatchEvent(new Event("input", { bubbles: true }));
  for (let tries = 0; tries < 100; tries++) {
    const results = document.querySelectorAll(".md-search-result__item").length;
    if (results) return results;
    await new Promise((done) => setTimeout(done, 100));
  }
  return 0;
})()"""
SEARCH_QUERY = "gradcheck"      # in the tutorial, autograd.md and the API reference


class Chromium:
    """A headless Chromium, driven through the DevTools protocol on a pipe."""

    def __init__(self, binary: str, profile: Path):
        commands_read, commands_write = os.pipe()
        replies_read, replies_write = os.pipe()

        def give_pipes():
            # In the browser's process: DevTools reads commands on fd 3 and replies on 4.
            # Copies above 10 first, so that neither pipe is overwritten by the other.
            read, write = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
                           for fd in (commands_read, replies_write))
            os.dup2(read, 3)
            os.dup2(write, 4)

        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start;
        # the browser only reads the site built here.
        self.process = subprocess.Popen(
            [binary, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
             f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=give_pipes, close_fds=False)
        os.close(commands_read)
        os.close(replies_write)
        self.commands = os.fdopen(commands_write, "wb")
        self.replies = replies_read
        self.buffer = b""
        self.events: list[dict] = []
        self.last_id = 0

    def close(self):
        self.commands.close()
        os.close(self.replies)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def read_message(self) -> dict:
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.replies], [], [], TIMEOUT)
            if not ready:
                raise TimeoutError(f"Chromium sent nothing for {TIMEOUT:.0f} s")
            chunk = os.read(self.replies, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the DevTools pipe (exit code "
                                   f"{self.process.poll()})")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, page_id: str | None = None, **params) -> dict:
        """Run one DevTools command and return its result; events meanwhile are kept."""
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params}
        if page_id:                        # a command for one attached page
            message["sessionId"] = page_id
        self.commands.write(json.dumps(message).encode() + b"\0")
        self.commands.flush()
        while True:
            reply = self.read_message()
            if reply.get("id") != self.last_id:
                self.events.append(reply)
            elif "error" in reply:
                raise RuntimeError(f"DevTools {method}: {reply['error'].get('message')}")
            else:
                return reply.get("result", {})

    def wait_for(self, method: str, page_id: str):
        while not any(event.get("method") == method and event.get("sessionId") == page_id
                      for event in self.events):
            self.events.append(self.read_message())

    def evaluate(self, page_id: str, expression: str):
        result = self.send("Runtime.evaluate", page_id, expression=expression,
                           awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the page's script raised: {result['exceptionDetails']}")
        return result["result"]["value"]

    def open(self, url: str, search: str | None = None) -> dict:
        """Load ``url`` in a fresh tab: what READ_PAGE sees, a PNG of it, the number of
        results when ``search`` is typed into the search box, the console's errors."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        page_id = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", page_id)
        self.send("Emulation.setDeviceMetricsOverride", page_id, width=1280, height=900,
                  deviceScaleFactor=1, mobile=False)
        self.send("Page.navigate", page_id, url=url)
        self.wait_for("Page.loadEventFired", page_id)
        page = self.evaluate(page_id, READ_PAGE)
        page["screenshot"] = base64.b64decode(
            self.send("Page.captureScreenshot", page_id, format="png")["data"])
        if search is not None:
            page["search_results"] = self.evaluate(
                page_id, SEARCH.replace("QUERY", json.dumps(search)))
        page["errors"] = [error for event in self.events
                          if event.get("sessionId") == page_id and (error := console_error(event))]
        self.send("Target.closeTarget", targetId=target)
        return page


def console_error(event: dict) -> str | None:
    """The text of an error that the browser's console shows for ``event``, or None."""
    params = event.get("params", {})
    if event.get("method") == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return details.get("exception", {}).get("description") or details.get("text")
    if event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
        return " ".join(str(arg.get("value", arg.get("description"))) for arg in params["args"])
    if event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
        return f"{params['entry']['text']} {params['entry'].get('url', '')}".strip()
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built with --strict into a temporary directory, or TINYNET_SITE_DIR."""
    if os.environ.get("TINYNET_SITE_DIR"):
        site_dir = ROOT / os.environ["TINYNET_SITE_DIR"]
        assert (site_dir / "index.html").is_file(), f"TINYNET_SITE_DIR: no site in {site_dir}"
        return site_dir
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(module, reason="the site needs the docs extra: "
                                           "pip install -e '.[docs]'")
    site_dir = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stderr[-5000:]}"
    return site_dir


@pytest.fixture(scope="module")
def pages(site, tmp_path_factory) -> dict:
    """Each page of PAGES as headless Chromium shows it, served over HTTP on the loopback."""
    binary = next(filter(None, map(shutil.which, BROWSERS)), None)
    if binary is None:
        pytest.skip(f"no Chromium to open the site in (looked for {', '.join(BROWSERS)}; "
                    "Debian: apt-get install chromium)")

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = Chromium(binary, tmp_path_factory.mktemp("chromium-profile"))
    try:
        shown = {name: browser.open(f"http://127.0.0.1:{server.server_port}/{path}",
                                    search=SEARCH_QUERY if name == "home" else None)
                 for name, path in PAGES.items()}
    finally:
        browser.close()
        server.shutdown()
        server.server_close()
    if os.environ.get("TINYNET_SITE_ARTIFACTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for name, page in shown.items():
            (SCREENSHOTS / f"{name}.png").write_bytes(page["screenshot"])
    return shown


def test_site_has_every_page_and_loads_nothing_from_other_hosts(site):
    for page in ("index.html", *(f"{path}index.html" for path in PAGES.values() if path),
                 *(f"api/{name}/index.html" for name in ("tensor", "ops", "nn", "optim", "data",
                                                         "distributed", "kernels", "viz"))):
        assert (site / page).is_file(), f"the site has no {page}"
    assert (site / "assets" / "katex" / "fonts" / "KaTeX_Main-Regular.woff2").is_file()
    external = re.compile(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?:https?:)?//[^\"]*\"")
    for html in site.rglob("*.html"):
        loads = external.findall(html.read_text(encoding="utf-8"))
        assert not loads, f"{html.relative_to(site)} loads from another host: {loads}"


def test_api_reference_documents_the_kernels(site):
    kernels = (site / "api" / "kernels" / "index.html").read_text(encoding="utf-8")
    for name in ("tinynet.kernels.ladder.reference", "layer_norm_forward",
                 "tinynet.kernels.ladder.cuda_3_held", "tinynet.kernels.ops.adam_spec"):
        assert name in kernels, f"the kernels' API page does not mention {name}"


@pytest.mark.parametrize("name", PAGES)
def test_formulas_are_typeset(pages, name):
    page = pages[name]
    assert not page["untypeset"], f"{name}: math KaTeX did not typeset: {page['untypeset']}"
    raw = [tex for tex in ("\\frac", "\\(", "\\[", "$$") if tex in page["text"]]
    assert not raw, f"{name}: LaTeX source left in the page's text: {raw}"


def test_layernorm_page_has_typeset_equations(pages):
    # The paper's Eqs. 3-4 and the backward pass, each one displayed block.
    assert pages["layernorm"]["katex"] >= 2, pages["layernorm"]["katex"]


@pytest.mark.parametrize("name", PAGES)
def test_figures_load(pages, name):
    broken = [src for src, width in pages[name]["images"] if width == 0]
    assert not broken, f"{name}: images that did not load: {broken}"


def test_tutorial_shows_its_figures(pages):
    sources = [src for src, width in pages["tutorial"]["images"]]
    assert any("tutorial_composite_layernorm.svg" in src for src in sources), sources


@pytest.mark.parametrize("name", PAGES)
def test_no_console_errors(pages, name):
    assert not pages[name]["errors"], f"{name}: console errors: {pages[name]['errors']}"


@pytest.mark.parametrize("name", PAGES)
def test_search_box(pages, name):
    assert pages[name]["search"], f"{name} has no search box"


def test_search_finds_pages(pages):
    assert pages["home"]["search_results"] > 0, f"searching {SEARCH_QUERY!r} found nothing"
