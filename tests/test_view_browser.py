"""`commprof view` serves the traces; a real headless Chromium (Debian's, never downloaded) drives the
PyTorch profiler plugin: the run is listed with its workers and the Distributed view can be chosen."""

import json
from contextlib import contextmanager
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).parent / "artifacts"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def commprof_view(traces: Path):
    """`commprof view --json` on a traces folder: what it prints once TensorBoard serves; terminated at the end."""
    process = subprocess.Popen([sys.executable, "-m", "commprof", "view", "--traces-dir", str(traces), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline()
        assert line, "commprof view printed nothing"
        yield json.loads(line)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def served(cpu_run):
    cwd, _ = cpu_run
    with commprof_view(cwd / "traces") as printed:
        yield printed["url"]


def test_plugin_lists_run_workers_and_distributed_view(served):
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{served}/data/plugin/pytorch_profiler/index.html")
        expect(page.get_by_role("button", name="e2e")).to_be_visible(timeout=60_000)  # the run
        page.get_by_role("button", name="rank0").click()  # the Workers select of the default view
        expect(page.get_by_role("option", name="rank0")).to_be_visible()
        expect(page.get_by_role("option", name="rank1")).to_be_visible()
        page.keyboard.press("Escape")
        page.get_by_role("button", name="Overview").click()  # the Views select
        page.get_by_role("option", name="Distributed").click()
        expect(page.get_by_role("button", name="Distributed")).to_be_visible(timeout=30_000)
        expect(page.get_by_role("button", name="All")).to_be_visible()  # the Distributed view's worker
        expect(page.get_by_role("listbox")).to_have_count(0)  # the menu has closed
        # The view's charts need Google's chart library from the internet; offline they never draw
        # (README: use report.html there). The screenshot shows what an air-gapped user sees.
        page.screenshot(path=str(ARTIFACTS / "tensorboard-distributed.png"))
        browser.close()


DEEP = """(selector) => {
  const found = [];
  (function walk(root) {
    root.querySelectorAll(selector).forEach(e => found.push(e));
    root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) walk(e.shadowRoot); });
  })(document);
  return found.map(e => ({d: e.getAttribute('d') || '', text: e.innerText || e.textContent || ''}));
}"""


def deep(page, selector: str) -> list[dict]:
    """Elements matching `selector` anywhere in the page, inside TensorBoard's shadow DOMs too."""
    return page.evaluate(DEEP, selector)


@pytest.fixture
def served_with_sweep(cpu_run):
    """The run, and a sweep's event files beside it (the HParams dashboard needs settings to compare)."""
    from commprof.render.tensorboard import write_events
    from commprof.results.store import load_report
    from tests.test_tensorboard_events import swept

    cwd, _ = cpu_run
    sweep_events = cwd / "traces" / "sweep-demo" / "tensorboard"
    if not sweep_events.exists():
        write_events(swept(load_report(cwd / "reports" / "e2e" / "report.json")), sweep_events)
    with commprof_view(cwd / "traces") as printed:
        yield printed["tabs"]


def test_commprofs_own_dashboards_draw_offline(served_with_sweep):
    """Scalars draw the per-step lines, HParams lists both settings, Text shows the report: no network needed."""
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(served_with_sweep["Scalars"] + "&tagFilter=step%2Fcompute_ms")  # the per-step charts
        page.wait_for_function(f"() => ({DEEP})('path.line').some(p => (p.d.match(/L/g) || []).length >= 3)",
                               arg=None, timeout=60_000)
        lines = [p["d"] for p in deep(page, "path.line") if p["d"].count("L") >= 3]
        assert lines, "no chart line with several steps was drawn"  # a line per rank, one point per step
        page.screenshot(path=str(ARTIFACTS / "tensorboard-scalars.png"))

        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(served_with_sweep["HParams"])
        expect(page.get_by_text("25.000", exact=True)).to_be_visible(timeout=60_000)  # bucket_cap_mb of each setting
        expect(page.get_by_text("5.0000", exact=True)).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "tensorboard-hparams.png"))

        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(served_with_sweep["Text"])
        expect(page.get_by_text("commprof report: e2e").first).to_be_visible(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "tensorboard-text.png"))
        browser.close()


def test_terminating_view_stops_tensorboard(cpu_run):
    """A `commprof view` that is terminated takes its TensorBoard with it (no server left reloading traces)."""
    cwd, _ = cpu_run
    with commprof_view(cwd / "traces") as printed:
        url = printed["url"]
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.URLError):  # nothing serves there any more
        urllib.request.urlopen(url, timeout=10)
