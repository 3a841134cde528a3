// Reads the ptxas resource reports the build keeps beside each kernel object
// (kernels/cuda/ptxas_report_launcher.sh, nvcc --resource-usage) and fails on any register spill,
// and on any stack frame (local memory) in the GEMM, attention and quantization kernels. The
// only kernel allowed a stack frame is RoPE: sincosf's exact range reduction for large angles
// (Payne-Hanek) uses a small local array. It also checks that every kernel was compiled for every
// arch of CMAKE_CUDA_ARCHITECTURES, and that the key kernels (NVFP4 quantizers, W4A16 GEMM) are in
// the reports at all.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kernels/cuda/device.h"

#ifndef TESSERA_PTXAS_REPORT_DIR
#error "TESSERA_PTXAS_REPORT_DIR must point at the kernel library's object directory"
#endif

namespace tessera::kernels::cuda {
namespace {

struct KernelReport {
  std::string name, arch;
  int registers = -1;
  int stack = 0, spill_stores = 0, spill_loads = 0;
};

std::vector<KernelReport> ReadReports() {
  std::vector<KernelReport> out;
  const std::regex entry(R"(Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)')");
  const std::regex props(
      R"(([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads)");
  const std::regex regs(R"(Used ([0-9]+) registers)");
  for (const auto& file : std::filesystem::directory_iterator(TESSERA_PTXAS_REPORT_DIR)) {
    if (file.path().string().find(".ptxas.txt") == std::string::npos) continue;
    std::ifstream in(file.path());
    std::string line;
    KernelReport* cur = nullptr;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, entry)) {
        out.push_back({m[1], m[2]});
        cur = &out.back();
      } else if (cur != nullptr && std::regex_search(line, m, props)) {
        cur->stack = std::stoi(m[1]);
        cur->spill_stores = std::stoi(m[2]);
        cur->spill_loads = std::stoi(m[3]);
      } else if (cur != nullptr && std::regex_search(line, m, regs)) {
        cur->registers = std::stoi(m[1]);
      }
    }
  }
  return out;
}

TEST(PtxasReportTest, NoSpillsNoLocalMemoryEveryArch) {
  const std::vector<KernelReport> reports = ReadReports();
  ASSERT_FALSE(reports.empty()) << "no ptxas reports in " << TESSERA_PTXAS_REPORT_DIR;
  std::map<std::string, std::set<std::string>> archs_of;
  for (const KernelReport& r : reports) {
    archs_of[r.name].insert(r.arch);
    EXPECT_GE(r.registers, 0) << r.name << " " << r.arch << ": no register count";
    EXPECT_EQ(r.spill_stores + r.spill_loads, 0) << r.name << " spills on " << r.arch;
    if (r.name.find("RopeKernel") == std::string::npos) {
      EXPECT_EQ(r.stack, 0) << r.name << " uses local memory on " << r.arch;
    }
    std::printf("%-8s regs %3d stack %3d spill %d/%d  %s\n", r.arch.c_str(), r.registers, r.stack,
                r.spill_stores, r.spill_loads, r.name.c_str());
  }
  std::set<std::string> expected;
  for (const CompiledArch& a : CompiledArchs()) {
    expected.insert("sm_" + std::to_string(a.sm) + (a.arch_specific ? "a" : ""));
  }
  for (const auto& [name, archs] : archs_of) EXPECT_EQ(archs, expected) << name;
}

// Kernels whose absence would make the check above vacuous for them (a renamed or dropped
// kernel, or a report file the launcher failed to keep): each must appear for every arch.
TEST(PtxasReportTest, KeyKernelsAreReported) {
  const std::vector<KernelReport> reports = ReadReports();
  std::set<std::string> expected;
  for (const CompiledArch& a : CompiledArchs()) {
    expected.insert("sm_" + std::to_string(a.sm) + (a.arch_specific ? "a" : ""));
  }
  // The NVFP4 quantizers (the swizzled one feeds cuBLASLt's W4A4 GEMM) and the W4A16 GEMMs.
  for (const char* kernel : {"Nvfp4SwizzledKernel", "Nvfp4Kernel", "W4A16Kernel",
                             "W4A16GroupKernel"}) {
    std::set<std::string> archs;
    for (const KernelReport& r : reports) {
      if (r.name.find(kernel) != std::string::npos) archs.insert(r.arch);
    }
    EXPECT_EQ(archs, expected) << kernel;
  }
}

}  // namespace
}  // namespace tessera::kernels::cuda
