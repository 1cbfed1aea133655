"""Opens pages of a built documentation site in headless Chromium with every other host
unreachable, and checks that their formulas are typeset: each formula that
pymdownx.arithmatex wrote into a page is a MathJax element in the rendered page, no raw
``\\(`` or ``\\[`` is left in its text, MathJax reports no error and no script fails.

Run (after ``mkdocs build --site-dir DIR``; needs Chromium, e.g. Debian's ``chromium``)::

    python docs/tools/check_site.py DIR [PAGE ...] [--screenshot FILE.png]

``PAGE`` is a page's path in the site (default: ``ids/``, the page with the most formulas).
The site is served from ``127.0.0.1`` by this script; Chromium resolves no other host name,
so a page that needed a CDN would fail here as it would offline. A typical printout::

    ids/: 25 formulas in the page, 25 typeset, 0 raw delimiters left, 0 MathJax errors, 0 script errors
    requests: 31 to the site, failed: /assets/mathjax/fonts/HTML-CSS/TeX/otf/MathJax_AMS-Regular.otf (404)
    ok

(MathJax's native-MathML style sheet names TeX fonts that jupyter-server-mathjax does not ship;
the HTML-CSS output that draws the formulas uses its STIX-Web fonts.) Exit status 1 when a
check fails, 2 when Chromium is not found.
"""
from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: MathJax's output elements: a typeset formula (version 2) or a container (version 3).
TYPESET = {"MathJax", "MathJax_SVG", "MathJax_CHTML"}
ERRORS = {"MathJax_Error", "merror", "mjx-merror"}


def find_browser() -> str | None:
    """Chromium's executable: ``$CHROMIUM`` or the first of :data:`BROWSERS` on the PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


class _Page(html.parser.HTMLParser):
    """Counts formulas (elements of class ``arithmatex``), typeset formulas, MathJax errors,
    and collects the text that a reader sees (not scripts, styles or code)."""

    HIDDEN = {"script", "style", "code", "pre", "noscript", "template"}

    def __init__(self):
        super().__init__()
        self.formulas = self.typeset = self.errors = 0
        self.text = []
        self._hidden = []

    def handle_starttag(self, tag, attrs):
        classes = set((dict(attrs).get("class") or "").split())
        self.formulas += "arithmatex" in classes
        self.typeset += bool(classes & TYPESET) or tag == "mjx-container"
        self.errors += bool(classes & ERRORS) or tag == "mjx-merror"
        if tag in self.HIDDEN:
            self._hidden.append(tag)

    def handle_endtag(self, tag):
        if self._hidden and self._hidden[-1] == tag:
            self._hidden.pop()

    def handle_data(self, data):
        if not self._hidden:
            self.text.append(data)


def parse(markup: str) -> _Page:
    page = _Page()
    page.feed(markup)
    return page


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: pathlib.Path):
        self.log = []
        handler = functools.partial(_Handler, directory=str(site))
        super().__init__(("127.0.0.1", 0), handler)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code="-", size="-"):
        self.server.log.append((self.path.split("?")[0], int(code) if str(code).isdigit() else code))

    def log_message(self, *args):
        pass


def render(browser: str, url: str, screenshot: str | None = None) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran (Chromium's virtual time lets MathJax finish), and
    the uncaught script errors of its console."""
    with tempfile.TemporaryDirectory() as profile:
        args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--virtual-time-budget=20000",
                "--enable-logging=stderr", "--v=0"]
        if screenshot:
            shot = [*args, "--window-size=1280,1500", "--hide-scrollbars",
                    f"--screenshot={os.path.abspath(screenshot)}", url]
            subprocess.run(shot, capture_output=True, timeout=120, check=True)
        done = subprocess.run([*args, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"{browser} could not render {url} (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line and "Uncaught" in line]


def check(site: pathlib.Path, pages: list[str], browser: str, screenshot: str | None = None):
    """``(failures, formulas)``: the failed checks (empty: every page's formulas are typeset)
    and ``{page: formulas in it}``; prints a line per page."""
    failures, counts = [], {}
    server = _Server(site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for i, page in enumerate(pages):
            source = site / page / "index.html" if not page.endswith(".html") else site / page
            if not source.is_file():
                failures.append(f"{page}: no such page in {site}")
                continue
            built = parse(source.read_text(encoding="utf-8"))
            url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
            dom, uncaught = render(browser, url, screenshot if i == 0 else None)
            shown = parse(dom)
            raw = sum("".join(shown.text).count(d) for d in ("\\(", "\\["))
            counts[page] = built.formulas
            print(f"{page}: {built.formulas} formulas in the page, {shown.typeset} typeset, {raw} raw delimiters "
                  f"left, {shown.errors} MathJax errors, {len(uncaught)} script errors")
            if shown.typeset < built.formulas:
                failures.append(f"{page}: {built.formulas - shown.typeset} of {built.formulas} formulas not typeset")
            if raw:
                failures.append(f"{page}: {raw} raw TeX delimiters in the rendered text")
            if shown.errors:
                failures.append(f"{page}: {shown.errors} MathJax errors")
            failures += [f"{page}: {line}" for line in uncaught]
    finally:
        server.shutdown()
        server.server_close()
    failed = sorted({f"{path} ({code})" for path, code in server.log if not isinstance(code, int) or code >= 400})
    print(f"requests: {len(server.log)} to the site" + (f", failed: {', '.join(failed)}" if failed else ""))
    if not any(path.endswith("MathJax.js") for path, code in server.log if code in (200, 304)):
        failures.append("no page loaded MathJax.js from the site")
    return failures, counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=pathlib.Path, help="the built site (mkdocs build --site-dir SITE)")
    parser.add_argument("pages", nargs="*", default=["ids/"], help="pages to open (default: ids/)")
    parser.add_argument("--screenshot", help="write a PNG of the first page here")
    args = parser.parse_args(argv)
    browser = find_browser()
    if browser is None:
        print(f"no Chromium found (looked for {', '.join(BROWSERS)} and $CHROMIUM); e.g. apt-get install chromium",
              file=sys.stderr)
        return 2
    failures, _ = check(args.site, args.pages, browser, args.screenshot)
    print("\n".join(failures) if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
