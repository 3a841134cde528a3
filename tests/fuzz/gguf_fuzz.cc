// Fuzz target: the GGUF parser on arbitrary bytes; valid parses also read metadata and decode
// small tensors, so lying counts, lengths and offsets are exercised end to end.
#include <cstddef>
#include <cstdint>

#include "engine/io/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = tessera::io::GgufFile::Parse({data, size}, "fuzz");
  if (!g.ok()) return 0;
  for (const auto& kv : (*g)->metadata().entries()) (void)kv.value.ToString();
  for (const auto& name : (*g)->names()) {
    auto view = (*g)->Get(name);
    if (view.ok() && view->bytes.size() <= 4096) (void)tessera::io::ToFloat32(*view);
  }
  return 0;
}
