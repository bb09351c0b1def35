#!/usr/bin/python3
"""xflow-bench: times original vs xflowc-optimized zoo models on every backend present.

For each model: writes it with xflow-zoo, optimizes it with xflowc (search
time, node counts and estimated cost before/after, read from xflowc's summary
lines; 'n/a' when a figure is absent), then measures the original and the
optimized model on each backend: xflow cpu_ref, xflow cpu, xflow cuda, ONNX
Runtime (original vs optimized, plus ORT's own offline-optimized model as a
peer optimizer) and TensorRT's trtexec.  A backend that is absent is listed
as absent, with what would enable it.  Method: warm-up, then the median of
repeated runs, original and optimized alternated, ratios within one run.

Writes a markdown table on stdout, OUT/bench.json, OUT/bench.md and
OUT/speedup.png (gnuplot); progress goes to stderr.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = ["inception-block", "squeezenet", "nasrnn", "resnet50", "resnext50", "inception-v3", "nasnet-a", "bert"]
XFLOW_BACKENDS = {
    "cpu_ref": "always built",
    "cpu": "build with oneDNN (Debian libdnnl-dev, installed by scripts/setup.sh)",
    "cuda": "build with the CUDA toolkit (CUDA 13, cuDNN 9, cuBLAS under /usr/local/cuda) "
    "and run on a machine with an NVIDIA GPU",
}
ALL_BACKENDS = ["cpu_ref", "cpu", "cuda", "ort", "trt"]
NUM = r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"


VERBOSE = False


def progress(msg):
    print(f"xflow-bench: {msg}", file=sys.stderr, flush=True)


def run(cmd, timeout, cwd=None):
    """(exit code, stdout+stderr, seconds); exit code None on timeout."""
    if VERBOSE:
        progress("running " + " ".join(cmd))
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                           cwd=cwd)
        return p.returncode, p.stdout, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out, time.monotonic() - t0


def parse_xflowc(out):
    """The optimizer's figures from xflowc's summary lines; None where absent."""
    r = {"nodes_before": None, "nodes_after": None, "search_s": None, "cost_before": None, "cost_after": None,
         "cost_unit": None, "cost_model": None, "rules_applied": None, "canonicalize": None,
         "measured_before_ms": None, "measured_after_ms": None, "search_result_written": None}
    m = re.search(r"(\d+) nodes -> (\d+) nodes", out)
    if m:
        r["nodes_before"], r["nodes_after"] = int(m.group(1)), int(m.group(2))
    m = (re.search(r"search(?: time)?[^0-9\n]*" + NUM + r"\s*s\b", out)
         or re.search(NUM + r" s (?:optimize|search)", out))
    if m:
        r["search_s"] = float(m.group(1))
    m = re.search(r"estimated cost(?:\s*\([^)\n]*\))?[^0-9\n]*" + NUM + r"\s*([a-zA-Z]*)[^0-9\n]*?(?:->|to)[^0-9\n]*"
                  + NUM, out, re.I)
    if m:
        r["cost_before"], r["cost_after"] = float(m.group(1)), float(m.group(3))
        r["cost_unit"] = m.group(2) or None
    m = re.search(r"^cost model: (\S+)", out, re.M)
    if m:
        r["cost_model"] = m.group(1)
    m = re.search(r"(\d+) rules? applied|rules applied[^0-9\n]*(\d+)", out)
    if m:
        r["rules_applied"] = int(m.group(1) or m.group(2))
    m = re.search(r"^canonicalize: (.*)$", out, re.M)
    if m:
        r["canonicalize"] = m.group(1).strip()
    # xflowc times the graphs before and after its search on this CPU and
    # writes the search's result only if it is not slower
    m = re.search(r"^measured on cpu: " + NUM + r" ms before the search, " + NUM + r" ms after(.*)$", out, re.M)
    if m:
        r["measured_before_ms"], r["measured_after_ms"] = float(m.group(1)), float(m.group(2))
        r["search_result_written"] = "slower" not in m.group(3)
    return r


def load_outputs(directory):
    import onnx
    from onnx import numpy_helper

    files = sorted((f for f in os.listdir(directory) if f.startswith("output_")), key=lambda f: int(f[7:-3]))
    return [numpy_helper.to_array(onnx.load_tensor(os.path.join(directory, f))) for f in files]


def output_errors(dir_a, dir_b):
    """(largest |a - b|, that over the largest |a|) over all outputs; (None, None)
    when they differ in number or shape."""
    import numpy as np

    a, b = load_outputs(dir_a), load_outputs(dir_b)
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return None, None
    pairs = [(x.astype(np.float64), y) for x, y in zip(a, b) if x.size]
    err = max((float(np.max(np.abs(x - y))) for x, y in pairs), default=0.0)
    scale = max((float(np.max(np.abs(x))) for x, _ in pairs), default=0.0)
    return err, (err / scale if scale > 0 else err)


def xflow_run_median(tools, model, backend, iters, one_run):
    # Warm-up of about 0.2 s (one_run, a whole process, bounds a run from
    # above; 3 to 20 runs below a second): a fresh process's first runs of
    # a millisecond model are slower (caches, page faults, clocks).
    warmup = max(1 if one_run >= 1.0 else 3, min(20, int(0.2 / max(one_run, 1e-3))))
    rc, out, _ = run([tools["xflow-run"], model, "--backend", backend, "--iters", str(iters), "--warmup", str(warmup)],
                     None)
    m = re.search(r"median " + NUM + " ms", out)
    if rc != 0 or not m:
        raise RuntimeError(last_line(out))
    return float(m.group(1))


def last_line(out):
    lines = [l for l in out.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "no output"


def bench_xflow(tools, backend, orig, opt, work, args):
    """Latency of both models on an xflow backend, and their outputs' agreement."""
    runs = {}
    for tag, model in (("original", orig), ("optimized", opt)):
        d = os.path.join(work, f"{backend}-{tag}")
        os.makedirs(d, exist_ok=True)
        rc, out, secs = run([tools["xflow-run"], model, "--backend", backend, "--output-dir", d, "-q"],
                            args.slow_limit)
        if rc is None:
            return {"note": f"skipped: one run takes over {args.slow_limit:g} s on {backend}"}
        if rc != 0:
            return {"note": f"failed: {last_line(out)}"}
        runs[tag] = (d, secs)
    err, rel = output_errors(runs["original"][0], runs["optimized"][0])
    r = {"max_abs_err": err, "max_err_rel_to_max_output": rel}
    if r["max_abs_err"] is None:
        r["note"] = "outputs differ in number or shape"
    # One run's time: the process's (load included) bounds it; below 2 s a
    # short timing says what the run itself takes, so that a millisecond
    # model gets the rounds and warm-up its speed allows.
    one_run = max(runs["original"][1], runs["optimized"][1])
    if one_run < 2.0:
        try:
            one_run = max(xflow_run_median(tools, m, backend, 5, one_run) for m in (orig, opt)) / 1e3
        except RuntimeError as e:
            r["note"] = f"failed: {e}"
            return r
    # Bounded: a slow backend gets fewer rounds and iterations, never more
    # than about --backend-budget seconds per model.  A fast model gets at
    # least about a second of timed runs per round, so that one preempted
    # run on a busy machine does not decide its median.
    rounds = 3 if one_run * 2 * 3 * 2 <= args.backend_budget else 1
    wanted = max(math.ceil(args.iters / rounds), min(200, int(1.0 / max(one_run, 1e-3))))
    per_round = max(1, min(wanted, int(args.backend_budget / (2 * rounds * one_run)) - 1))
    meds = {"original": [], "optimized": []}
    try:
        for i in range(rounds):
            order = ("original", "optimized") if i % 2 == 0 else ("optimized", "original")
            for tag in order:
                meds[tag].append(xflow_run_median(tools, orig if tag == "original" else opt, backend, per_round,
                                                  one_run))
    except RuntimeError as e:
        r["note"] = f"failed: {e}"
        return r
    r["original_ms"] = statistics.median(meds["original"])
    r["optimized_ms"] = statistics.median(meds["optimized"])
    r["speedup"] = statistics.median(o / x for o, x in zip(meds["original"], meds["optimized"]))
    r["round_ms"] = meds
    r["iters"] = rounds * per_round
    if rounds * per_round < args.iters:
        r["note"] = f"{rounds}x{per_round} runs (slow backend, bounded by --backend-budget)"
    return r


def cuda_unusable(tools, work):
    """Why the cuda backend cannot run here (no GPU, ...); None when it runs
    the bundled example."""
    probe = os.path.join(work, "cuda-probe.onnx")
    rc, out, _ = run([tools["xflow-zoo"], "inception-block", "-o", probe, "-q"], 60)
    if rc == 0:
        rc, out, _ = run([tools["xflow-run"], probe, "--backend", "cuda", "-q"], 120)
        os.remove(probe)
    # the message without the probe file's location
    return None if rc == 0 else ("timed out" if rc is None else last_line(out).replace(probe + ": ", ""))


def ort_python(args):
    # .venv-bench is at the repository root: above this file in the source
    # tree, two levels up from build/tools.
    venvs = [os.path.join(d, ".venv-bench", "bin", "python") for d in
             (os.path.join(HERE, ".."), os.path.join(HERE, "..", ".."), os.getcwd())]
    for py in [args.ort_python] if args.ort_python else venvs + [sys.executable]:
        if py and os.path.exists(py):
            rc, out, _ = run([py, "-c", "import onnxruntime, numpy; print(onnxruntime.__version__)"], 60)
            if rc == 0:
                return os.path.normpath(py), out.strip()
    return None, None


def bench_ort(py, script, orig, opt, work, args):
    rc, out, _ = run([py, script, orig, opt, work, str(args.iters), str(args.backend_budget), str(args.threads)],
                     args.backend_budget * 4)
    if rc != 0:
        return {"note": "failed: " + ("timed out" if rc is None else last_line(out))}, None
    j = json.loads(out.strip().splitlines()[-1])
    scale = j["max_abs_output"] or 1.0
    main = {"original_ms": j["median_ms"]["original"], "optimized_ms": j["median_ms"]["xflow"],
            "speedup": j["speedup"]["xflow"], "max_abs_err": j["max_abs_err"]["xflow"],
            "max_err_rel_to_max_output": j["max_abs_err"]["xflow"] / scale, "iters": j["iters"]}
    peer = {"original_ms": j["median_ms"]["original"], "optimized_ms": j["median_ms"]["ort_offline"],
            "speedup": j["speedup"]["ort_offline"], "max_abs_err": j["max_abs_err"]["ort_offline"],
            "max_err_rel_to_max_output": j["max_abs_err"]["ort_offline"] / scale, "iters": j["iters"],
            "note": "ORT's offline-optimized model vs the original"}
    return main, peer


def trt_median(model, iters):
    rc, out, _ = run(["trtexec", f"--onnx={model}", f"--iterations={iters}", "--warmUp=500"], 1200)
    m = re.search(r"GPU Compute Time:.*?median = " + NUM + " ms", out)
    if rc != 0 or not m:
        raise RuntimeError(last_line(out))
    return float(m.group(1))


def bench_trt(orig, opt, args):
    try:
        meds = [(trt_median(orig, args.iters), trt_median(opt, args.iters)) for _ in range(2)]
    except RuntimeError as e:
        return {"note": f"failed: {e}"}
    return {"original_ms": statistics.median(o for o, _ in meds), "optimized_ms": statistics.median(x for _, x in meds),
            "speedup": statistics.median(o / x for o, x in meds), "iters": args.iters}


def machine_info():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    gpu = None
    if shutil.which("nvidia-smi"):
        rc, out, _ = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], 30)
        gpu = out.strip().splitlines()[0] if rc == 0 and out.strip() else None
    return {"host": platform.node(), "os": platform.platform(), "cpu": cpu, "cores": os.cpu_count(), "gpu": gpu}


def fmt(x, spec, unit=""):
    return "n/a" if x is None else f"{x:{spec}}{unit}"


def markdown(report):
    lines = ["| model | nodes before -> after | search time | est. cost before | est. cost after | rules applied |",
             "|---|---|---|---|---|---|"]
    for m in report["models"]:
        o = m.get("optimizer", {})
        nodes = "n/a" if o.get("nodes_before") is None else f"{o['nodes_before']} -> {o['nodes_after']}"
        unit = f" {o['cost_unit']}" if o.get("cost_unit") else ""
        lines.append(f"| {m['name']} | {nodes} | {fmt(o.get('search_s'), '.3f', ' s')} | "
                     f"{fmt(o.get('cost_before'), '.4g', unit)} | {fmt(o.get('cost_after'), '.4g', unit)} | "
                     f"{fmt(o.get('rules_applied'), 'd')}"
                     f"{' (not written: slower when xflowc timed it)' if o.get('search_result_written') is False else ''} |")
    lines += ["", "| model | backend | original ms | optimized ms | speedup | max abs err | rel. to max output "
              "| note |",
              "|---|---|---|---|---|---|---|---|"]
    for m in report["models"]:
        if "skipped" in m:
            lines.append(f"| {m['name']} | - | n/a | n/a | n/a | n/a | n/a | {m['skipped']} |")
        for b, r in m["results"].items():
            err = r.get("max_abs_err")
            lines.append(f"| {m['name']} | {b} | {fmt(r.get('original_ms'), '.3f')} | "
                         f"{fmt(r.get('optimized_ms'), '.3f')} | {fmt(r.get('speedup'), '.3f', 'x')} | "
                         f"{fmt(err, '.3g')} | {fmt(r.get('max_err_rel_to_max_output'), '.2g')} | "
                         f"{r.get('note', '')} |")
    lines += ["", "| backend | present | detail |", "|---|---|---|"]
    for b in report["backends"]:
        lines.append(f"| {b['name']} | {'yes' if b['present'] else 'no'} | {b['detail']} |")
    return "\n".join(lines) + "\n"


def plot(report, out_dir):
    """PNG bar chart of speedups per model and backend; None when gnuplot is absent."""
    if not shutil.which("gnuplot"):
        return "gnuplot not found (scripts/setup.sh installs gnuplot-nox)"
    names = [b["name"] for b in report["backends"] if b["present"]]
    rows = [m for m in report["models"] if any(m["results"].get(n, {}).get("speedup") for n in names)]
    if not rows:
        return "no speedup measured"
    data = os.path.join(out_dir, "speedup.dat")
    with open(data, "w") as f:
        f.write("model " + " ".join('"' + n + '"' for n in names) + "\n")
        for m in rows:
            vals = [m["results"].get(n, {}).get("speedup") for n in names]
            f.write(m["name"] + " " + " ".join("-" if v is None else f"{v:.4f}" for v in vals) + "\n")
    script = f"""set terminal pngcairo size 1200,560 noenhanced
set output 'speedup.png'
set title 'speedup over the original model (higher is better), {report['machine']['cpu']}'
set datafile missing '-'
set style data histogram
set style histogram cluster gap 1
set style fill solid border -1
set ylabel 'speedup (x)'
set yrange [0:*]
set grid ytics
set xtics nomirror rotate by -25
set key outside bottom center horizontal
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
plot for [i=2:{len(names) + 1}] 'speedup.dat' using i:xtic(1) title columnheader(i)
"""
    # relative names, so that the committed script redraws the committed chart
    with open(os.path.join(out_dir, "speedup.gp"), "w") as f:
        f.write(script)
    rc, out, _ = run(["gnuplot", "speedup.gp"], 60, cwd=out_dir)
    return None if rc == 0 else f"gnuplot failed: {last_line(out)}"


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(prog="xflow-bench", description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ZOO), help="comma-separated zoo names (default: all)")
    ap.add_argument("--iters", type=int, default=10, help="timed runs per model and variant (default 10)")
    ap.add_argument("--time-limit", type=float, default=3600, help="seconds; models not started by then are skipped")
    ap.add_argument("--backends", default=",".join(ALL_BACKENDS), help="subset of " + ",".join(ALL_BACKENDS))
    ap.add_argument("--slow-limit", type=float, default=30,
                    help="an xflow backend whose single run exceeds this many seconds is not timed (default 30)")
    ap.add_argument("--backend-budget", type=float, default=90,
                    help="rough seconds of timed runs per model on a slow backend (default 90)")
    ap.add_argument("--out", default="bench-results", help="directory for bench.json, bench.md, speedup.png")
    ap.add_argument("--tools", default=None, help="directory with xflowc, xflow-run, xflow-zoo (default: beside "
                                                  "this program, else build/tools)")
    ap.add_argument("--ort-python", default=None, help="python with onnxruntime (default: .venv-bench, then this one)")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads per runtime: OMP_NUM_THREADS for xflow backends, intra-op threads for ORT "
                         "(default: each runtime's own choice)")
    ap.add_argument("--cost", default=None,
                    help="cost model xflowc optimizes for, e.g. analytic:h200 or cuda (default: xflowc's own)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no table on stdout")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command run")
    args = ap.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    if args.iters < 1:
        ap.error("--iters must be at least 1")
    if args.threads < 0:
        ap.error("--threads must be 0 (runtime default) or more")
    if args.threads:
        # inherited by every xflow-run (oneDNN's OpenMP) and by the ORT helper
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    wanted = args.backends.split(",")
    for b in wanted:
        if b not in ALL_BACKENDS:
            ap.error(f"unknown backend '{b}' (known: {', '.join(ALL_BACKENDS)})")
    models = args.models.split(",")

    tool_dir = args.tools or next((d for d in (HERE, os.path.join(HERE, "..", "build", "tools"))
                                   if os.path.exists(os.path.join(d, "xflowc"))), HERE)
    tools = {t: os.path.join(tool_dir, t) for t in ("xflowc", "xflow-run", "xflow-zoo")}
    for t, p in tools.items():
        if not os.access(p, os.X_OK):
            sys.exit(f"xflow-bench: {p}: not found (build xflow first, or pass --tools DIR)")
    rc, listed, _ = run([tools["xflow-zoo"], "--list"], 60)
    known = [l.split()[0] for l in listed.splitlines() if l.strip()]
    for m in models:
        if m not in known:
            sys.exit(f"xflow-bench: no zoo model named '{m}' (known: {', '.join(known)})")
    ort_script = os.path.join(HERE, "bench_ort.py")

    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    rc, out, _ = run([tools["xflow-run"], "--list-backends"], 60)
    have = out.split() if rc == 0 else []
    backends = []
    for b, enable in XFLOW_BACKENDS.items():
        present = b in have and b in wanted
        detail = "in this build" if present else ("not selected (--backends)" if b in have else
                                                 f"absent from this build: {enable}")
        if present and b == "cuda":
            why = cuda_unusable(tools, work)
            if why:
                present, detail = False, f"in this build, but not usable here: {why}"
            else:
                detail = "in this build, on " + (machine_info()["gpu"] or "a GPU nvidia-smi does not name")
        backends.append({"name": f"xflow {b}", "key": b, "present": present, "detail": detail})
    py, ort_version = ort_python(args) if "ort" in wanted else (None, None)
    # Recorded results name the interpreter by its last parts only: the
    # checkout's location says nothing about the measurement.
    py_shown = os.path.join(*py.split(os.sep)[-3:]) if py else None
    ort_detail = (f"onnxruntime {ort_version} (CPU, all graph optimizations) via {py_shown}" if py else
                  "not selected (--backends)" if "ort" not in wanted else
                  "onnxruntime not importable: run benchmarks/setup-peers.sh")
    backends.append({"name": "onnxruntime", "key": "ort", "present": bool(py), "detail": ort_detail})
    backends.append({"name": "onnxruntime offline-opt (peer)", "key": "ort-peer", "present": bool(py),
                     "detail": "ORT's own optimizer as a peer: its offline-optimized model vs the original"})
    trt = shutil.which("trtexec") if "trt" in wanted else None
    backends.append({"name": "tensorrt", "key": "trt", "present": bool(trt),
                     "detail": f"trtexec at {trt}" if trt else "not selected (--backends)" if "trt" not in wanted
                     else "trtexec not on PATH: install TensorRT (needs an NVIDIA GPU)"})

    rc, ver, _ = run([tools["xflowc"], "--version"], 60)
    report = {
        "tool": "xflow-bench",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "versions": {"xflowc": ver.strip(), "python": platform.python_version(), "onnxruntime": ort_version,
                     "gnuplot": run(["gnuplot", "--version"], 30)[1].strip() if shutil.which("gnuplot") else None},
        "method": {"iters": args.iters,
                   "warmup": "1 untimed run before each timed batch on xflow backends; 1-2 per model on ORT",
                   "statistic": "median; original and optimized alternated; speedup = median of per-round "
                                "original/optimized ratios",
                   "xflowc_cost_model": args.cost or "xflowc's default",
                   "slow_limit_s": args.slow_limit, "backend_budget_s": args.backend_budget,
                   "threads": args.threads or "each runtime's default (all cores)"},
        "backends": backends,
        "models": [],
    }
    t_start = time.monotonic()
    for i, name in enumerate(models):
        entry = {"name": name, "results": {}}
        report["models"].append(entry)
        if time.monotonic() - t_start > args.time_limit:
            entry["skipped"] = f"time limit ({args.time_limit:g} s) reached"
            progress(f"[{i + 1}/{len(models)}] {name}: skipped, time limit reached")
            continue
        progress(f"[{i + 1}/{len(models)}] {name}: writing and optimizing")
        orig, opt = os.path.join(work, f"{name}.onnx"), os.path.join(work, f"{name}.opt.onnx")
        rc, out, _ = run([tools["xflow-zoo"], name, "-o", orig, "-q"], 600)
        if rc != 0:
            entry["skipped"] = f"xflow-zoo failed: {last_line(out)}"
            continue
        entry["file_bytes"] = os.path.getsize(orig)
        rc, out, secs = run([tools["xflowc"], orig, "-o", opt] + (["--cost", args.cost] if args.cost else []),
                            1800)
        entry["optimizer"] = parse_xflowc(out)
        entry["optimizer"]["xflowc_wall_s"] = round(secs, 3)
        if rc != 0:
            entry["skipped"] = f"xflowc failed: {last_line(out)}"
            continue
        mwork = os.path.join(work, name)
        os.makedirs(mwork, exist_ok=True)
        for b in backends:
            if not b["present"] or b["key"] == "ort-peer":
                continue
            if time.monotonic() - t_start > args.time_limit:
                entry["results"][b["name"]] = {"note": "skipped: time limit reached"}
                continue
            progress(f"[{i + 1}/{len(models)}] {name}: {b['name']}")
            if b["key"] in XFLOW_BACKENDS:
                entry["results"][b["name"]] = bench_xflow(tools, b["key"], orig, opt, mwork, args)
            elif b["key"] == "ort":
                main_r, peer_r = bench_ort(py, ort_script, orig, opt, mwork, args)
                entry["results"]["onnxruntime"] = main_r
                if peer_r:
                    entry["results"]["onnxruntime offline-opt (peer)"] = peer_r
            elif b["key"] == "trt":
                entry["results"]["tensorrt"] = bench_trt(orig, opt, args)
        done = [f"{k} {r['speedup']:.2f}x" for k, r in entry["results"].items() if r.get("speedup")]
        progress(f"[{i + 1}/{len(models)}] {name}: done ({', '.join(done) or 'no timing'})")
        for f in (orig, opt):
            os.remove(f)
    report["plot"] = plot(report, args.out) or "speedup.png"
    report["elapsed_s"] = round(time.monotonic() - t_start, 1)
    for b in report["backends"]:
        del b["key"]
    table = markdown(report)
    write_atomic(os.path.join(args.out, "bench.json"), json.dumps(report, indent=2, allow_nan=False) + "\n")
    m = report["machine"]
    write_atomic(os.path.join(args.out, "bench.md"),
                 f"xflow-bench, {report['date']}, {m['cpu']} ({m['cores']} cores)\n\n" + table)
    shutil.rmtree(work, ignore_errors=True)
    if not args.quiet:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
