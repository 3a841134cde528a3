#include "engine/tokenizer/pretokenizer_patterns.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tessera::tokenizer {
namespace {

// DeepSeek LLM's letter class (Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, ...), as in
// its tokenizer.json. Written as code points: several of these characters (U+1FD3, U+2126,
// U+212A, ...) have canonical singleton decompositions, and an editor that normalizes the
// source to NFC would silently turn the literal characters into different ones.
constexpr absl::string_view kDeepseekLetters =
    "\\s?["
    "\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}"
    "\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}"
    "\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}"
    "\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}"
    "\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}"
    "\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
    "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}"
    "\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}"
    "\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}"
    "\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}"
    "\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}"
    "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}"
    "\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}"
    "\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}"
    "]+";
// CJK ideographs, U+0800..U+4E00 and Hangul syllables (DeepSeek's "[一-龥ࠀ-一가-퟿]+").
constexpr absl::string_view kCjk = "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";

}  // namespace

absl::StatusOr<std::vector<std::string>> GgufPreTokenizerPatterns(absl::string_view pre) {
  using V = std::vector<std::string>;
  if (pre.empty() || pre == "default") {
    // llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT.
    return V{"[\\p{P}\\$\\+<=>\\^~\\|]+", std::string(kGpt2Pattern), "\\p{N}+", "[0-9][0-9][0-9]"};
  }
  if (pre == "gpt-2" || pre == "mpt" || pre == "olmo" || pre == "jais" || pre == "phi-2" ||
      pre == "jina-es" || pre == "jina-de" || pre == "jina-v1-en" || pre == "jina-v2-es" ||
      pre == "jina-v2-de" || pre == "gpt-neox" || pre == "trillion") {
    return V{std::string(kGpt2Pattern)};
  }
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
      pre == "pixtral" || pre == "dbrx" || pre == "smaug-bpe" || pre == "granite-docling") {
    return V{std::string(kLlama3Pattern)};
  }
  if (pre == "gpt-4o" || pre == "llama4" || pre == "kanana2" || pre == "talkie") {
    return V{std::string(kO200kPattern)};
  }
  if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "megrez" || pre == "stablelm2") {
    return V{std::string(kQwen2Pattern)};
  }
  if (pre == "deepseek-llm") {
    return V{
        "[\r\n]",
        std::string(kDeepseekLetters),
        "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
        "\\s+$",
        std::string(kCjk),
        "\\p{N}+"};
  }
  if (pre == "deepseek-coder") {
    return V{"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", std::string(kCjk), "\\p{N}"};
  }
  if (pre == "falcon") {
    return V{"[\\p{P}\\$\\+<=>\\^~\\|`]+", std::string(kGpt2Pattern), "[0-9][0-9][0-9]"};
  }
  if (pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "smollm" ||
      pre == "codeshell" || pre == "exaone" || pre == "minerva-7b") {
    return V{"\\p{N}", std::string(kGpt2Pattern)};
  }
  return absl::NotFoundError(absl::StrCat("unknown GGUF pre-tokenizer '", pre, "'"));
}

}  // namespace tessera::tokenizer
