// What the CUDA code needs to know about the machine: whether a usable device exists (a clear
// UNAVAILABLE status when it does not, never a crash), its compute capability as one number
// (sm = 10 * major + minor), its peaks for the benchmarks, and which architectures this binary
// carries code for. The compiled list comes from CMAKE_CUDA_ARCHITECTURES at build time, so
// capability checks can say "not compiled for sm_100" without touching a device.
#ifndef TESSERA_KERNELS_CUDA_DEVICE_H_
#define TESSERA_KERNELS_CUDA_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::kernels::cuda {

struct DeviceInfo {
  int ordinal = 0;
  int sm = 0;  // 10 * major + minor: 80, 89, 90, 100, 120, ...
  std::string name;
  int multiprocessors = 0;
  int64_t global_memory_bytes = 0;
  int64_t shared_memory_per_block_optin = 0;
  double clock_ghz = 0;           // peak SM clock
  double memory_bandwidth_gbs = 0;  // 2 (DDR) * memory clock * bus width / 8

  // Dense tensor-core peaks in TFLOP/s (per-SM throughput per clock from the architecture
  // whitepapers times SMs times clock); 0 where the format has no MMA on this arch.
  double PeakBf16Tflops() const;
  double PeakFp8Tflops() const;
  double PeakFp4Tflops() const;
};

// Number of usable devices; UNAVAILABLE (with the runtime's reason) when there is no driver or
// no device, which tests turn into GTEST_SKIP and the engine into "use the CPU backend".
absl::StatusOr<int> DeviceCount();

// Properties of device `ordinal`; UNAVAILABLE as above, INVALID_ARGUMENT for a bad ordinal.
absl::StatusOr<DeviceInfo> QueryDevice(int ordinal = 0);

// One compiled target of this build, parsed from CMAKE_CUDA_ARCHITECTURES ("90a" -> sm 90,
// arch_specific true). A plain target also embeds PTX and runs on every later arch; an
// arch-specific ("a") target runs only on exactly that sm.
struct CompiledArch {
  int sm = 0;
  bool arch_specific = false;
};
const std::vector<CompiledArch>& CompiledArchs();
std::string CompiledArchsString();  // "80,89,90a,100a,120a"

// True when generic (arch-independent) kernels of this build can run on `sm`: some compiled
// target is <= sm and either plain (PTX/SASS forward-compatible within the rules) or the exact
// same arch-specific sm (or same major for SASS compatibility of a plain target).
bool CanRunGenericKernels(int sm);
// True when the arch-specific target for exactly `sm` (e.g. 100a for sm 100) was compiled, which
// the tcgen05/FP4-MMA paths need.
bool HasArchSpecificTarget(int sm);

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_DEVICE_H_
