"""TensorBoard as `commprof view` serves it: the PyTorch profiler plugin's trace viewer made to work offline.

Offline, the plugin shows nothing: its front page waits for Google Charts from the internet, and its trace
viewer page (trace_embedding.html, shipped in the package) loads a Web Components polyfill from cdnjs. This
entry point serves, under the plugin's routes, that page with the polyfill commprof ships (the same file,
static/webcomponents-0.7.24.min.js, BSD-3-Clause) and commprof's own front page for it (static/trace.html:
run and worker, then the trace), then runs TensorBoard as `python -m tensorboard.main` would. The plugin is
no longer developed, so the page it patches does not change under it."""

from __future__ import annotations

from pathlib import Path

POLYFILL = "webcomponents-0.7.24.min.js"
TRACE_PAGE = "commprof-trace.html"  # under the plugin's routes: /data/plugin/pytorch_profiler/commprof-trace.html
CDN_POLYFILL = "https://cdnjs.cloudflare.com/ajax/libs/webcomponentsjs/0.7.24/webcomponents.min.js"
STATIC = Path(__file__).parent / "static"


def _serve_trace_viewer_offline() -> None:
    import torch_tb_profiler
    import werkzeug
    from torch_tb_profiler.plugin import TorchProfilerPlugin
    from werkzeug import wrappers

    plugin_apps = TorchProfilerPlugin.get_plugin_apps
    page = (Path(torch_tb_profiler.__file__).parent / "static" / "trace_embedding.html").read_bytes()
    page = page.replace(CDN_POLYFILL.encode(), POLYFILL.encode())

    @wrappers.Request.application
    def trace_page(request):
        return werkzeug.Response(page, content_type="text/html", headers=TorchProfilerPlugin.headers)

    def static(name: str, content_type: str):
        @wrappers.Request.application
        def route(request):
            return werkzeug.Response(
                (STATIC / name).read_bytes(), content_type=content_type, headers=TorchProfilerPlugin.headers
            )

        return route

    def apps(self):
        return {
            **plugin_apps(self),
            "/trace_embedding.html": trace_page,
            f"/{POLYFILL}": static(POLYFILL, "application/javascript"),
            f"/{TRACE_PAGE}": static("trace.html", "text/html"),
        }

    TorchProfilerPlugin.get_plugin_apps = apps


def main() -> None:
    from tensorboard import main as tensorboard_main

    try:
        _serve_trace_viewer_offline()
    except ImportError:  # no profiler plugin: TensorBoard serves commprof's own dashboards alone
        pass
    tensorboard_main.run_main()


if __name__ == "__main__":
    main()
