#!/usr/bin/env python3
"""End-to-end test of `tessera serve` as a process, from a Python grpcio client.

Starts the real binary on 127.0.0.1 with OS-picked ports (read from its stdout), then checks,
with the example client in tools/python_client (Debian python3-grpcio, stubs compiled now):
  * grpc.health.v1 liveness and readiness, server reflection listing, GetModelInfo, Tokenize;
  * greedy streaming of the real stories260K model equals llama.cpp's reference text, and
    `tessera generate --server` prints the same text; `tessera health` exits 0 / 1;
  * a bad request is INVALID_ARGUMENT naming the field, and the server keeps serving;
  * /metrics, /healthz, /readyz on the HTTP port; `promtool check metrics` when installed;
  * SIGTERM while streams are mid-generation: readiness NOT_SERVING, /readyz "draining", new
    requests UNAVAILABLE, every in-flight stream completes with all its tokens, exit code 0;
  * with --api_key_file: Generate and reflection need the key, health does not.
Exit 0 on success, 77 (ctest SKIP_RETURN_CODE) when python3-grpcio or protoc is missing.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "python_client"))

try:
    import grpc  # noqa: E402
    import tessera_client  # noqa: E402
except ImportError as e:  # pragma: no cover
    print("SKIP: %s (install python3-grpcio)" % e)
    sys.exit(77)

FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


class Server:
    """A `tessera serve` child process; ports parsed from its stdout."""

    def __init__(self, binary, extra_args, log_path, threads=2):
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--grpc_address", "127.0.0.1:0", "--http_address", "127.0.0.1:0",
             "--threads", str(threads)] + extra_args,
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.grpc = self.http = None
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("grpc listening on "):
                self.grpc = line.split()[-1]
            elif line.startswith("http listening on "):
                self.http = line.split()[-1]
            elif line.strip() == "ready":
                break
        if self.grpc is None or self.proc.poll() is not None:
            raise RuntimeError("server did not start; see " + log_path)
        # Keep draining stdout so the child never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def get(self, path):
        try:
            with urllib.request.urlopen("http://%s%s" % (self.http, path), timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        finally:
            self.log.close()


def code_of(fn):
    try:
        fn()
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details()


def main_checks(args, stubs, work):
    model_args = ["--model", args.model] if args.model else []
    srv = Server(args.tessera, model_args + ["--max_new_tokens", "1024"],
                 os.path.join(work, "serve.log"))
    c = tessera_client.TesseraClient(srv.grpc, stubs=stubs)
    pb = c.pb
    check(c.health("") == "SERVING", "health '' is SERVING")
    check(c.health("tessera.v1.Generation") == "SERVING", "readiness is SERVING")
    check(code_of(lambda: c.health("nope"))[0] == grpc.StatusCode.NOT_FOUND,
          "unknown health service is NOT_FOUND")
    services = c.list_services()
    check("tessera.v1.Generation" in services and "grpc.health.v1.Health" in services,
          "reflection lists tessera.v1.Generation and grpc.health.v1.Health: %s" % services)
    info = c.model_info()
    check(info.is_demo == (not args.model), "ModelInfo.is_demo = %s" % info.is_demo)
    check(len(info.precision_plan) > 0 and info.precision_plan[-1].module == "lm_head",
          "ModelInfo has the precision plan (%d rows)" % len(info.precision_plan))
    check(info.limits.max_new_tokens == 1024, "ModelInfo.limits.max_new_tokens = 1024")
    ids = list(c.tokenize("Once upon a time").token_ids)
    check(len(ids) >= 2 and c.detokenize(ids, skip_special_tokens=True) == "Once upon a time",
          "Tokenize/Detokenize round trip")

    # Greedy generation; with stories260K the reference is llama.cpp's.
    prompt = "Once upon a time"
    req = c.request(prompt, max_new_tokens=64, temperature=0)
    text, ids, last = c.generate_text(req, timeout=60)
    check(last.finish_reason in (pb.FINISH_REASON_LENGTH, pb.FINISH_REASON_EOS),
          "stream finished: %s" % pb.FinishReason.Name(last.finish_reason))
    check(last.usage.completion_tokens == len(ids), "usage.completion_tokens = %d" % len(ids))
    if args.model and args.reference:
        with open(args.reference) as f:
            ref = json.load(f)["results"][0]
        check(ref["prompt"] == prompt and ids == ref["generated_ids"],
              "greedy tokens equal llama.cpp's reference")
        check(text == ref["generated_text"], "greedy text equals llama.cpp's reference")
    cli = subprocess.run([args.tessera, "generate", "--server", srv.grpc, "--prompt", prompt,
                          "--max_new_tokens", "64", "--temperature", "0"],
                         capture_output=True, text=True, timeout=60)
    check(cli.returncode == 0 and cli.stdout == text + "\n",
          "`tessera generate --server` prints the same text (rc %d)" % cli.returncode)
    for service, want in (("", 0), ("tessera.v1.Generation", 0), ("nope", 1)):
        rc = subprocess.run([args.tessera, "health", "--server", srv.grpc, "--service", service],
                            capture_output=True, timeout=30).returncode
        check(rc == want, "`tessera health --service '%s'` exits %d" % (service, want))

    # Bad requests name the field; the server keeps serving.
    bad = c.request(prompt, max_new_tokens=4)
    bad.sampling.top_p = 1.5
    code, details = code_of(lambda: c.generate_text(bad))
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "sampling.top_p" in details,
          "top_p 1.5 is INVALID_ARGUMENT naming sampling.top_p: %s" % details)
    code, details = code_of(lambda: c.generate_text(c.request(token_ids=[1, 10 ** 6])))
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "token_ids.ids[1]" in details,
          "unknown token id is INVALID_ARGUMENT naming token_ids.ids[1]: %s" % details)
    check(c.generate_text(c.request(prompt, max_new_tokens=3, temperature=0))[2] is not None,
          "still serving after bad requests")

    # HTTP side port.
    status, body = srv.get("/healthz")
    check(status == 200, "/healthz 200")
    status, body = srv.get("/readyz")
    check(status == 200, "/readyz 200")
    status, metrics = srv.get("/metrics")
    check(status == 200 and 'tessera_requests_total{code="OK"} 3' in metrics,
          "/metrics counts 3 OK Generate RPCs (python 1 + cli 1 + 1)")
    check('tessera_requests_total{code="INVALID_ARGUMENT"} 2' in metrics,
          "/metrics counts 2 INVALID_ARGUMENT")
    if shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=metrics, text=True,
                           capture_output=True)
        check(p.returncode == 0, "promtool check metrics: %s" % (p.stdout + p.stderr).strip())
    else:
        print("skip  promtool not installed (Debian package prometheus)")

    # Close the client's connection first: while an idle client connection is open, shutdown
    # waits out the server's whole 5 s grace period.
    c.channel.close()
    rc = srv.stop()
    check(rc == 0, "server exits 0 after SIGTERM (rc %s)" % rc)


def drain_checks(args, stubs, work):
    """SIGTERM while streams are mid-generation: readiness goes NOT_SERVING, /readyz says
    "draining", a new request is UNAVAILABLE, every in-flight stream still completes with all its
    tokens, and the process exits 0.

    The streams must still be generating when the drain starts, or the test proves nothing. One
    1000-token stream of the demo model takes ~0.1 s, so the server gets more work than that: 8
    concurrent streams with long token-id prompts on one thread (~2 s on a fast machine; only
    longer on a loaded one), and SIGTERM goes out once every stream has its first chunk, i.e.
    all 8 are admitted and decoding. The checks then confirm that the drain overlapped them
    (none had finished when readiness was seen NOT_SERVING) instead of assuming it."""
    model_args = ["--model", args.model] if args.model else []
    n_streams = 8
    # stories260K is ~3x slower per token than the demo; both give ~2 s of work.
    n_prompt = n_new = 500 if args.model else 1000
    srv = Server(args.tessera, model_args + ["--max_running", "16", "--max_new_tokens", "1024"],
                 os.path.join(work, "serve_drain.log"), threads=1)
    c = tessera_client.TesseraClient(srv.grpc, stubs=stubs)
    pb = c.pb
    # Token ids, not text: the same length whatever the tokenizer (ids < both vocabularies).
    prompt_ids = [3 + (i % 200) for i in range(n_prompt)]
    results = [None] * n_streams  # (token count, last message, error)
    first_chunk = [threading.Event() for _ in range(n_streams)]
    done = [threading.Event() for _ in range(n_streams)]

    def consume(i):
        n, last, err = 0, None, None
        try:
            req = c.request(token_ids=prompt_ids, max_new_tokens=n_new, temperature=0,
                            ignore_eos=True, request_id="drain-%d" % i)
            for chunk in c.generate(req, timeout=120):
                n += len(chunk.token_ids)
                last = chunk
                first_chunk[i].set()
        except grpc.RpcError as e:
            err = "%s: %s" % (e.code(), e.details())
        results[i] = (n, last, err)
        first_chunk[i].set()
        done[i].set()

    threads = [threading.Thread(target=consume, args=(i,), daemon=True)
               for i in range(n_streams)]
    for t in threads:
        t.start()
    started = all(e.wait(60) for e in first_chunk)
    check(started and not any(e.is_set() for e in done),
          "drain: all %d streams are mid-generation before SIGTERM" % n_streams)

    srv.proc.send_signal(signal.SIGTERM)
    readiness = None
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            readiness = c.health("tessera.v1.Generation", timeout=2)
        except grpc.RpcError as e:
            readiness = "error %s" % e.code()  # the port already closed: the drain ended
            break
        if readiness == "NOT_SERVING":
            break
        time.sleep(0.005)
    unfinished = sum(not e.is_set() for e in done)
    check(readiness == "NOT_SERVING", "drain: readiness goes NOT_SERVING (%s)" % readiness)
    check(unfinished == n_streams,
          "drain: overlapped the streams (%d of %d unfinished at NOT_SERVING)" % (
              unfinished, n_streams))
    if unfinished:
        status, body = srv.get("/readyz")
        check(status == 503 and body.strip() == "draining",
              "drain: /readyz is 503 draining (%d %r)" % (status, body))
        code, details = code_of(lambda: c.generate_text(c.request("late", max_new_tokens=2)))
        check(code == grpc.StatusCode.UNAVAILABLE,
              "drain: a new request is UNAVAILABLE (%s: %s)" % (code, details))
    check(0 < sum(not e.is_set() for e in done),
          "drain: streams still in flight after those checks")

    for t in threads:
        t.join(120)
    for i, (n, last, err) in enumerate(results):
        reason = pb.FinishReason.Name(last.finish_reason) if last is not None else None
        check(err is None and n == n_new and reason == "FINISH_REASON_LENGTH"
              and last.usage.completion_tokens == n_new,
              "drain: stream %d completed: %d tokens, %s%s" % (
                  i, n, reason, "" if err is None else ", " + err))
    c.channel.close()
    rc = srv.stop()
    check(rc == 0, "drained server exits 0 after SIGTERM (rc %s)" % rc)


def auth_checks(args, stubs, work):
    key_file = os.path.join(work, "api_keys")
    with open(key_file, "w") as f:
        f.write("# test key\nk3y-for-tests\n")
    srv = Server(args.tessera, ["--api_key_file", key_file], os.path.join(work, "serve_auth.log"))
    anon = tessera_client.TesseraClient(srv.grpc, stubs=stubs)
    keyed = tessera_client.TesseraClient(srv.grpc, api_key="k3y-for-tests", stubs=stubs)
    wrong = tessera_client.TesseraClient(srv.grpc, api_key="nope", stubs=stubs)
    req = anon.request("hi", max_new_tokens=3, temperature=0)
    check(code_of(lambda: anon.generate_text(req))[0] == grpc.StatusCode.UNAUTHENTICATED,
          "auth: no key is UNAUTHENTICATED")
    check(code_of(lambda: wrong.generate_text(req))[0] == grpc.StatusCode.UNAUTHENTICATED,
          "auth: wrong key is UNAUTHENTICATED")
    check(code_of(lambda: keyed.generate_text(req))[0] == grpc.StatusCode.OK,
          "auth: right key is OK")
    check(anon.health("tessera.v1.Generation") == "SERVING", "auth: health needs no key")
    check(code_of(anon.list_services)[0] != grpc.StatusCode.OK,
          "auth: reflection without a key is refused")
    check("tessera.v1.Generation" in keyed.list_services(), "auth: reflection with the key")
    for client in (anon, keyed, wrong):
        client.channel.close()
    check(srv.stop() == 0, "auth server exits 0")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tessera", required=True, help="the tessera binary")
    p.add_argument("--model", default="", help="model path (default: the demo)")
    p.add_argument("--reference", default="", help="stories260K-greedy.json")
    args = p.parse_args()
    if args.model and not os.path.exists(args.model):
        print("SKIP: %s not found" % args.model)
        return 77
    if not (shutil.which("protoc") and shutil.which("grpc_python_plugin")):
        try:
            import grpc_tools  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        except ImportError:
            print("SKIP: neither protoc+grpc_python_plugin nor grpc_tools is available")
            return 77
    work = tempfile.mkdtemp(prefix="tessera_pytest_")
    stubs = tessera_client.build_stubs(os.path.join(work, "stubs"))
    main_checks(args, stubs, work)
    drain_checks(args, stubs, work)
    auth_checks(args, stubs, work)
    if FAILURES:
        print("%d check(s) failed; server logs in %s" % (len(FAILURES), work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
