// Runs a libFuzzer target over files and directories given on the command line (the committed
// fixtures and the real models), so every CI build exercises the fuzz targets with gcc too;
// clang builds with -DTESSERA_BUILD_FUZZERS=ON link the real libFuzzer instead.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void RunFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.size() > (8u << 20)) return;  // big model files add nothing a fuzzer would
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  // Every prefix shorter than 512 bytes as well: truncated headers are the classic crash.
  for (size_t n = 0; n < std::min<size_t>(bytes.size(), 512); n += 7) {
    LLVMFuzzerTestOneInput(bytes.data(), n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path root(argv[i]);
    if (std::filesystem::is_directory(root)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        if (e.is_regular_file()) {
          RunFile(e.path());
          ++files;
        }
      }
    } else if (std::filesystem::exists(root)) {
      RunFile(root);
      ++files;
    }
  }
  std::printf("ran %d corpus files\n", files);
  return files > 0 ? 0 : 1;
}
