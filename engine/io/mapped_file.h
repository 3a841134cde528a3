// A read-only memory map of a whole file. Checkpoints are mapped, never read into heap memory,
// so a 100 GB model costs page cache rather than RSS, and every tensor view points into the map.
// Tensors that a backend repacks or quantizes into memory of its own at load give their pages
// back (ReleaseMappedPages), so a model's weights are not resident twice.
#ifndef TESSERA_ENGINE_IO_MAPPED_FILE_H_
#define TESSERA_ENGINE_IO_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tessera::io {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file yields a valid object with size() == 0.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);

  // Public for std::make_unique only; the Token keeps construction inside Open().
  struct Token {
   private:
    friend class MappedFile;
    Token() = default;
  };
  MappedFile(Token, std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

// Drops this process's resident pages of `bytes` (the whole pages inside it) when they lie inside a
// live MappedFile; a later read faults them back from the file (through the page cache), so the
// bytes keep their values and views stay valid. A no-op for bytes outside every map (heap copies,
// whose pages MADV_DONTNEED would zero). For tensors a backend has repacked or quantized into
// memory of its own: without it, a repacked model's RSS is twice its weights.
void ReleaseMappedPages(absl::Span<const uint8_t> bytes);

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_MAPPED_FILE_H_
