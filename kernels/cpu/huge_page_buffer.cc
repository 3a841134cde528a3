#include "kernels/cpu/huge_page_buffer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera::kernels::cpu {
namespace {

constexpr int64_t kPage = 4096;
constexpr int64_t kHugePage = int64_t{2} << 20;

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

[[noreturn]] void OutOfMemory(int64_t bytes) {
  std::fprintf(stderr, "tessera: cannot allocate %lld bytes of weight memory\n",
               static_cast<long long>(bytes));
  std::abort();
}

}  // namespace

HugePageBuffer::HugePageBuffer(int64_t bytes) {
  if (bytes <= 0) return;
  size_ = bytes;
#if defined(__linux__)
  mapped_ = RoundUp(bytes, kPage);
  if (bytes < kHugePage) {
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) OutOfMemory(bytes);
    data_ = static_cast<uint8_t*>(p);
    return;
  }
  // Over-reserve by one huge page, keep the 2 MiB-aligned part, give the rest back.
  const int64_t reserve = mapped_ + kHugePage;
  void* p = mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) OutOfMemory(bytes);
  auto* base = static_cast<uint8_t*>(p);
  const auto addr = reinterpret_cast<uintptr_t>(base);
  auto* aligned = base + (RoundUp(static_cast<int64_t>(addr), kHugePage) - static_cast<int64_t>(addr));
  if (aligned > base) munmap(base, aligned - base);
  const int64_t tail = (base + reserve) - (aligned + mapped_);
  if (tail > 0) munmap(aligned + mapped_, tail);
  data_ = aligned;
  // Advice only: where THP is off the buffer simply stays on 4 KiB pages.
  madvise(data_, mapped_, MADV_HUGEPAGE);
#else
  mapped_ = RoundUp(bytes, 64);
  data_ = static_cast<uint8_t*>(std::aligned_alloc(64, mapped_));
  if (data_ == nullptr) OutOfMemory(bytes);
  std::memset(data_, 0, mapped_);
#endif
}

HugePageBuffer::~HugePageBuffer() { Release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void HugePageBuffer::Release() {
  if (data_ == nullptr) return;
#if defined(__linux__)
  munmap(data_, mapped_);
#else
  std::free(data_);
#endif
  data_ = nullptr;
  size_ = mapped_ = 0;
}

int64_t HugePageBuffer::HugePageBytes() const {
#if defined(__linux__)
  if (data_ == nullptr) return 0;
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0;
  const auto begin = reinterpret_cast<uintptr_t>(data_);
  const auto end = begin + static_cast<uintptr_t>(mapped_);
  int64_t total = 0;
  bool inside = false;
  char line[512];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long lo = 0, hi = 0;  // a mapping's header line: "lo-hi perms ..."
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      inside = lo < end && hi > begin;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line, "AnonHugePages: %lld kB", &kb) == 1) total += kb * 1024;
  }
  std::fclose(f);
  // A mapping the kernel merged with a neighbour's reports the neighbour's huge pages too.
  return total < mapped_ ? total : mapped_;
#else
  return 0;
#endif
}

}  // namespace tessera::kernels::cpu
