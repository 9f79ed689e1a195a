"""bench/run_pilot_kube.sh (make bench-pilot-kube) at a tiny size: 20 Services, 60 Pods, 10
simulated sidecars, 3 s of churn at 50 changes/s, both sources (the Kubernetes source against
tests/kubeapi, then the folder source). Checks that the summary and the results JSON carry the
figures (initial convergence, the marked changes' p50/p99/max, pilot RSS and CPU, the churn
driver's write rate) and that every client converged on every marked change, for both sources.
No timing assertions: this is a smoke test of the benchmark, not a measurement."""
import glob
import json
import os
import signal
import subprocess

from conftest import ROOT, build_dir

SCRIPT = os.path.join(ROOT, "bench", "run_pilot_kube.sh")


def test_bench_pilot_kube_tiny(tmp_path):
    env = dict(os.environ, BENCH_RESULTS_DIR=str(tmp_path / "results"), TMPDIR=str(tmp_path))
    env.pop("KUBERNETES_SERVICE_HOST", None)
    cmd = [SCRIPT, build_dir(), "-s", "20", "-p", "3", "-n", "10", "--churn-s", "3",
           "-t", "60"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the script's trap stops what it started
        out, err = proc.communicate(timeout=30)
        raise AssertionError("run_pilot_kube.sh timed out:\n%s\n%s" % (out, err))
    assert proc.returncode == 0, out + err
    lines = out.splitlines()
    rows = {ln.split()[0]: ln for ln in lines if ln.split() and ln.split()[0] in ("kube",
                                                                                  "folder")}
    assert set(rows) == {"kube", "folder"}, out
    for src in ("kube", "folder"):
        assert " 3/3 " in rows[src], rows[src]  # every marked change converged on every client
    assert any(ln.startswith("kube: ") and "API server CPU" in ln for ln in lines), out
    files = glob.glob(str(tmp_path / "results" / "pilot-kube-*.json"))
    assert len(files) == 1, files
    doc = json.load(open(files[0]))
    assert doc["services"] == 20 and doc["pods"] == 60 and doc["clients"] == 10
    for src in ("kube", "folder"):
        s = doc["sources"][src]
        assert s["initial"]["converged"] == 10, s["initial"]
        assert s["marks_total"] == 3 and s["marks_converged_all"] == 3, s["marks"]
        for m in s["marks"]:
            assert m["converged"] == 10 and not m["timed_out"]
            assert 0 < m["conv_p50_ms"] <= m["conv_p99_ms"] <= m["conv_max_ms"]
        if src == "kube":
            assert all(m["http_status"] == 200 for m in s["marks"]), s["marks"]
        assert s["churn"]["writes"] == 150 and s["churn"]["errors"] == 0, s["churn"]
        assert s["pilot"]["rss_after_initial_mb"] > 0 and s["pilot"]["hwm_churn_mb"] > 0
        assert s["pilot"]["cpu_churn_s"] >= 0
    assert doc["sources"]["kube"]["api_cpu_churn_s"] is not None
    assert not glob.glob(str(tmp_path / "weft-pilot-kube.*")), "the temporary directory stayed"
