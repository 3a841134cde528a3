// Continuous batching through the whole server with the real stories260K model: 16 concurrent
// greedy streams return exactly what 16 sequential runs return (and what llama.cpp returns for
// the prompts it has references for), and the concurrent run takes fewer engine steps, read
// from the /metrics endpoint as an operator would; the same for a mixture-of-experts model.
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/server/test_server.h"

namespace tessera::server::testing {
namespace {

constexpr int kStreams = 16;
constexpr int kNewTokens = 64;

double Steps(int http_port, const char* series) {
  auto resp = HttpGet(http_port, "/metrics");
  EXPECT_TRUE(resp.ok()) << resp.status();
  if (!resp.ok()) return -1;
  auto v = MetricValue(resp->body, series);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : -1;
}

// `n` requests run one after another, then all at once from their own channels (as real
// clients): the sequential results, then the concurrent ones.
template <typename Request>
std::pair<std::vector<StreamResult>, std::vector<StreamResult>> SequentialThenConcurrent(
    TestServer& server, int n, const Request& request, const std::function<void()>& between) {
  auto stub = server.NewStub();
  std::vector<StreamResult> sequential(n), concurrent(n);
  for (int i = 0; i < n; ++i) sequential[i] = RunGenerate(*stub, request(i));
  between();
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto own_stub = server.NewStub();
      concurrent[i] = RunGenerate(*own_stub, request(i));
    });
  }
  for (auto& t : threads) t.join();
  return {std::move(sequential), std::move(concurrent)};
}

TEST(BatchingTest, ConcurrentGreedyStreamsEqualSequentialRunsInFewerSteps) {
  std::ifstream in(std::string(TESSERA_SHARED_DIR) + "/reference/stories260K-greedy.json");
  ASSERT_TRUE(in) << "missing ../shared/reference/stories260K-greedy.json";
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json ref = nlohmann::json::parse(ss.str());

  TestServerOptions o;
  o.model_path = kStoriesPath;
  o.scheduler.max_running = kStreams;
  o.scheduler.max_queued = kStreams;
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();
  TestServer& server = **ts;

  // The reference prompts first (so llama.cpp is the oracle for those), then more of our own.
  std::vector<std::string> prompts;
  std::vector<std::vector<int32_t>> expected_ids;
  for (const auto& r : ref["results"]) {
    if (prompts.size() == kStreams) break;
    prompts.push_back(r["prompt"].get<std::string>());
    expected_ids.push_back(r["generated_ids"].get<std::vector<int32_t>>());
  }
  const char* extra[] = {"The cat",       "One day",     "Tim had a",       "The sun was",
                         "A little bird", "Mom said",    "The dog ran",     "Sue liked",
                         "In the park",   "Ben and Mia", "There was a big", "The boy saw",
                         "Once there",    "Lucy wanted", "The tree",        "It was a"};
  for (const char* p : extra) {
    if (prompts.size() == kStreams) break;
    prompts.push_back(p);
  }
  ASSERT_EQ(prompts.size(), static_cast<size_t>(kStreams));

  auto request = [&](int i) {
    tessera::v1::GenerateRequest req = GreedyRequest(prompts[i], kNewTokens);
    req.mutable_stopping()->set_ignore_eos(true);
    return req;
  };

  const double steps0 = Steps(server.http_port(), "tessera_engine_steps_total");
  double steps1 = 0;
  const auto [sequential, concurrent] = SequentialThenConcurrent(
      server, kStreams, request,
      [&] { steps1 = Steps(server.http_port(), "tessera_engine_steps_total"); });
  const double steps2 = Steps(server.http_port(), "tessera_engine_steps_total");
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(sequential[i].status.ok()) << sequential[i].status.error_message();
    ASSERT_EQ(sequential[i].token_ids.size(), static_cast<size_t>(kNewTokens));
  }

  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(prompts[i]);
    ASSERT_TRUE(concurrent[i].status.ok()) << concurrent[i].status.error_message();
    EXPECT_EQ(concurrent[i].token_ids, sequential[i].token_ids);
    EXPECT_EQ(concurrent[i].text, sequential[i].text);
    if (i < static_cast<int>(expected_ids.size())) {
      EXPECT_EQ(sequential[i].token_ids, expected_ids[i]) << "differs from llama.cpp";
    }
  }
  const double sequential_steps = steps1 - steps0;
  const double concurrent_steps = steps2 - steps1;
  // Sequentially every token is its own step (plus the prefill step of each request).
  EXPECT_GE(sequential_steps, kStreams * kNewTokens);
  // Batched, all streams share steps; allow for streams arriving over a few steps.
  EXPECT_LT(concurrent_steps, sequential_steps / 4)
      << "sequential " << sequential_steps << " steps, concurrent " << concurrent_steps;
  EXPECT_EQ(server.scheduler().Stats().kv_used_blocks, 0);
}

// Serves `model` (relative to the repository) to `prompts.size()` streams of `tokens` greedy
// tokens each, first one after another, then all at once: the concurrent streams must return
// what the sequential runs returned, and every KV block must be free afterwards. `check_info`
// looks at GetModelInfo first.
void ExpectConcurrentEqualsSequential(
    const std::string& model, const std::vector<std::string>& prompts, int tokens,
    const std::function<void(const tessera::v1::ModelInfo&)>& check_info) {
  const int streams = static_cast<int>(prompts.size());
  TestServerOptions o;
  o.model_path = std::string(TESSERA_SOURCE_DIR) + "/" + model;
  o.scheduler.max_running = streams;
  o.scheduler.max_queued = streams;
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();
  TestServer& server = **ts;
  auto stub = server.NewStub();
  grpc::ClientContext ctx;
  tessera::v1::ModelInfo info;
  ASSERT_TRUE(stub->GetModelInfo(&ctx, {}, &info).ok());
  check_info(info);
  auto request = [&](int i) {
    tessera::v1::GenerateRequest req = GreedyRequest(prompts[i], tokens);
    req.mutable_stopping()->set_ignore_eos(true);
    return req;
  };
  const auto [sequential, concurrent] = SequentialThenConcurrent(server, streams, request, [] {});
  for (int i = 0; i < streams; ++i) {
    SCOPED_TRACE(prompts[i]);
    ASSERT_TRUE(sequential[i].status.ok()) << sequential[i].status.error_message();
    ASSERT_EQ(sequential[i].token_ids.size(), static_cast<size_t>(tokens));
    ASSERT_TRUE(concurrent[i].status.ok()) << concurrent[i].status.error_message();
    EXPECT_EQ(concurrent[i].token_ids, sequential[i].token_ids);
  }
  EXPECT_EQ(server.scheduler().Stats().kv_used_blocks, 0);
}

// A mixture-of-experts model served: llama.cpp's Q4_0 of the qwen3_moe fixture (stacked Q4_0
// experts). GetModelInfo lists every expert in the plan, and 8 concurrent greedy streams, whose
// tokens route to different experts in the same steps, return what 8 sequential runs return.
TEST(BatchingTest, MixtureOfExpertsConcurrentStreamsEqualSequential) {
  ExpectConcurrentEqualsSequential(
      "tests/data/models/qwen3_moe/model-Q4_0.gguf",
      {"The little robot", "Once upon a time", "The baker", "Rivers run", "Questions are good",
       "Mia loved maps", "At night the", "Testing"},
      24, [](const tessera::v1::ModelInfo& info) {
        // 2 layers x (4 attention + 8 experts x 3) + lm_head.
        ASSERT_EQ(info.precision_plan_size(), 2 * (4 + 24) + 1);
        EXPECT_EQ(info.precision_plan(4).module(), "model.layers.0.mlp.experts.0.gate_proj");
        EXPECT_EQ(info.precision_plan(4).weight_format(), "gguf_q4_0");
      });
}

// Sliding windows and soft caps served: the gemma2 fixture's GGUF twin (layer 0 attends through
// an 8-position window, layer 1 over everything; attention and final logit soft caps). Each
// stream runs far past the window, and each row's window starts at its own position, whichever
// rows share a step: 6 concurrent greedy streams return what 6 sequential runs return.
TEST(BatchingTest, SlidingWindowGemmaConcurrentStreamsEqualSequential) {
  ExpectConcurrentEqualsSequential(
      "tests/data/models/gemma2/model.gguf",
      {"The little robot looked at the sky", "Once upon a time", "Rivers",
       "Mia loved maps and the sea and the long road home", "At night the", "Testing"},
      28, [](const tessera::v1::ModelInfo& info) { EXPECT_EQ(info.architecture(), "gemma2"); });
}

// gpt-oss with OpenAI's MXFP4 expert layout: attention sinks, windows of 8, biased experts chosen
// per token; concurrent streams (each routing its own tokens) equal sequential runs.
TEST(BatchingTest, GptOssMxfp4ConcurrentStreamsEqualSequential) {
  ExpectConcurrentEqualsSequential(
      "tests/data/quant/mxfp4_gpt_oss",
      {"The little robot looked at the sky", "Once upon a time", "Rivers",
       "Mia loved maps and the sea and the long road home", "At night the", "Testing"},
      28, [](const tessera::v1::ModelInfo& info) {
        EXPECT_EQ(info.architecture(), "GptOssForCausalLM");
      });
}

}  // namespace
}  // namespace tessera::server::testing
