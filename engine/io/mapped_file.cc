#include "engine/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tessera::io {

namespace {

// The live maps, by start address: what ReleaseMappedPages may advise.
struct MapRegistry {
  std::mutex mu;
  std::map<const uint8_t*, size_t> maps;
};

// Never destroyed (a MappedFile may be released during static teardown).
MapRegistry& Registry() {
  static MapRegistry& registry = *new MapRegistry;
  return registry;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = absl::StrFormat("cannot open %s: %s", path, std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return absl::InternalError(absl::StrFormat("cannot stat %s: %s", path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrFormat("%s is not a regular file", path));
  }
  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return absl::InternalError(absl::StrFormat("cannot mmap %s: %s", path, std::strerror(err)));
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // The mapping stays valid after close.
  if (data != nullptr) {
    std::lock_guard<std::mutex> lock(Registry().mu);
    Registry().maps[data] = size;
  }
  return std::make_unique<MappedFile>(Token(), path, data, size);
}

MappedFile::~MappedFile() {
  if (data_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(Registry().mu);
    Registry().maps.erase(data_);
  }
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

void ReleaseMappedPages(absl::Span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  const uintptr_t end = begin + bytes.size();
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first >= last) return;
  std::lock_guard<std::mutex> lock(Registry().mu);  // the map cannot go away meanwhile
  auto it = Registry().maps.upper_bound(bytes.data());
  if (it == Registry().maps.begin()) return;
  --it;
  const auto map_begin = reinterpret_cast<uintptr_t>(it->first);
  if (begin < map_begin || end > map_begin + it->second) return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace tessera::io
