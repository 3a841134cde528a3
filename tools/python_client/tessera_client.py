#!/usr/bin/env python3
"""A small Python client for a tessera server (tessera.v1.Generation over gRPC).

Works with Debian's python3-grpcio and python3-protobuf (no PyPI). The Python stubs are compiled
at run time into a cache directory from the repository's proto/ and from grpc.health.v1 /
grpc.reflection.v1alpha protos (Debian package grpc-proto), with the system protoc and
grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc). grpc_tools.protoc is the
fallback; Debian's python3-grpc-tools (1.14) is too old for proto3 `optional`, PyPI's works.

Example:
    python3 tools/python_client/tessera_client.py --address 127.0.0.1:50051 \
        --prompt "Once upon a time" --max_new_tokens 64 --temperature 0
"""

import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

import grpc

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GRPC_PROTO_DIR = "/usr/share/grpc-proto"
# The standard protos are copied under this package so their Python modules do not collide with
# the grpcio package itself (both would be "grpc.*"). Their proto packages are unchanged.
STD_PKG = "tessera_grpc_std"


def build_stubs(out_dir=None, proto_dir=None):
    """Compiles the protos into out_dir (a temp dir by default), puts it on sys.path, and returns
    (generation_pb2, generation_pb2_grpc, health_pb2, health_pb2_grpc, reflection_pb2,
    reflection_pb2_grpc)."""
    out_dir = out_dir or tempfile.mkdtemp(prefix="tessera_py_")
    proto_dir = proto_dir or os.path.join(REPO, "proto")
    src = os.path.join(out_dir, "src")
    std = os.path.join(src, STD_PKG)
    os.makedirs(std, exist_ok=True)
    shutil.copy(os.path.join(GRPC_PROTO_DIR, "grpc/health/v1/health.proto"), std)
    shutil.copy(os.path.join(GRPC_PROTO_DIR, "grpc/reflection/v1alpha/reflection.proto"), std)
    files = [os.path.join(proto_dir, "tessera/v1/generation.proto"),
             os.path.join(std, "health.proto"), os.path.join(std, "reflection.proto")]
    args = ["-I" + proto_dir, "-I" + src, "--python_out=" + out_dir,
            "--grpc_python_out=" + out_dir] + files
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        subprocess.run([protoc, "--plugin=protoc-gen-grpc_python=" + plugin] + args, check=True)
    else:
        from grpc_tools import protoc as grpc_protoc  # pylint: disable=import-outside-toplevel
        if grpc_protoc.main(["protoc"] + args) != 0:
            raise RuntimeError("grpc_tools.protoc failed")
    for d in (os.path.join(out_dir, "tessera"), os.path.join(out_dir, "tessera", "v1"),
              os.path.join(out_dir, STD_PKG)):
        open(os.path.join(d, "__init__.py"), "a").close()
    if out_dir not in sys.path:
        sys.path.insert(0, out_dir)
    names = ["tessera.v1.generation_pb2", "tessera.v1.generation_pb2_grpc",
             STD_PKG + ".health_pb2", STD_PKG + ".health_pb2_grpc",
             STD_PKG + ".reflection_pb2", STD_PKG + ".reflection_pb2_grpc"]
    return tuple(importlib.import_module(n) for n in names)


class TesseraClient:
    """Thin wrapper: one channel, the Generation, Health and reflection stubs, the API key."""

    def __init__(self, address, api_key=None, root_cert=None, server_name=None, stubs=None):
        (self.pb, pb_grpc, self.health_pb, health_grpc, self.refl_pb,
         refl_grpc) = stubs or build_stubs()
        if root_cert:
            options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
            self.channel = grpc.secure_channel(
                address, grpc.ssl_channel_credentials(root_certificates=root_cert), options)
        else:
            self.channel = grpc.insecure_channel(address)
        self.metadata = [("authorization", "Bearer " + api_key)] if api_key else []
        self.generation = pb_grpc.GenerationStub(self.channel)
        self.health_stub = health_grpc.HealthStub(self.channel)
        self.reflection = refl_grpc.ServerReflectionStub(self.channel)

    def request(self, prompt=None, token_ids=None, max_new_tokens=None, temperature=None,
                top_k=None, top_p=None, seed=None, stop=(), ignore_eos=False, logprobs=None,
                request_id=""):
        """A GenerateRequest from keyword arguments (None = the server's default)."""
        r = self.pb.GenerateRequest(request_id=request_id)
        if token_ids is not None:
            r.token_ids.ids.extend(token_ids)
        else:
            r.text = prompt
        for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p),
                            ("seed", seed)):
            if value is not None:
                setattr(r.sampling, name, value)
        if max_new_tokens is not None:
            r.stopping.max_new_tokens = max_new_tokens
        r.stopping.stop_strings.extend(stop)
        r.stopping.ignore_eos = ignore_eos
        if logprobs is not None:
            r.logprobs.enabled = True
            r.logprobs.top_logprobs = logprobs
        return r

    def generate(self, request, timeout=None):
        """Yields GenerateResponse messages; raises grpc.RpcError on failure."""
        return self.generation.Generate(request, timeout=timeout, metadata=self.metadata)

    def generate_text(self, request, timeout=None):
        """(text, token_ids, last message)."""
        text, ids, last = [], [], None
        for chunk in self.generate(request, timeout):
            text.append(chunk.text)
            ids.extend(chunk.token_ids)
            last = chunk
        return "".join(text), ids, last

    def tokenize(self, text, add_special_tokens=True):
        return self.generation.Tokenize(
            self.pb.TokenizeRequest(text=text, add_special_tokens=add_special_tokens),
            metadata=self.metadata)

    def detokenize(self, ids, skip_special_tokens=False):
        return self.generation.Detokenize(
            self.pb.DetokenizeRequest(token_ids=ids, skip_special_tokens=skip_special_tokens),
            metadata=self.metadata).text

    def model_info(self):
        return self.generation.GetModelInfo(self.pb.GetModelInfoRequest(), metadata=self.metadata)

    def health(self, service="", timeout=5):
        """'SERVING', 'NOT_SERVING', ...; raises grpc.RpcError (NOT_FOUND for unknown services)."""
        resp = self.health_stub.Check(self.health_pb.HealthCheckRequest(service=service),
                                      timeout=timeout)
        return self.health_pb.HealthCheckResponse.ServingStatus.Name(resp.status)

    def list_services(self, timeout=5):
        """Service names via server reflection."""
        req = self.refl_pb.ServerReflectionRequest(list_services="")
        for resp in self.reflection.ServerReflectionInfo(iter([req]), timeout=timeout,
                                                         metadata=self.metadata):
            return sorted(s.name for s in resp.list_services_response.service)
        return []


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--address", default="127.0.0.1:50051")
    p.add_argument("--prompt", default="Once upon a time")
    p.add_argument("--max_new_tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int)
    p.add_argument("--api_key_file")
    p.add_argument("--tls_ca", help="PEM CA certificate: connect with TLS")
    p.add_argument("--info", action="store_true", help="print GetModelInfo and exit")
    a = p.parse_args()
    api_key = None
    if a.api_key_file:
        with open(a.api_key_file) as f:
            api_key = next(l.strip() for l in f if l.strip() and not l.startswith("#"))
    root = open(a.tls_ca, "rb").read() if a.tls_ca else None
    client = TesseraClient(a.address, api_key=api_key, root_cert=root)
    if a.info:
        print(client.model_info())
        return 0
    last = None
    for chunk in client.generate(client.request(a.prompt, max_new_tokens=a.max_new_tokens,
                                                temperature=a.temperature, seed=a.seed)):
        sys.stdout.write(chunk.text)
        sys.stdout.flush()
        last = chunk
    print()
    if last is not None:
        print("finish: %s, %d prompt + %d completion tokens, %.3f s" % (
            client.pb.FinishReason.Name(last.finish_reason), last.usage.prompt_tokens,
            last.usage.completion_tokens, last.timings.total_seconds), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
