// Turns a tokenizer.json "decoder" into a TokenDecoding. The decoders used by BPE LLM
// tokenizers all act token by token (ByteLevel, ByteFallback, Replace, Metaspace) except Fuse
// and Strip, and Fuse followed by Strip(' ', 1, 0) is "strip one leading space from the first
// token", so a per-token description is exact for them and lets the incremental detokenizer
// stream with the same result as a full decode.
#ifndef TESSERA_ENGINE_TOKENIZER_HF_DECODER_H_
#define TESSERA_ENGINE_TOKENIZER_HF_DECODER_H_

#include "absl/status/status.h"
#include "engine/tokenizer/pipeline_tokenizer.h"
#include "nlohmann/json_fwd.hpp"

namespace tessera::tokenizer {

// Adds what `config` describes to `decoding`; a null decoder leaves it unchanged.
absl::Status ParseHfDecoder(const nlohmann::json& config, TokenDecoding* decoding);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_HF_DECODER_H_
