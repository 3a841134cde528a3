// MappedFile and ReleaseMappedPages: a mapped file's bytes read back unchanged after their pages
// are released, and the process's resident set shrinks by them; bytes outside every map (a heap
// buffer, where MADV_DONTNEED would zero whole pages) are left alone; a missing file is an error.
#include "engine/io/mapped_file.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::io {
namespace {

// Resident pages of this process (/proc/self/statm, second field).
int64_t ResidentPages() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident;
}

TEST(MappedFileTest, ReleasedPagesReadBackAndLeaveTheResidentSet) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tessera_mapped_" + std::to_string(getpid())))
          .string();
  const int64_t bytes = 32 << 20;
  {
    std::vector<uint8_t> data(bytes);
    for (int64_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), bytes);
  }
  auto file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const uint8_t* p = (*file)->data();
  uint64_t sum = 0;
  for (int64_t i = 0; i < bytes; i += 64) sum += p[i];  // fault every page in
  const int64_t before = ResidentPages();
  ReleaseMappedPages((*file)->bytes().subspan(1, bytes - 2));  // whole pages inside only
  const int64_t after = ResidentPages();
  const int64_t page = sysconf(_SC_PAGESIZE);
  // (a few pages of slack: allocator and sanitizer pages may come and go meanwhile)
  EXPECT_GE(before - after, bytes / page - 64) << before << " -> " << after;
  for (int64_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(p[i], static_cast<uint8_t>(i * 131 + (i >> 12))) << i;
  }
  EXPECT_GT(sum, 0u);
  // A span reaching past the map's end is not one tensor of it: left alone.
  for (int64_t i = 0; i < bytes; i += 64) sum += p[i];
  const int64_t faulted = ResidentPages();
  ReleaseMappedPages({p + bytes - page, static_cast<size_t>(4 * page)});
  EXPECT_GE(ResidentPages(), faulted - 1);
  file->reset();
  std::remove(path.c_str());
}

TEST(MappedFileTest, HeapBytesAreLeftAlone) {
  std::vector<uint8_t> heap(1 << 20, 0xAB);
  ReleaseMappedPages(heap);
  for (uint8_t v : heap) ASSERT_EQ(v, 0xAB);
}

TEST(MappedFileTest, MissingFileIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(MappedFile::Open("/nonexistent/tessera/file").status()));
}

}  // namespace
}  // namespace tessera::io
