#!/usr/bin/env python3
# python3 scripts/lsp-stdio-bench.py target/release/computeguard  (docs/benchmarks.md, 17)
# Drives `computeguard lsp` over stdio: opens a 540-line manifest (the Deployment of
# examples/kubernetes/inference-on-infiniband.yaml repeated, as the lsp_keystroke example
# builds it), changes it 50 times, then reads the server's VmRSS/VmHWM from /proc.
import json, subprocess, sys, time, os, tempfile
bin_ = sys.argv[1]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
job = open(os.path.join(root, "examples/kubernetes/inference-on-infiniband.yaml")).read()
text, i = "", 0
while len(text.splitlines()) < 500:
    text += f"# job {i}\n---\n" + job.replace("name: ", f"name: j{i}-")
    i += 1
manifest = os.path.join(tempfile.mkdtemp(), "jobs.yaml")
open(manifest, "w").write(text)
p = subprocess.Popen([bin_, "lsp", "--as-of", "2026-11-22"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m):
    b = json.dumps(m).encode(); p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b); p.stdin.flush()
def recv():
    n = 0
    while True:
        l = p.stdout.readline()
        if l in (b"\r\n", b""): break
        if l.lower().startswith(b"content-length:"): n = int(l.split(b":")[1])
    return json.loads(p.stdout.read(n))
def diags():
    while True:
        m = recv()
        if m.get("method") == "textDocument/publishDiagnostics": return m["params"]["diagnostics"]
send({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"initializationOptions":{"debounceMs":0}}}); recv()
send({"jsonrpc":"2.0","method":"initialized","params":{}})
text = open(manifest).read(); uri = "file://" + manifest
send({"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":uri,"languageId":"yaml","version":1,"text":text}}})
d = diags(); times = []
for v in range(50):
    t = time.perf_counter()
    send({"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":uri,"version":v+2},"contentChanges":[{"text":text.replace("# job 0", "# job 0 " + "x"*v, 1)}]}})
    diags(); times.append((time.perf_counter()-t)*1000)
st = open(f"/proc/{p.pid}/status").read().splitlines()
rss = [l for l in st if l.startswith(("VmRSS", "VmHWM"))]
times.sort()
print(f"{len(text.splitlines())} lines, {len(d)} diagnostics; didChange->publishDiagnostics median {times[25]:.1f} ms, max {times[-1]:.1f} ms; server {' '.join(' '.join(r.split()) for r in rss)}")
send({"jsonrpc":"2.0","id":2,"method":"shutdown","params":None}); recv(); send({"jsonrpc":"2.0","method":"exit","params":None}); p.wait()
