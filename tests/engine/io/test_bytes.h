// Test-only builders of container images in memory: a safetensors file from a header string and a
// byte buffer, and a GGUF byte stream written field by field. They exist to make corrupt files;
// correctness of the readers is checked against files written by the Python libraries.
#ifndef TESSERA_TESTS_ENGINE_IO_TEST_BYTES_H_
#define TESSERA_TESTS_ENGINE_IO_TEST_BYTES_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::io::testing {

inline std::vector<uint8_t> SafetensorsImage(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i);
  return out;
}

class GgufBuilder {
 public:
  template <typename T>
  GgufBuilder& Put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  GgufBuilder& Str(const std::string& s) {
    Put<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  GgufBuilder& Header(uint32_t version, uint64_t tensors, uint64_t kvs) {
    bytes_.insert(bytes_.end(), {'G', 'G', 'U', 'F'});
    return Put(version).Put(tensors).Put(kvs);
  }
  GgufBuilder& TensorInfo(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                          uint64_t offset) {
    Str(name).Put<uint32_t>(dims.size());
    for (uint64_t d : dims) Put(d);
    return Put(type).Put(offset);
  }
  GgufBuilder& PadTo(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  GgufBuilder& Zeros(size_t n) {
    bytes_.insert(bytes_.end(), n, 0);
    return *this;
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace tessera::io::testing

#endif  // TESSERA_TESTS_ENGINE_IO_TEST_BYTES_H_
