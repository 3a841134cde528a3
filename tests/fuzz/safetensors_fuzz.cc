// Fuzz target: any byte string given to the safetensors parser yields a Status or a valid file
// whose every tensor view stays inside the input (ASan/UBSan catch the rest).
#include <cstddef>
#include <cstdint>

#include "engine/io/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto st = tessera::io::SafetensorsFile::Parse({data, size}, "fuzz");
  if (!st.ok()) return 0;
  for (const auto& name : (*st)->names()) {
    auto view = (*st)->Get(name);
    if (view.ok() && view->bytes.size() <= 4096) (void)tessera::io::ToFloat32(*view);
  }
  return 0;
}
