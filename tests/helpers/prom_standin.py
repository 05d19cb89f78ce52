"""The real Prometheus (Debian's ``prometheus`` package) scraping STAND-IN dcgm-exporters: small HTTP servers
serving the generated metric lines of tests/fixtures/dcgm/ (tests/helpers/dcgm_fixtures.py). Used by
tests/unit/test_dcgm_node_label.py and tests/integration/test_cp_remediation.py."""
import contextlib
import http.server
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import yaml

from controlplane import free_port


class _Exporter(http.server.BaseHTTPRequestHandler):
    """STAND-IN for dcgm-exporter: serves the metric lines of ``self.server.path``."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        with open(self.server.path, "rb") as handle:
            body = handle.read()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def binary_or_skip(pytest):
    binary = shutil.which("prometheus")
    if not binary:
        pytest.skip("needs Debian's prometheus package (apt-get install prometheus)")
    return binary


def query(url, promql):
    """The decoded answer of an instant query."""
    with urllib.request.urlopen(url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}), timeout=10) as resp:
        return json.load(resp)


@contextlib.contextmanager
def prometheus(binary, tmp, targets, rules=None, ready_query="DCGM_FI_DEV_XID_ERRORS", ready_count=None):
    """Start Prometheus (1 s scrape and evaluation) scraping one stand-in exporter per ``targets`` entry
    ``(fixture path, {extra target labels})`` (e.g. ``kubernetes_node``, as a scrape job's relabelling adds it),
    with the rules file text ``rules``; yields ``(url, exporters)`` once ``ready_query`` answers
    ``ready_count`` series (default: one per target line of it, i.e. any). The exporters' ``path`` may be changed."""
    exporters, configs = [], []
    for path, labels in targets:
        server = http.server.HTTPServer(("127.0.0.1", 0), _Exporter)
        server.path = path
        threading.Thread(target=server.serve_forever, daemon=True).start()
        exporters.append(server)
        configs.append({"targets": ["127.0.0.1:%d" % server.server_address[1]], "labels": dict(labels or {})})
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "scrape_configs": [{"job_name": "dcgm-exporter", "static_configs": configs}]}
    if rules:
        (tmp / "rules.yml").write_text(rules)
        config["rule_files"] = [str(tmp / "rules.yml")]
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = open(str(tmp / "prometheus.log"), "wb")
    proc = subprocess.Popen([binary, "--config.file=%s" % (tmp / "prometheus.yml"),
                             "--storage.tsdb.path=%s" % (tmp / "data"), "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = "http://127.0.0.1:%d" % port
    want = len(targets) if ready_count is None else ready_count
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = query(url, "count by (instance) (%s)" % ready_query)
                if len(answer["data"]["result"]) >= want:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("Prometheus did not scrape the stand-in exporters: %s"
                                   % open(str(tmp / "prometheus.log")).read()[-2000:])
            time.sleep(0.5)
        yield url, exporters
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
        for server in exporters:
            server.shutdown()
            server.server_close()


def fixture_path(name):
    from dcgm_fixtures import FIXTURES
    return os.path.join(FIXTURES, name)
