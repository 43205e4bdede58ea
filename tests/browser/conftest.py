"""A real browser for the viewer's tests: Debian's chromium, driven by Playwright with the system executable
(``playwright install``, which downloads a browser of its own, is never needed)."""

from __future__ import annotations

import shutil

import pytest

from tests import external

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="package")
def browser():
    # Package-scoped, not session-scoped: Playwright's sync API keeps an event loop running in this thread while
    # it lives, and every later test that calls asyncio.run (the live framework runners) would fail.
    executable = chromium_path()
    if executable is None:
        external.missing("chromium", "apt-get install -y chromium")
    from playwright.sync_api import sync_playwright  # a test dependency: an import error is a broken install

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Watched:
    """A page whose requests, dialogs and console errors are recorded: an injection that ran would show in
    one of them (a request to somewhere else, an alert, a script error)."""

    def __init__(self, page):
        self.page = page
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))


@pytest.fixture
def watched(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    yield Watched(page)
    context.close()
