// A small synthesized Hugging Face bf16 checkpoint (2 llama layers, hidden 256, 4 / 2 heads of 64,
// ffn 384, vocab 320) written once per test process into the process's own directory under the
// test temp dir and removed at exit: ctest runs every case of a suite as its own process, in
// parallel, so one shared path could be read by one case while another rewrites it.
#ifndef TESSERA_TESTS_ENGINE_RUNTIME_SMALL_SYNTH_HF_DIR_H_
#define TESSERA_TESTS_ENGINE_RUNTIME_SMALL_SYNTH_HF_DIR_H_

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "engine/model/synth_model.h"
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

// The checkpoint `name` (its model name and directory) with weights from `seed`, written on the
// first call; one name per test binary.
inline std::string SmallSynthHfDir(const std::string& name, uint32_t seed) {
  static const ProcessTempDir dir(name);
  static const bool written = [&] {
    model::SynthShape s;
    s.name = name;
    s.arch = "llama";
    s.hidden = 256, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 384;
    s.vocab = 320, s.context = 128;
    model::SynthOptions o;
    o.seed = seed;
    const absl::Status st = model::WriteSynthHfDir(s, o, dir.path());
    EXPECT_TRUE(st.ok()) << st;
    return st.ok();
  }();
  EXPECT_TRUE(written);
  return dir.path();
}

}  // namespace tessera::runtime

#endif  // TESSERA_TESTS_ENGINE_RUNTIME_SMALL_SYNTH_HF_DIR_H_
