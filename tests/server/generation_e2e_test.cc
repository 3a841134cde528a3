// The Generation service end to end over loopback gRPC with the C++ client and the built-in demo
// model: streaming, the final message, tokenizer RPCs, model info, request validation (each bad
// field is INVALID_ARGUMENT naming it, and the server keeps serving), queue overflow, client
// cancellation and deadlines (both give the KV blocks back). And one quantized checkpoint
// (compressed-tensors W4A16): its model info and plan, and generation on it.
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/model/demo_model.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace tessera::server::testing {
namespace {

using tessera::v1::GenerateRequest;

// One server for the whole suite: stopping one takes up to 2 s (civetweb's poll quantum).
class DemoServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    TestServerOptions o;
    o.scheduler.max_running = 4;
    o.scheduler.max_queued = 8;
    o.scheduler.max_new_tokens = 1024;
    auto ts = TestServer::Start(o);
    ASSERT_TRUE(ts.ok()) << ts.status();
    server_ = *std::move(ts);
  }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    stub_ = server_->NewStub();
  }

  static inline std::unique_ptr<TestServer> server_;
  std::unique_ptr<tessera::v1::Generation::Stub> stub_;
};

TEST_F(DemoServerTest, StreamsTokensAndFinishesWithUsage) {
  const StreamResult r = RunGenerate(*stub_, GreedyRequest("Hello", 24));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_GE(r.chunks.size(), 2u);  // streamed, not one blob
  EXPECT_EQ(r.token_ids.size(), 24u);
  EXPECT_EQ(r.last.finish_reason(), tessera::v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(r.last.usage().prompt_tokens(), 6);  // <s> + 5 bytes
  EXPECT_EQ(r.last.usage().completion_tokens(), 24);
  EXPECT_EQ(r.last.usage().total_tokens(), 30);
  EXPECT_GT(r.last.timings().total_seconds(), 0);
  EXPECT_GE(r.last.timings().total_seconds(), r.last.timings().time_to_first_token_seconds());
  EXPECT_FALSE(r.last.request_id().empty());
  for (const auto& c : r.chunks) EXPECT_EQ(c.request_id(), r.last.request_id());
  // Only the last message is final.
  for (size_t i = 0; i + 1 < r.chunks.size(); ++i) {
    EXPECT_EQ(r.chunks[i].finish_reason(), tessera::v1::FINISH_REASON_UNSPECIFIED);
  }
  // The demo head only favours printable bytes, and the streamed text is the decoded tokens.
  grpc::ClientContext ctx;
  tessera::v1::DetokenizeRequest dreq;
  for (int32_t id : r.token_ids) dreq.add_token_ids(id);
  dreq.set_skip_special_tokens(true);
  tessera::v1::DetokenizeResponse dresp;
  ASSERT_TRUE(stub_->Detokenize(&ctx, dreq, &dresp).ok());
  EXPECT_EQ(r.text, dresp.text());
  for (char c : r.text) EXPECT_TRUE((c >= 0x20 && c < 0x7f) || c == '\n') << int(c);
}

TEST_F(DemoServerTest, GreedyIsDeterministicAndClientRequestIdIsEchoed) {
  GenerateRequest req = GreedyRequest("abc", 16);
  req.set_request_id("my-id-1");
  const StreamResult a = RunGenerate(*stub_, req);
  const StreamResult b = RunGenerate(*stub_, req);
  ASSERT_TRUE(a.status.ok() && b.status.ok());
  EXPECT_EQ(a.token_ids, b.token_ids);
  EXPECT_EQ(a.last.request_id(), "my-id-1");
}

TEST_F(DemoServerTest, TokenIdPromptsAndLogprobs) {
  GenerateRequest req = GreedyRequest("", 5);
  req.mutable_token_ids()->add_ids(model::kDemoBosId);
  req.mutable_token_ids()->add_ids(model::kDemoFirstByteId + 'x');
  req.mutable_logprobs()->set_enabled(true);
  req.mutable_logprobs()->set_top_logprobs(3);
  const StreamResult r = RunGenerate(*stub_, req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.last.usage().prompt_tokens(), 2);
  int n = 0;
  for (const auto& c : r.chunks) {
    ASSERT_EQ(c.logprobs_size(), c.token_ids_size());
    for (int i = 0; i < c.logprobs_size(); ++i, ++n) {
      const auto& lp = c.logprobs(i);
      EXPECT_EQ(lp.token_id(), c.token_ids(i));
      EXPECT_LE(lp.logprob(), 0);
      ASSERT_EQ(lp.top_logprobs_size(), 3);
      // Greedy: the chosen token is the most likely one.
      EXPECT_EQ(lp.top_logprobs(0).token_id(), lp.token_id());
      EXPECT_FLOAT_EQ(lp.top_logprobs(0).logprob(), lp.logprob());
    }
  }
  EXPECT_EQ(n, 5);
}

TEST_F(DemoServerTest, StopStringsEndTheStream) {
  // Find what greedy says, then stop on a piece of it.
  const StreamResult full = RunGenerate(*stub_, GreedyRequest("Once", 32));
  ASSERT_TRUE(full.status.ok());
  ASSERT_GE(full.text.size(), 12u);
  const std::string stop = full.text.substr(8, 2);
  GenerateRequest req = GreedyRequest("Once", 32);
  req.mutable_stopping()->add_stop_strings(stop);
  const StreamResult r = RunGenerate(*stub_, req);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.last.finish_reason(), tessera::v1::FINISH_REASON_STOP);
  EXPECT_EQ(r.text, full.text.substr(0, full.text.find(stop)));
}

TEST_F(DemoServerTest, TokenizeDetokenizeRoundTrip) {
  grpc::ClientContext c1;
  tessera::v1::TokenizeRequest treq;
  treq.set_text("hi <s>");
  tessera::v1::TokenizeResponse tresp;
  ASSERT_TRUE(stub_->Tokenize(&c1, treq, &tresp).ok());
  const std::vector<int32_t> expected = {model::kDemoBosId, model::kDemoFirstByteId + 'h',
                                         model::kDemoFirstByteId + 'i',
                                         model::kDemoFirstByteId + ' ', model::kDemoBosId};
  EXPECT_EQ(std::vector<int32_t>(tresp.token_ids().begin(), tresp.token_ids().end()), expected);
  ASSERT_EQ(tresp.tokens_size(), 5);
  EXPECT_EQ(tresp.tokens(1), "h");

  grpc::ClientContext c2;
  tessera::v1::DetokenizeRequest dreq;
  for (int32_t id : expected) dreq.add_token_ids(id);
  tessera::v1::DetokenizeResponse dresp;
  ASSERT_TRUE(stub_->Detokenize(&c2, dreq, &dresp).ok());
  EXPECT_EQ(dresp.text(), "<s>hi <s>");

  grpc::ClientContext c3;
  dreq.add_token_ids(100000);
  const grpc::Status bad = stub_->Detokenize(&c3, dreq, &dresp);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("token_ids[5]"), std::string::npos) << bad.error_message();
}

TEST_F(DemoServerTest, ModelInfoDescribesTheDemo) {
  grpc::ClientContext ctx;
  tessera::v1::ModelInfo info;
  ASSERT_TRUE(stub_->GetModelInfo(&ctx, {}, &info).ok());
  EXPECT_TRUE(info.is_demo());
  EXPECT_EQ(info.model(), "demo");
  EXPECT_EQ(info.architecture(), "tessera-demo-llama");
  EXPECT_EQ(info.context_length(), 2048);
  EXPECT_EQ(info.vocab_size(), model::kDemoVocabSize);
  EXPECT_EQ(info.bos_token_id(), model::kDemoBosId);
  EXPECT_NE(info.tokenizer().find("demo"), std::string::npos);
  EXPECT_EQ(info.quantization_method(), server_->model().quantization_method());
  EXPECT_FALSE(info.quantization_method().empty());
  EXPECT_EQ(info.backend(), "cpu");
  EXPECT_EQ(info.device(), "cpu");
  ASSERT_EQ(info.precision_plan_size(), 2 * 7 + 1);
  EXPECT_EQ(info.precision_plan(0).module(), "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(info.precision_plan(0).weight_format(), "f32");
  EXPECT_EQ(info.precision_plan(0).out_features(), 64);
  EXPECT_EQ(info.precision_plan(0).in_features(), 64);
  EXPECT_FALSE(info.precision_plan(0).description().empty());
  EXPECT_FALSE(info.precision_plan(0).kernel().empty());
  EXPECT_FALSE(info.precision_plan(0).reason().empty());
  EXPECT_EQ(info.precision_plan(14).module(), "lm_head");
  EXPECT_EQ(info.limits().max_running_requests(), 4);
  EXPECT_EQ(info.limits().max_queued_requests(), 8);
  EXPECT_EQ(info.limits().max_new_tokens(), 1024);
  EXPECT_EQ(info.limits().max_prompt_tokens(), 2048);
  EXPECT_GT(info.limits().kv_cache_tokens(), 0);
}

struct BadCase {
  const char* name;
  std::function<void(GenerateRequest*)> mutate;
  const char* field;  // must appear in the error message
};

TEST_F(DemoServerTest, BadRequestsAreInvalidArgumentNamingTheFieldAndServingContinues) {
  const std::vector<BadCase> cases = {
      {"no prompt", [](GenerateRequest* r) { r->clear_prompt(); }, "prompt"},
      {"empty text", [](GenerateRequest* r) { r->set_text(""); }, "text"},
      {"empty ids", [](GenerateRequest* r) { r->mutable_token_ids(); }, "token_ids.ids"},
      {"unknown id",
       [](GenerateRequest* r) {
         r->mutable_token_ids()->add_ids(1);
         r->mutable_token_ids()->add_ids(5000);
       },
       "token_ids.ids[1]"},
      {"negative id", [](GenerateRequest* r) { r->mutable_token_ids()->add_ids(-3); },
       "token_ids.ids[0]"},
      {"negative temperature",
       [](GenerateRequest* r) { r->mutable_sampling()->set_temperature(-1); },
       "sampling.temperature"},
      {"nan temperature", [](GenerateRequest* r) { r->mutable_sampling()->set_temperature(NAN); },
       "sampling.temperature"},
      {"top_p zero", [](GenerateRequest* r) { r->mutable_sampling()->set_top_p(0); },
       "sampling.top_p"},
      {"top_p above one", [](GenerateRequest* r) { r->mutable_sampling()->set_top_p(1.5f); },
       "sampling.top_p"},
      {"negative top_k", [](GenerateRequest* r) { r->mutable_sampling()->set_top_k(-1); },
       "sampling.top_k"},
      {"min_p", [](GenerateRequest* r) { r->mutable_sampling()->set_min_p(2); }, "sampling.min_p"},
      {"repetition penalty",
       [](GenerateRequest* r) { r->mutable_sampling()->set_repetition_penalty(0); },
       "sampling.repetition_penalty"},
      {"presence penalty",
       [](GenerateRequest* r) { r->mutable_sampling()->set_presence_penalty(3); },
       "sampling.presence_penalty"},
      {"max_new_tokens over the limit",
       [](GenerateRequest* r) { r->mutable_stopping()->set_max_new_tokens(1025); },
       "stopping.max_new_tokens"},
      {"max_new_tokens zero",
       [](GenerateRequest* r) { r->mutable_stopping()->set_max_new_tokens(0); },
       "stopping.max_new_tokens"},
      {"too many stop strings",
       [](GenerateRequest* r) {
         for (int i = 0; i < 17; ++i) r->mutable_stopping()->add_stop_strings(absl::StrCat(i));
       },
       "stopping.stop_strings"},
      {"empty stop string", [](GenerateRequest* r) { r->mutable_stopping()->add_stop_strings(""); },
       "stopping.stop_strings[0]"},
      {"bad stop token",
       [](GenerateRequest* r) { r->mutable_stopping()->add_stop_token_ids(9999); },
       "stopping.stop_token_ids[0]"},
      {"prompt longer than the context",
       [](GenerateRequest* r) { r->set_text(std::string(3000, 'a')); }, "text"},
      {"prompt + max_new_tokens over the context",
       [](GenerateRequest* r) {
         r->set_text(std::string(1800, 'a'));
         r->mutable_stopping()->set_max_new_tokens(400);
       },
       "stopping.max_new_tokens"},
      {"top_logprobs",
       [](GenerateRequest* r) {
         r->mutable_logprobs()->set_enabled(true);
         r->mutable_logprobs()->set_top_logprobs(21);
       },
       "logprobs.top_logprobs"},
      {"request_id too long", [](GenerateRequest* r) { r->set_request_id(std::string(200, 'x')); },
       "request_id"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    GenerateRequest req = GreedyRequest("ok", 4);
    c.mutate(&req);
    const StreamResult r = RunGenerate(*stub_, req);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << r.status.error_message();
    EXPECT_NE(r.status.error_message().find(c.field), std::string::npos)
        << "message: " << r.status.error_message();
    EXPECT_TRUE(r.chunks.empty());
  }
  const StreamResult ok = RunGenerate(*stub_, GreedyRequest("still serving", 3));
  ASSERT_TRUE(ok.status.ok()) << ok.status.error_message();
  EXPECT_EQ(ok.token_ids.size(), 3u);
  EXPECT_EQ(server_->scheduler().Stats().kv_used_blocks, 0);
}

TEST_F(DemoServerTest, ClientCancelMidStreamFreesKvBlocks) {
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, GreedyRequest(std::string(1000, 'c'), 1000));
  tessera::v1::GenerateResponse chunk;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader->Read(&chunk));
  EXPECT_GT(server_->scheduler().Stats().kv_used_blocks, 0);
  ctx.TryCancel();
  while (reader->Read(&chunk)) {
  }
  const grpc::Status status = reader->Finish();
  if (status.ok()) GTEST_SKIP() << "this machine generated 1000 tokens before the cancel arrived";
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WaitFor([&] {
    const auto s = server_->scheduler().Stats();
    return s.kv_used_blocks == 0 && s.running == 0 && s.waiting == 0;
  })) << "KV blocks still held: "
      << server_->scheduler().Stats().kv_used_blocks;
  EXPECT_EQ(server_->scheduler().Stats().kv_usage_ratio, 0);
}

TEST_F(DemoServerTest, DeadlineExpiryEndsTheRequestAndFreesKvBlocks) {
  // Long enough that it cannot finish before the deadline on any machine.
  GenerateRequest req = GreedyRequest(std::string(1000, 'z'), 500);
  const absl::Time start = absl::Now();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(30)));
  auto reader = stub_->Generate(&ctx, req);
  tessera::v1::GenerateResponse chunk;
  int tokens = 0;
  while (reader->Read(&chunk)) tokens += chunk.token_ids_size();
  const grpc::Status status = reader->Finish();
  if (status.ok()) GTEST_SKIP() << "this machine generated 500 tokens within 30 ms";
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(tokens, 500);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(WaitFor([&] { return server_->scheduler().Stats().kv_used_blocks == 0; }));
  EXPECT_TRUE(WaitFor([&] { return server_->scheduler().Stats().running == 0; }));
}

TEST(QueueTest, OverflowIsResourceExhausted) {
  TestServerOptions o;
  o.scheduler.max_running = 1;
  o.scheduler.max_queued = 1;
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();
  auto stub = (*ts)->NewStub();
  // 1: running (we have its first token); 2: waiting behind it; 3: no room.
  grpc::ClientContext c1, c2;
  auto r1 = stub->Generate(&c1, GreedyRequest(std::string(1000, 'f'), 1000));
  tessera::v1::GenerateResponse chunk;
  ASSERT_TRUE(r1->Read(&chunk));
  auto r2 = stub->Generate(&c2, GreedyRequest("second", 10));
  ASSERT_TRUE(WaitFor([&] { return (*ts)->scheduler().Stats().waiting == 1; }));
  const StreamResult r3 = RunGenerate(*stub, GreedyRequest("third", 10));
  EXPECT_EQ(r3.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << r3.status.error_message();
  EXPECT_NE(r3.status.error_message().find("queue"), std::string::npos);
  c1.TryCancel();
  while (r1->Read(&chunk)) {
  }
  // The queued request then runs to completion.
  int n = 0;
  while (r2->Read(&chunk)) n += chunk.token_ids_size();
  EXPECT_TRUE(r2->Finish().ok());
  EXPECT_EQ(n, 10);
  r1->Finish();
}

TEST(LoadingTest, UnavailableUntilTheEngineIsAttached) {
  TestServerOptions o;
  o.attach = false;
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();
  auto stub = (*ts)->NewStub();
  const StreamResult r = RunGenerate(*stub, GreedyRequest("early", 2));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  (*ts)->Attach();
  EXPECT_TRUE(RunGenerate(*stub, GreedyRequest("late", 2)).status.ok());
}

// A quantized checkpoint served end to end: GetModelInfo reports the checkpoint's quantization
// and the per-layer plan it produced, and generation runs on it.
// (In the LoadingTest suite so the usual server test filters select it.)
TEST(LoadingTest, QuantizedCompressedTensorsW4A16CheckpointReportsItsPlanAndGenerates) {
  TestServerOptions o;
  o.model_path = std::string(TESSERA_SOURCE_DIR) + "/tests/data/quant/ct_w4a16";
  o.scheduler.max_new_tokens = 64;
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();
  auto stub = (*ts)->NewStub();

  grpc::ClientContext ctx;
  tessera::v1::ModelInfo info;
  ASSERT_TRUE(stub->GetModelInfo(&ctx, {}, &info).ok());
  EXPECT_FALSE(info.is_demo());
  EXPECT_NE(info.quantization_method().find("compressed-tensors"), std::string::npos)
      << info.quantization_method();
  EXPECT_EQ(info.num_layers(), 2);
  // One row per linear layer: 2 layers x (q, k, v, o, gate, up, down) + lm_head.
  ASSERT_EQ(info.precision_plan_size(), 2 * 7 + 1);
  EXPECT_EQ(info.precision_plan(14).module(), "lm_head");
  int down_proj_rows = 0;
  for (const tessera::v1::PrecisionPlanRow& row : info.precision_plan()) {
    if (row.module() != "model.layers.0.mlp.down_proj") continue;
    ++down_proj_rows;
    EXPECT_EQ(row.weight_format(), "int4_wo_32");
    EXPECT_EQ(row.reason().rfind("checkpoint: compressed-tensors", 0), 0u) << row.reason();
    EXPECT_EQ(row.out_features(), info.hidden_size());
    EXPECT_FALSE(row.kernel().empty());
  }
  EXPECT_EQ(down_proj_rows, 1);

  const StreamResult r = RunGenerate(*stub, GreedyRequest("Hello", 8));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.token_ids.size(), 8u);
  EXPECT_EQ(r.last.finish_reason(), tessera::v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(r.last.usage().completion_tokens(), 8);
  for (int32_t id : r.token_ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, info.vocab_size());
  }
  // Greedy is deterministic on the quantized path too.
  EXPECT_EQ(RunGenerate(*stub, GreedyRequest("Hello", 8)).token_ids, r.token_ids);
}

}  // namespace
}  // namespace tessera::server::testing
