#include "engine/runtime/sampling_params.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int32_t kVocab = 1000;
constexpr int32_t kLimit = 4096;

struct SamplingCase {
  std::string field;
  std::function<void(SamplingParams&)> mutate;
};

TEST(SamplingParamsTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateSamplingParams(SamplingParams{}, kVocab).ok());
  EXPECT_TRUE(ValidateStoppingParams(StoppingParams{}, kVocab, kLimit).ok());
}

TEST(SamplingParamsTest, BoundaryValuesAreValid) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = kVocab * 10;  // clamped by the sampler, not an error
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.repetition_penalty = 1e-3f;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.seed = 0;
  p.logprobs = kMaxLogprobs;
  EXPECT_TRUE(ValidateSamplingParams(p, kVocab).ok());
}

TEST(SamplingParamsTest, EveryErrorNamesItsField) {
  const float nan = std::nanf("");
  const float inf = INFINITY;
  const std::vector<SamplingCase> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -1.0f; }},
      {"temperature", [&](SamplingParams& p) { p.temperature = nan; }},
      {"temperature", [&](SamplingParams& p) { p.temperature = inf; }},
      {"top_k", [](SamplingParams& p) { p.top_k = -1; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.5f; }},
      {"top_p", [&](SamplingParams& p) { p.top_p = nan; }},
      {"min_p", [](SamplingParams& p) { p.min_p = -0.1f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.1f; }},
      {"min_p", [&](SamplingParams& p) { p.min_p = nan; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = -1.0f; }},
      {"repetition_penalty", [&](SamplingParams& p) { p.repetition_penalty = inf; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = 2.5f; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = -2.5f; }},
      {"presence_penalty", [&](SamplingParams& p) { p.presence_penalty = nan; }},
      {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = 3.0f; }},
      {"frequency_penalty", [&](SamplingParams& p) { p.frequency_penalty = -inf; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = -1; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = kMaxLogprobs + 1; }},
  };
  for (const SamplingCase& c : cases) {
    SamplingParams p;
    c.mutate(p);
    absl::Status s = ValidateSamplingParams(p, kVocab);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(std::string(s.message()), StartsWith(c.field + " ")) << s;
  }
}

TEST(SamplingParamsTest, MessageShowsTheValue) {
  SamplingParams p;
  p.temperature = -1.0f;
  EXPECT_EQ(ValidateSamplingParams(p, kVocab).message(), "temperature must be >= 0, got -1");
}

TEST(SamplingParamsTest, RejectsBadVocab) {
  EXPECT_THAT(std::string(ValidateSamplingParams(SamplingParams{}, 0).message()),
              StartsWith("vocab_size"));
}

struct StoppingCase {
  std::string field;
  std::function<void(StoppingParams&)> mutate;
};

TEST(StoppingParamsTest, EveryErrorNamesItsField) {
  const std::vector<StoppingCase> cases = {
      {"max_new_tokens", [](StoppingParams& p) { p.max_new_tokens = 0; }},
      {"max_new_tokens", [](StoppingParams& p) { p.max_new_tokens = kLimit + 1; }},
      {"stop_strings", [](StoppingParams& p) { p.stop_strings.assign(kMaxStopStrings + 1, "x"); }},
      {"stop_strings[1]",
       [](StoppingParams& p) {
         p.stop_strings = {"a", ""};
       }},
      {"stop_strings[0]",
       [](StoppingParams& p) { p.stop_strings = {std::string(kMaxStopStringBytes + 1, 'a')}; }},
      {"stop_token_ids[2]",
       [](StoppingParams& p) {
         p.stop_token_ids = {1, 2, kVocab};
       }},
      {"stop_token_ids[0]", [](StoppingParams& p) { p.stop_token_ids = {-1}; }},
  };
  for (const StoppingCase& c : cases) {
    StoppingParams p;
    c.mutate(p);
    absl::Status s = ValidateStoppingParams(p, kVocab, kLimit);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(std::string(s.message()), StartsWith(c.field + " ")) << s;
  }
}

TEST(StoppingParamsTest, BoundaryValuesAreValid) {
  StoppingParams p;
  p.max_new_tokens = kLimit;
  p.stop_strings.assign(kMaxStopStrings, std::string(kMaxStopStringBytes, 'z'));
  p.stop_token_ids = {0, kVocab - 1};
  EXPECT_TRUE(ValidateStoppingParams(p, kVocab, kLimit).ok());
  p.max_new_tokens = 1;
  EXPECT_TRUE(ValidateStoppingParams(p, kVocab, kLimit).ok());
}

TEST(StoppingParamsTest, RejectsBadLimit) {
  absl::Status s = ValidateStoppingParams(StoppingParams{}, kVocab, 0);
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_new_tokens_limit"));
}

}  // namespace
}  // namespace tessera::runtime
