"""bench/run_pilot_scale.sh (make bench-pilot) at a tiny size: 30 generated services, 20
simulated sidecars, one round of changes, then the web view's phase (issue 22): pilot scrapes
the load client's synthetic Istio metrics and every /ui/api endpoint is asked. Checks that the
summary and the results JSON carry the figures (every endpoint answered 200 with a time and a
size, the graph has the scraped edges, pilot's RSS before and after) and that every client
converged on every change. No timing assertions: this is a smoke test of the benchmark, not a
measurement (the limits themselves are checked by the script, whose exit code is asserted)."""
import glob
import json
import os
import signal
import subprocess

from conftest import ROOT, build_dir

SCRIPT = os.path.join(ROOT, "bench", "run_pilot_scale.sh")


def test_bench_pilot_scale_tiny(tmp_path):
    env = dict(os.environ, BENCH_RESULTS_DIR=str(tmp_path / "results"), TMPDIR=str(tmp_path))
    cmd = [SCRIPT, build_dir(), "-n", "20", "-s", "30", "-r", "1", "-t", "120"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the script's trap stops what it started
        out, err = proc.communicate(timeout=30)
        raise AssertionError("run_pilot_scale.sh timed out:\n%s\n%s" % (out, err))
    assert proc.returncode == 0, out + err
    assert "web view (issue 22)" in out and "scraped 20 of 20 proxies" in out, out
    files = glob.glob(str(tmp_path / "results" / "pilot-scale-*.json"))
    assert len(files) == 1, files
    doc = json.load(open(files[0]))
    for ch in doc["changes"]:
        assert ch["converged"] == 20, ch
    ui = doc["ui"]
    assert ui["ok"], ui
    want = {"validations_first", "validations_cached", "proxies", "graph", "graph_cached",
            "graph_1h", "scrape"}
    assert set(ui["steps"]) == want, ui["steps"]
    for name, st in ui["steps"].items():
        assert st["status"] == 200 and st["ms"] > 0 and st["bytes"] > 0, (name, st)
    # the synthetic metrics: 3 outbound edges per proxy, each through a service node
    assert ui["graph"]["scrape"]["ok"] == 20, ui["graph"]
    assert ui["graph"]["edges"] >= 20 and ui["graph"]["nodes"] >= 20, ui["graph"]
    assert ui["rss_before_mb"] > 0 and ui["rss_after_mb"] > 0
