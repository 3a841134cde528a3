#include "kernels/cuda/device.h"

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/cuda/cuda_status.h"

#ifndef TESSERA_CUDA_ARCHITECTURES
#error "TESSERA_CUDA_ARCHITECTURES must be defined by the build (CMAKE_CUDA_ARCHITECTURES)"
#endif

namespace tessera::kernels::cuda {
namespace {

// Dense MMA results per SM per clock (FLOPs, multiply and add counted), from the A100/H100/
// Blackwell whitepapers: A100 312 TF bf16 = 108 SM * 1.41 GHz * 2048.
double Bf16FlopsPerSmClock(int sm) {
  if (sm >= 100) return 8192;  // B200: 2.25 PF dense bf16 over 148 SMs at ~1.86 GHz
  if (sm >= 90) return 4096;   // H100 SXM: 989 TF over 132 SMs at 1.83 GHz
  if (sm == 89) return 1024;   // Ada (L40S ~362 TF with sparsity off at 2.52 GHz, 142 SMs)
  if (sm >= 80) return 2048;   // A100 (GA10x consumer parts are half of this)
  return 0;
}

}  // namespace

double DeviceInfo::PeakBf16Tflops() const {
  return Bf16FlopsPerSmClock(sm) * multiprocessors * clock_ghz * 1e-3;
}
double DeviceInfo::PeakFp8Tflops() const { return sm >= 89 ? 2 * PeakBf16Tflops() : 0.0; }
double DeviceInfo::PeakFp4Tflops() const { return sm >= 100 ? 4 * PeakBf16Tflops() : 0.0; }

absl::StatusOr<int> DeviceCount() {
  int count = 0;
  RETURN_IF_CUDA_ERROR(cudaGetDeviceCount(&count));
  if (count == 0) return absl::UnavailableError("no CUDA device: cudaGetDeviceCount returned 0");
  return count;
}

absl::StatusOr<DeviceInfo> QueryDevice(int ordinal) {
  TESSERA_ASSIGN_OR_RETURN(const int count, DeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", ordinal, " does not exist (", count, " found)"));
  }
  DeviceInfo info;
  info.ordinal = ordinal;
  cudaDeviceProp prop{};
  RETURN_IF_CUDA_ERROR(cudaGetDeviceProperties(&prop, ordinal));
  info.sm = prop.major * 10 + prop.minor;
  info.name = prop.name;
  info.multiprocessors = prop.multiProcessorCount;
  info.global_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.shared_memory_per_block_optin = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  // CUDA 13 removed the clock fields from cudaDeviceProp; the attributes remain.
  int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal));
  RETURN_IF_CUDA_ERROR(
      cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  RETURN_IF_CUDA_ERROR(
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal));
  info.clock_ghz = clock_khz * 1e-6;
  info.memory_bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) * 1e-9;
  return info;
}

namespace {

std::vector<CompiledArch> ParseCompiledArchs() {
  std::vector<CompiledArch> out;
  for (absl::string_view item :
       absl::StrSplit(TESSERA_CUDA_ARCHITECTURES, absl::ByAnyChar(";, "), absl::SkipEmpty())) {
    CompiledArch arch;
    // "90a", "100a", "120f", "89", "90-real": digits, then an optional suffix. Family ("f")
    // targets are treated like "a" ones (exact sm), which is conservative for sm_103 and kin.
    size_t digits = 0;
    while (digits < item.size() && item[digits] >= '0' && item[digits] <= '9') ++digits;
    if (!absl::SimpleAtoi(item.substr(0, digits), &arch.sm)) continue;
    arch.arch_specific = digits < item.size() && (item[digits] == 'a' || item[digits] == 'f');
    out.push_back(arch);
  }
  return out;
}

}  // namespace

const std::vector<CompiledArch>& CompiledArchs() {
  static const std::vector<CompiledArch> archs = ParseCompiledArchs();
  return archs;
}

std::string CompiledArchsString() { return TESSERA_CUDA_ARCHITECTURES; }

bool CanRunGenericKernels(int sm) {
  for (const CompiledArch& a : CompiledArchs()) {
    if (a.arch_specific ? a.sm == sm : a.sm <= sm) return true;
  }
  return false;
}

bool HasArchSpecificTarget(int sm) {
  for (const CompiledArch& a : CompiledArchs()) {
    if (a.arch_specific && a.sm == sm) return true;
  }
  return false;
}

}  // namespace tessera::kernels::cuda
