#!/usr/bin/env python3
"""Static checks of deploy/: the image builds with CI's commands, the manifests parse and agree
with what the server actually does (ports, health service names, metric names). No container
engine exists on the build machines, so this is what can be checked without one; see
deploy/README.md. Exit 0 = pass, 1 = fail, 77 = skipped (python3-yaml missing)."""

import os
import re
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml not installed")
    sys.exit(77)

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def dockerfile_instructions(text):
    """(instruction, argument) pairs with line continuations joined and comments dropped."""
    out, cur = [], ""
    for line in text.splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def main():
    # The Dockerfile runs the same scripts as CI (.ci/run -> tools/test.sh -> setup.sh, build.sh).
    ci = read(".ci/run") + read("tools/test.sh")
    check("tools/test.sh" in read(".ci/run"), ".ci/run runs tools/test.sh")
    for script in ("./tools/setup.sh", "./tools/build.sh"):
        check(script in ci, "CI runs %s" % script)
    ins = dockerfile_instructions(read("deploy/Dockerfile"))
    runs = [a for i, a in ins if i == "RUN"]
    check(any(re.search(r"(^|&& |\s)\./tools/setup\.sh(\s|$)", r) for r in runs),
          "Dockerfile RUNs ./tools/setup.sh")
    check(any(re.search(r"\./tools/build\.sh", r) for r in runs), "Dockerfile RUNs ./tools/build.sh")
    check(not any("cmake " in r or "ninja " in r for r in runs),
          "Dockerfile builds only through tools/build.sh (no cmake/ninja of its own)")
    froms = [a for i, a in ins if i == "FROM"]
    check(len(froms) >= 2 and " AS builder" in froms[0] and " AS runtime" in froms[-1],
          "multi-stage: builder then runtime (%s)" % froms)
    runtime = ins[[k for k, (i, _) in enumerate(ins) if i == "FROM"][-1]:]
    users = [a for i, a in runtime if i == "USER"]
    check(users and users[-1] not in ("root", "0"), "runtime runs as non-root (%s)" % users)
    expose = " ".join(a for i, a in runtime if i == "EXPOSE").split()
    check("50051" in expose and "9090" in expose, "EXPOSE 50051 9090")
    hc = [a for i, a in runtime if i == "HEALTHCHECK"]
    check(hc and '"tessera", "health"' in hc[0], "HEALTHCHECK runs `tessera health`")
    check(any("/models" in a for i, a in runtime if i == "VOLUME"), "VOLUME /models")
    check(any(i == "COPY" and "--from=builder" in a for i, a in runtime),
          "runtime copies the binary from the builder")

    # Every YAML parses.
    docs = {}
    for rel in ("deploy/docker-compose.yml", "deploy/prometheus.yml", "deploy/k8s/deployment.yaml",
                "deploy/k8s/service.yaml", "deploy/k8s/hpa.yaml",
                "deploy/k8s/prometheus-adapter-rules.yaml"):
        try:
            docs[rel] = yaml.safe_load(read(rel))
            check(isinstance(docs[rel], dict), "%s parses" % rel)
        except (yaml.YAMLError, OSError) as e:
            check(False, "%s parses: %s" % (rel, e))
    if FAILURES:
        return 1

    # Kubernetes probes: the gRPC port and the health service names the server registers.
    server_cc = read("server/server.h")
    check('kGenerationServiceName[] = "tessera.v1.Generation"' in server_cc,
          "server registers readiness as tessera.v1.Generation")
    dep = docs["deploy/k8s/deployment.yaml"]
    pod = dep["spec"]["template"]
    c = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(ports == {"grpc": 50051, "http": 9090}, "container ports grpc 50051, http 9090")
    check(c["livenessProbe"]["grpc"] == {"port": 50051, "service": ""},
          "liveness: grpc probe on service ''")
    check(c["readinessProbe"]["grpc"] == {"port": 50051, "service": "tessera.v1.Generation"},
          "readiness: grpc probe on tessera.v1.Generation")
    check(c["resources"]["limits"].get("nvidia.com/gpu") == 1, "requests one GPU")
    ann = pod["metadata"]["annotations"]
    check(ann.get("prometheus.io/port") == "9090" and ann.get("prometheus.io/path") == "/metrics",
          "scrape annotations point at :9090/metrics")
    check(pod["spec"]["terminationGracePeriodSeconds"] > 30, "grace period > default drain")
    svc = docs["deploy/k8s/service.yaml"]
    check({p["port"] for p in svc["spec"]["ports"]} == {50051, 9090}, "Service ports")
    prom = docs["deploy/prometheus.yml"]
    targets = prom["scrape_configs"][0]["static_configs"][0]["targets"]
    check(targets == ["tessera:9090"] and prom["scrape_configs"][0]["metrics_path"] == "/metrics",
          "prometheus.yml scrapes tessera:9090/metrics")
    compose = docs["deploy/docker-compose.yml"]["services"]
    check("tessera" in compose and "prometheus" in compose, "compose has tessera and prometheus")
    check(compose["tessera"]["build"]["dockerfile"] == "deploy/Dockerfile", "compose builds it")

    # Metric names used by deploy files exist in the server's catalog.
    catalog = set(re.findall(r"^//\s+(tessera_[a-z_]+)", read("server/metrics.h"), re.M))
    hpa = docs["deploy/k8s/hpa.yaml"]
    used = {m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"]}
    used |= set(re.findall(r"tessera_[a-z_]+", read("deploy/k8s/prometheus-adapter-rules.yaml")))
    check(used and used <= catalog, "HPA/adapter metrics %s are in the catalog" % sorted(used))
    check("tessera_requests_waiting" in used, "HPA scales on tessera_requests_waiting")

    print("%d failure(s)" % len(FAILURES) if FAILURES else "all deploy checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
