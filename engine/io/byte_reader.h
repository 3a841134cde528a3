// A bounds-checked little-endian cursor over an untrusted byte buffer. Every GGUF field is read
// through it, so a truncated or lying file turns into a DATA_LOSS status naming what was being
// read and where, never into a read past the end.
#ifndef TESSERA_ENGINE_IO_BYTE_READER_H_
#define TESSERA_ENGINE_IO_BYTE_READER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include "absl/strings/string_view.h"
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"

namespace tessera::io {

class ByteReader {
 public:
  explicit ByteReader(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

  template <typename T>
  absl::StatusOr<T> Read(absl::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return Truncated(what, sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return v;
  }

  // GGUF string: u64 length then that many bytes.
  absl::StatusOr<absl::string_view> ReadString(absl::string_view what) {
    auto len = Read<uint64_t>(what);
    if (!len.ok()) return len.status();
    if (*len > remaining()) {
      return absl::DataLossError(absl::StrFormat(
          "%s: string length %d at offset %d runs past the end of the file (%d bytes left)", what,
          *len, offset_ - 8, remaining()));
    }
    absl::string_view s(reinterpret_cast<const char*>(bytes_.data() + offset_), *len);
    offset_ += *len;
    return s;
  }

  absl::Status Skip(uint64_t n, absl::string_view what) {
    if (n > remaining()) return Truncated(what, n);
    offset_ += n;
    return absl::OkStatus();
  }

 private:
  absl::Status Truncated(absl::string_view what, uint64_t need) const {
    return absl::DataLossError(absl::StrFormat(
        "truncated file: reading %s needs %d bytes at offset %d, only %d left", what, need, offset_,
        remaining()));
  }

  absl::Span<const uint8_t> bytes_;
  size_t offset_ = 0;
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_BYTE_READER_H_
