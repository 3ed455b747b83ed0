"""`commprof view` serves the traces; a real headless Chromium (Debian's, never downloaded) opens it as an
air-gapped user would: every request that leaves commprof's TensorBoard is refused. commprof's dashboards
and the plugin's trace viewer must draw; the plugin's own charts cannot (they need Google Charts), so for its
Distributed view the test checks the data those charts would draw against report.json."""

import json
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).parent / "artifacts"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def commprof_view(traces: Path):
    """`commprof view --json` on a traces folder: what it prints once TensorBoard serves; terminated at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "commprof", "view", "--traces-dir", str(traces), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line, "commprof view printed nothing"
        yield json.loads(line)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def served(cpu_run):
    """One `commprof view` of the run, and a sweep's event files beside it (the HParams dashboard needs settings
    to compare; the profiler plugin lists only folders with traces), for every page this file opens."""
    from commprof.render.tensorboard import write_events
    from commprof.results.store import load_report
    from tests.test_tensorboard_events import swept

    cwd, _ = cpu_run
    sweep_events = cwd / "traces" / "sweep-demo" / "tensorboard"
    if not sweep_events.exists():
        write_events(swept(load_report(cwd / "reports" / "e2e" / "report.json")), sweep_events)
    with commprof_view(cwd / "traces") as printed:
        yield printed


def offline_page(browser, root: str):
    """A page for which only commprof's TensorBoard answers, as on a cluster without the internet."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(root) else route.abort())
    return page


def test_plugin_lists_run_workers_and_distributed_view(served, cpu_run):
    """The plugin lists the run and its workers; its Distributed view's data (what its charts, drawn by Google
    Charts, would show) agrees with report.json: each rank's all-reduce calls and bytes."""
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = offline_page(browser, served["url"])
        page.goto(f"{served['url']}/data/plugin/pytorch_profiler/index.html")
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
        page.screenshot(path=str(ARTIFACTS / "tensorboard-distributed.png"))  # what an air-gapped user sees
        api = f"{served['url']}/data/plugin/pytorch_profiler"
        span = page.request.get(f"{api}/spans?run=e2e&worker=All").json()[0]
        commops = page.request.get(f"{api}/distributed/commops?run=e2e&worker=All&span={span}").json()["data"]
        browser.close()
    report = json.loads((cpu_run[0] / "reports" / "e2e" / "report.json").read_text())
    world = len(report["ranks"])
    all_reduces = [c for c in report["collectives"] if c["op"] == "all_reduce"]
    for rank in range(world):
        rows = {row[0]: row for row in commops[f"rank{rank}"]["rows"]}
        _, calls, total_bytes, *_ = rows["gloo:all_reduce"]
        assert calls == sum(c["count"] for c in all_reduces) // world
        assert total_bytes == sum(c["bytes"] * c["count"] for c in all_reduces) // world


def test_one_ranks_trace_draws_offline(served):
    """The Trace page: the plugin's trace viewer, with the polyfill commprof serves, draws rank 1's timeline
    (its four profiled steps) with no request leaving the machine."""
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = offline_page(browser, served["url"])
        page.goto(served["tabs"]["Trace"] + "?run=e2e&worker=rank1")
        expect(page.locator("#status")).to_have_text("e2e / rank1", timeout=60_000)
        viewer = next(frame for frame in page.frames if frame.url.endswith("/trace_embedding.html"))
        viewer.wait_for_function(STEPS_DRAWN, timeout=60_000)
        steps, inked = viewer.evaluate(STEPS_DRAWN)
        assert steps == ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6"]
        assert inked > 10_000, inked  # the timeline's canvases: drawn pixels (not white, not transparent)
        page.screenshot(path=str(ARTIFACTS / "tensorboard-trace.png"))
        browser.close()


# In the trace viewer's page: the model's ProfilerStep slices and the timeline canvases' non-white pixels; null
# until both are there. Under the Web Components polyfill, node lists need Array.from.
STEPS_DRAWN = """() => {
  const view = document.querySelector('tr-ui-timeline-view');
  if (!view || !view.model) return null;
  const steps = new Set();
  for (const thread of view.model.getAllThreads())
    for (const slice of thread.sliceGroup.slices) if (slice.title.startsWith('ProfilerStep')) steps.add(slice.title);
  let inked = 0;
  (function walk(root) {
    for (const canvas of Array.from(root.querySelectorAll('canvas'))) {
      if (!canvas.width || !canvas.height) continue;
      const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < px.length; i += 4) if (px[i + 3] && Math.min(px[i], px[i + 1], px[i + 2]) < 240) inked++;
    }
    for (const element of Array.from(root.querySelectorAll('*'))) if (element.shadowRoot) walk(element.shadowRoot);
  })(document);
  return inked ? [[...steps].sort(), inked] : null;
}"""


DEEP = """(selector) => {
  const found = [];
  (function walk(root) {
    root.querySelectorAll(selector).forEach(e => found.push(e));
    root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) walk(e.shadowRoot); });
  })(document);
  return found.map(e => ({d: e.getAttribute('d') || '', text: e.innerText || e.textContent || ''}));
}"""


def test_commprofs_own_dashboards_draw_offline(served):
    """Scalars draw the per-step lines, HParams lists both settings, Text shows the report: no network needed."""
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = offline_page(browser, served["url"])
        page.goto(served["tabs"]["Scalars"] + "&tagFilter=step%2Fcompute_ms")  # the per-step charts
        # the lines as the wait saw them drawn (read again later, a chart redrawing meanwhile can hold none)
        several = "(p => (p.d.match(/L/g) || []).length >= 3)"
        drawn = page.wait_for_function(
            f"() => {{ const d = ({DEEP})('path.line').filter{several}; return d.length ? d.map(p => p.d) : null; }}",
            arg=None,
            timeout=60_000,
        )
        lines = drawn.json_value()
        assert lines  # chart lines with several steps drawn: a line per rank, one point per step
        page.screenshot(path=str(ARTIFACTS / "tensorboard-scalars.png"))

        page = offline_page(browser, served["url"])
        page.goto(served["tabs"]["HParams"])
        expect(page.get_by_text("25.000", exact=True)).to_be_visible(timeout=60_000)  # bucket_cap_mb of each setting
        expect(page.get_by_text("5.0000", exact=True)).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "tensorboard-hparams.png"))

        page = offline_page(browser, served["url"])
        page.goto(served["tabs"]["Text"])
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
