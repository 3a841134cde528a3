#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::runtime {
namespace {

using ::testing::HasSubstr;

const std::vector<int32_t> kNone;

std::vector<double> LogSoftmax(const std::vector<float>& logits) {
  double m = -INFINITY;
  for (float l : logits) m = std::max(m, static_cast<double>(l));
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l - m);
  std::vector<double> out;
  for (float l : logits) out.push_back(l - m - std::log(sum));
  return out;
}

std::vector<float> LogitsFromProbs(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

int32_t SampleId(Sampler& s, const std::vector<float>& logits,
                 const std::vector<int32_t>& prompt = kNone,
                 const std::vector<int32_t>& generated = kNone) {
  auto t = s.Sample(logits, prompt, generated);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? t->id : -1;
}

// Token frequencies over `draws` samples.
std::map<int32_t, int64_t> Histogram(const SamplingParams& p, const std::vector<float>& logits,
                                     int draws) {
  Sampler s(p);
  std::map<int32_t, int64_t> counts;
  for (int i = 0; i < draws; ++i) ++counts[SampleId(s, logits)];
  return counts;
}

std::set<int32_t> Keys(const std::map<int32_t, int64_t>& m) {
  std::set<int32_t> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

SamplingParams Seeded(uint64_t seed) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

TEST(SamplerTest, GreedyBreaksTiesByLowestId) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p);
  EXPECT_EQ(SampleId(s, {1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(SampleId(s, {-INFINITY, 0.5f, 0.5f}), 1);
  EXPECT_EQ(SampleId(s, {7.0f, 7.0f, 7.0f}), 0);
  EXPECT_EQ(SampleId(s, {-5.0f, -INFINITY, -1.0f}), 2);
}

TEST(SamplerTest, TopKOneEqualsGreedy) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> small(0, 3);  // many ties
  SamplingParams greedy_params;
  greedy_params.temperature = 0.0f;
  Sampler greedy(greedy_params);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(50);
    for (float& l : logits) l = static_cast<float>(small(gen));
    SamplingParams p = Seeded(trial);
    p.top_k = 1;
    p.temperature = 1.5f;
    Sampler top1(p);
    EXPECT_EQ(SampleId(top1, logits), SampleId(greedy, logits)) << trial;
  }
}

TEST(SamplerTest, TopPKeepsTheMinimalNucleus) {
  // Probabilities by id: 0.15, 0.5, 0.05, 0.3. Descending: id1 0.5, id3 0.3, id0 0.15, id2 0.05.
  const std::vector<float> logits = LogitsFromProbs({0.15, 0.5, 0.05, 0.3});
  struct Case {
    float top_p;
    std::set<int32_t> nucleus;
  };
  // 0.5 reaches 0.5 exactly -> {1}; 0.8 = 0.5 + 0.3 exactly -> {1, 3}; just above needs id0.
  for (const Case& c : std::vector<Case>{{0.3f, {1}},
                                         {0.5f, {1}},
                                         {0.51f, {1, 3}},
                                         {0.8f, {1, 3}},
                                         {0.81f, {0, 1, 3}},
                                         {0.95f, {0, 1, 3}},
                                         {0.96f, {0, 1, 2, 3}},
                                         {1.0f, {0, 1, 2, 3}}}) {
    SamplingParams p = Seeded(1);
    p.top_p = c.top_p;
    EXPECT_EQ(Keys(Histogram(p, logits, 4000)), c.nucleus) << "top_p=" << c.top_p;
  }
}

TEST(SamplerTest, TopPOnALargeVocabularyMatchesAFullSort) {
  // A flat-ish distribution so the nucleus spans hundreds of tokens and the prefix has to grow.
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> logits(5000);
  for (float& l : logits) l = normal(gen);
  const std::vector<double> lp = LogSoftmax(logits);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::set<int32_t> nucleus;
  double cumulative = 0.0;
  for (int32_t id : order) {
    nucleus.insert(id);
    cumulative += std::exp(lp[id]);
    if (cumulative >= 0.3) break;
  }
  ASSERT_GT(nucleus.size(), 200u);
  SamplingParams p = Seeded(5);
  p.top_p = 0.3f;
  for (const auto& [id, n] : Histogram(p, logits, 5000)) {
    EXPECT_TRUE(nucleus.count(id)) << id;
  }
}

TEST(SamplerTest, MinPDropsTokensBelowTheScaledMaximum) {
  const std::vector<float> logits = LogitsFromProbs({0.5, 0.3, 0.15, 0.05});
  SamplingParams p = Seeded(2);
  p.min_p = 0.25f;  // floor 0.125: drops only 0.05
  EXPECT_EQ(Keys(Histogram(p, logits, 4000)), (std::set<int32_t>{0, 1, 2}));
  p.min_p = 0.35f;  // floor 0.175
  EXPECT_EQ(Keys(Histogram(p, logits, 4000)), (std::set<int32_t>{0, 1}));
  p.min_p = 1.0f;  // only the maximum survives
  EXPECT_EQ(Keys(Histogram(p, logits, 1000)), (std::set<int32_t>{0}));
}

TEST(SamplerTest, TopKKeepsTheKMostLikely) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f, 1.5f, 0.0f};
  SamplingParams p = Seeded(4);
  p.top_k = 3;  // 2.0, then the tie at 1.5 (ids 3 and 4)
  p.temperature = 3.0f;
  EXPECT_EQ(Keys(Histogram(p, logits, 4000)), (std::set<int32_t>{1, 3, 4}));
  p.top_k = 2;  // tie broken towards the lower id
  EXPECT_EQ(Keys(Histogram(p, logits, 4000)), (std::set<int32_t>{1, 3}));
  p.top_k = 1000;  // larger than the vocabulary: everything
  EXPECT_EQ(Keys(Histogram(p, logits, 20000)), (std::set<int32_t>{0, 1, 2, 3, 4, 5}));
}

// The reported logprobs are log_softmax of the penalized logits, so their differences expose
// the penalized logits exactly.
std::vector<double> PenalizedLogits(const SamplingParams& base, const std::vector<float>& logits,
                                    const std::vector<int32_t>& prompt,
                                    const std::vector<int32_t>& generated) {
  SamplingParams p = base;
  p.logprobs = static_cast<int32_t>(logits.size());
  Sampler s(p);
  auto t = s.Sample(logits, prompt, generated);
  EXPECT_TRUE(t.ok()) << t.status();
  std::vector<double> out(logits.size(), NAN);
  if (!t.ok()) return out;
  for (const TokenLogprob& tl : t->top) out[tl.id] = tl.logprob;
  // Shift so that the last token (never penalized in these tests) keeps its logit.
  const double shift = logits.back() - out.back();
  for (double& v : out) v += shift;
  return out;
}

TEST(SamplerTest, RepetitionPenaltyFollowsHfSemantics) {
  // Hand example: token 0 (positive) is divided, token 1 (negative) is multiplied, token 2
  // (zero) stays, token 3 is not in the context. Repeats count once.
  const std::vector<float> logits = {2.0f, -2.0f, 0.0f, 1.0f};
  SamplingParams p = Seeded(1);
  p.repetition_penalty = 2.0f;
  const std::vector<double> got = PenalizedLogits(p, logits, {0, 2}, {1, 1, 0});
  EXPECT_NEAR(got[0], 1.0, 1e-5);
  EXPECT_NEAR(got[1], -4.0, 1e-5);
  EXPECT_NEAR(got[2], 0.0, 1e-5);
  EXPECT_NEAR(got[3], 1.0, 1e-5);

  // Greedy sees the penalized logits: token 0 drops to a tie with token 3 and wins on id;
  // with a penalty below 1 the negative token is pulled up.
  p.temperature = 0.0f;
  Sampler greedy(p);
  EXPECT_EQ(SampleId(greedy, {2.0f, -2.0f, 0.0f, 1.5f}, {0}, {}), 3);
  p.repetition_penalty = 0.1f;
  Sampler boost(p);
  EXPECT_EQ(SampleId(boost, {-2.0f, -0.5f, -1.0f}, {}, {0}), 0);  // -2 * 0.1 = -0.2 wins
}

TEST(SamplerTest, PresenceAndFrequencyCountGeneratedTokensOnly) {
  const std::vector<float> logits(5, 0.0f);
  SamplingParams p = Seeded(1);
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  // Token 4 appears only in the prompt: untouched. Token 1 once, token 3 three times.
  const std::vector<double> got = PenalizedLogits(p, logits, {4, 4, 2}, {1, 3, 3, 3});
  EXPECT_NEAR(got[0], 0.0, 1e-5);
  EXPECT_NEAR(got[1], -0.75, 1e-5);
  EXPECT_NEAR(got[2], 0.0, 1e-5);
  EXPECT_NEAR(got[3], -1.25, 1e-5);
  EXPECT_NEAR(got[4], 0.0, 1e-5);
}

TEST(SamplerTest, RepetitionThenAdditivePenalties) {
  const std::vector<float> logits = {3.0f, 0.0f};
  SamplingParams p = Seeded(1);
  p.repetition_penalty = 1.5f;
  p.frequency_penalty = 1.0f;
  // 3 / 1.5 - 2 * 1 = 0 (the other order would give (3 - 2) / 1.5).
  const std::vector<double> got = PenalizedLogits(p, logits, {}, {0, 0});
  EXPECT_NEAR(got[0], 0.0, 1e-5);
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedsDiffer) {
  std::vector<float> logits(100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
  auto run = [&](uint64_t seed) {
    SamplingParams p = Seeded(seed);
    p.top_k = 40;
    p.top_p = 0.95f;
    p.temperature = 0.8f;
    Sampler s(p);
    std::vector<int32_t> ids;
    for (int i = 0; i < 1000; ++i) ids.push_back(SampleId(s, logits));
    return ids;
  };
  const std::vector<int32_t> a = run(1234);
  EXPECT_EQ(a, run(1234));
  EXPECT_NE(a, run(1235));
  EXPECT_NE(a, run(0));
}

// Pearson chi-square of observed counts against expected probabilities.
double ChiSquare(const std::map<int32_t, int64_t>& counts, const std::vector<double>& probs,
                 int64_t draws) {
  double chi2 = 0.0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0.0) {
      EXPECT_EQ(counts.count(static_cast<int32_t>(i)), 0u) << "token " << i << " has p = 0";
      continue;
    }
    const double expected = probs[i] * static_cast<double>(draws);
    const auto it = counts.find(static_cast<int32_t>(i));
    const double observed = it == counts.end() ? 0.0 : static_cast<double>(it->second);
    chi2 += (observed - expected) * (observed - expected) / expected;
  }
  return chi2;
}

TEST(SamplerTest, EmpiricalDistributionMatchesSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.5f, 1.2f, 0.7f};
  std::vector<double> probs;
  for (double lp : LogSoftmax(logits)) probs.push_back(std::exp(lp));
  constexpr int kDraws = 200000;
  const double chi2 = ChiSquare(Histogram(Seeded(20240601), logits, kDraws), probs, kDraws);
  // 7 degrees of freedom: P(chi2 > 24.32) = 0.001 for a correct sampler. The seed is fixed, so
  // the test is deterministic; the bound says the seed was not cherry-picked.
  EXPECT_LT(chi2, 24.32);
}

TEST(SamplerTest, TemperatureAndTopKRenormalise) {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.5f, 1.2f, 0.7f};
  SamplingParams p = Seeded(99);
  p.temperature = 0.5f;
  p.top_k = 4;  // ids 3, 6, 0, 7
  std::vector<double> probs(logits.size(), 0.0);
  double sum = 0.0;
  for (int32_t id : {3, 6, 0, 7}) sum += probs[id] = std::exp(logits[id] / 0.5);
  for (double& v : probs) v /= sum;
  constexpr int kDraws = 200000;
  // 3 degrees of freedom: P(chi2 > 16.27) = 0.001.
  EXPECT_LT(ChiSquare(Histogram(p, logits, kDraws), probs, kDraws), 16.27);
}

TEST(SamplerTest, LogprobsAreLogSoftmaxOfPenalizedLogitsBeforeTemperature) {
  const std::vector<float> logits = {0.3f, -1.0f, 2.5f, 2.5f, 0.0f, 1.0f, -3.0f};
  const std::vector<double> expected = LogSoftmax(logits);
  for (float temperature : {0.0f, 0.5f, 1.0f, 2.0f}) {
    SamplingParams p = Seeded(11);
    p.temperature = temperature;
    p.top_k = 2;  // does not change the reported values
    p.logprobs = 4;
    Sampler s(p);
    auto t = s.Sample(logits, kNone, kNone);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_NEAR(t->logprob, expected[t->id], 1e-5);
    ASSERT_EQ(t->top.size(), 4u);
    const std::vector<int32_t> want_ids = {2, 3, 5, 0};  // tie at 2.5 by id
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(t->top[i].id, want_ids[i]);
      EXPECT_NEAR(t->top[i].logprob, expected[want_ids[i]], 1e-5);
      if (i > 0) {
        EXPECT_GE(t->top[i - 1].logprob, t->top[i].logprob);
      }
    }
  }
}

TEST(SamplerTest, LogprobsSkipMaskedTokensAndClampToVocab) {
  SamplingParams p = Seeded(1);
  p.logprobs = 20;
  Sampler s(p);
  auto t = s.Sample({0.0f, -INFINITY, 1.0f}, kNone, kNone);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->top.size(), 2u);
  EXPECT_EQ(t->top[0].id, 2);
  EXPECT_EQ(t->top[1].id, 0);
  EXPECT_NE(t->id, 1);
}

TEST(SamplerTest, RejectsBrokenLogits) {
  Sampler s(Seeded(1));
  auto nan = s.Sample({0.0f, NAN, 1.0f}, kNone, kNone);
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(nan.status().message()), HasSubstr("logits[1]"));
  EXPECT_FALSE(s.Sample({0.0f, INFINITY}, kNone, kNone).ok());
  EXPECT_FALSE(s.Sample({-INFINITY, -INFINITY}, kNone, kNone).ok());
  EXPECT_FALSE(s.Sample(std::vector<float>{}, kNone, kNone).ok());
}

TEST(SamplerTest, RejectsBadContextAndParams) {
  SamplingParams p = Seeded(1);
  p.repetition_penalty = 1.2f;
  Sampler s(p);
  auto bad = s.Sample({0.0f, 1.0f}, {0, 5}, kNone);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("prompt_tokens[1]"));
  EXPECT_FALSE(s.Sample({0.0f, 1.0f}, kNone, {-1}).ok());
  p.top_p = 0.0f;
  Sampler invalid(p);
  EXPECT_FALSE(invalid.Sample({0.0f, 1.0f}, kNone, kNone).ok());
}

TEST(SamplerTest, TinyTemperatureDoesNotOverflow) {
  SamplingParams p = Seeded(1);
  p.temperature = 1e-30f;
  Sampler s(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(SampleId(s, {80.0f, 100.0f, 99.0f}), 1);
}

TEST(SamplerTest, LargeVocabularyWithAllFilters) {
  std::mt19937 gen(17);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> logits(151936);
  for (float& l : logits) l = normal(gen);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // The penalty only lowers logits and touches at most 53 tokens, so the penalized top 50 lie
  // within the raw top 103.
  std::partial_sort(order.begin(), order.begin() + 103, order.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const std::set<int32_t> allowed(order.begin(), order.begin() + 103);
  SamplingParams p = Seeded(8);
  p.top_k = 50;
  p.top_p = 0.9f;
  p.min_p = 0.01f;
  p.temperature = 0.7f;
  p.repetition_penalty = 1.1f;
  p.logprobs = 5;
  Sampler s(p);
  std::vector<int32_t> generated;
  for (int i = 0; i < 50; ++i) {
    auto t = s.Sample(logits, {1, 2, 3}, generated);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(allowed.count(t->id)) << t->id;
    EXPECT_EQ(t->top.size(), 5u);
    generated.push_back(t->id);
  }
}

}  // namespace
}  // namespace tessera::runtime
