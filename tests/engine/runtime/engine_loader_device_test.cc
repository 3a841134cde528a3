// EngineOptions::device: parsing, and what `cuda:0` gives in each build — UNIMPLEMENTED without
// the CUDA backend, UNAVAILABLE ("no CUDA device: ...") where it is compiled but no device
// answers, a CUDA decoder where one does. "cpu" keeps loading the CPU decoder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/runtime/engine_loader.h"
#ifdef TESSERA_HAVE_CUDA
#include "kernels/cuda/device.h"
#endif

namespace tessera::runtime {
namespace {

using ::testing::HasSubstr;

const std::string kLlama = std::string(TESSERA_SOURCE_DIR) + "/tests/data/models/llama";

TEST(EngineLoaderDeviceTest, ParseDevice) {
  EXPECT_EQ(*ParseDevice("cpu"), -1);
  EXPECT_EQ(*ParseDevice(""), -1);
  EXPECT_EQ(*ParseDevice("cuda"), 0);
  EXPECT_EQ(*ParseDevice("cuda:3"), 3);
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CUDA:0", "cuda0"}) {
    absl::StatusOr<int> d = ParseDevice(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("--device"));
  }
}

TEST(EngineLoaderDeviceTest, CpuLoads) {
  EngineOptions options;
  options.threads = 1;
  auto e = LoadEngine(kLlama, options);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->model->device(), "cpu");
  EXPECT_TRUE((*e)->model->uses_host_kv_storage());
}

TEST(EngineLoaderDeviceTest, BadDeviceFailsBeforeLoading) {
  EngineOptions options;
  options.device = "tpu:0";
  auto e = LoadEngine("/nonexistent/model", options);  // the device is checked first
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EngineLoaderDeviceTest, CudaDevice) {
  EngineOptions options;
  options.threads = 1;
  options.device = "cuda:0";
  auto e = LoadEngine(kLlama, options);
#ifdef TESSERA_HAVE_CUDA
  if (!kernels::cuda::DeviceCount().ok()) {
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), absl::StatusCode::kUnavailable) << e.status();
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("no CUDA device"));
    return;
  }
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT((*e)->model->device(), HasSubstr("cuda:0 (sm_"));
  EXPECT_FALSE((*e)->model->uses_host_kv_storage());
  EXPECT_THAT((*e)->plan->backend(), HasSubstr("cuda sm_"));
#else
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("this build has no CUDA backend"));
#endif
}

}  // namespace
}  // namespace tessera::runtime
