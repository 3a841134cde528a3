// The `tessera` binary: one executable, one subcommand per job.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "usage: tessera <command> [flags]\n"
               "commands:\n"
               "  inspect PATH      tensors and metadata of a safetensors file, HF directory or GGUF\n"
               "  generate          stream a continuation (--model PATH or --server ADDR)\n"
               "  perplexity        llama.cpp-style perplexity of a text file\n"
               "  serve             serve a model over gRPC (no --model: the built-in demo)\n"
               "  health            check a server's grpc.health.v1 status (exit 0 = SERVING)\n"
               "  synth             write a random-weight GGUF of a real model shape\n"
               "  bench             prefill/decode throughput and peak RSS at several batch sizes\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage();
    return 2;
  }
  const std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "inspect") return tessera::cli::RunInspect(args);
  if (command == "generate") return tessera::cli::RunGenerate(args);
  if (command == "perplexity") return tessera::cli::RunPerplexity(args);
  if (command == "serve") return tessera::cli::RunServe(args);
  if (command == "health") return tessera::cli::RunHealth(args);
  if (command == "synth") return tessera::cli::RunSynth(args);
  if (command == "bench") return tessera::cli::RunBench(args);
  if (command == "--help" || command == "help" || command == "-h") {
    Usage();
    return 0;
  }
  std::fprintf(stderr, "unknown command '%s'\n", command.c_str());
  Usage();
  return 2;
}
