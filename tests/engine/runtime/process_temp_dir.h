// A test process's own directory under the test temp dir, removed at exit: ctest runs every case
// of a suite as its own process, in parallel, so a fixture written to one shared path (a
// synthesized checkpoint) could be read by one case while another rewrites it.
#ifndef TESSERA_TESTS_ENGINE_RUNTIME_PROCESS_TEMP_DIR_H_
#define TESSERA_TESTS_ENGINE_RUNTIME_PROCESS_TEMP_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace tessera::runtime {

class ProcessTempDir {
 public:
  // TempDir()/name_<pid>, not created here.
  explicit ProcessTempDir(const std::string& name)
      : path_(::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid())) {}
  ~ProcessTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ProcessTempDir(const ProcessTempDir&) = delete;
  ProcessTempDir& operator=(const ProcessTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_TESTS_ENGINE_RUNTIME_PROCESS_TEMP_DIR_H_
