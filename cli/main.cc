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
               "  inspect PATH    tensors and metadata of a safetensors file, HF directory or GGUF\n");
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
  if (command == "--help" || command == "help" || command == "-h") {
    Usage();
    return 0;
  }
  std::fprintf(stderr, "unknown command '%s'\n", command.c_str());
  Usage();
  return 2;
}
