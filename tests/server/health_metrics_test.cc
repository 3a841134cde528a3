// Health and metrics: grpc.health.v1 liveness/readiness through the life cycle (loading,
// serving, draining), the HTTP /healthz and /readyz twins, and /metrics: the whole catalog is
// present, counters match exactly what the test sent, and `promtool check metrics` accepts it.
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "engine/common/logging.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace tessera::server::testing {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// The serving status of `service`, or NOT_FOUND / transport errors as UNKNOWN.
HealthCheckResponse::ServingStatus Check(TestServer& ts, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(ts.NewChannel());
  grpc::ClientContext ctx;
  HealthCheckRequest req;
  req.set_service(service);
  HealthCheckResponse resp;
  const grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return HealthCheckResponse::UNKNOWN;
  return resp.status();
}

TEST(HealthTest, LivenessAndReadinessFollowTheLifeCycle) {
  TestServerOptions o;
  o.attach = false;
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();
  TestServer& server = **ts;

  // Loading: alive, not ready.
  EXPECT_EQ(Check(server, ""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(server, "tessera.v1.Generation"), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Check(server, "no.such.Service"), HealthCheckResponse::UNKNOWN);  // NOT_FOUND
  auto healthz = HttpGet(server.http_port(), "/healthz");
  ASSERT_TRUE(healthz.ok()) << healthz.status();
  EXPECT_EQ(healthz->code, 200);
  auto readyz = HttpGet(server.http_port(), "/readyz");
  ASSERT_TRUE(readyz.ok());
  EXPECT_EQ(readyz->code, 503);
  EXPECT_NE(readyz->body.find("loading"), std::string::npos);

  // Loaded.
  server.Attach();
  EXPECT_EQ(Check(server, "tessera.v1.Generation"), HealthCheckResponse::SERVING);
  readyz = HttpGet(server.http_port(), "/readyz");
  ASSERT_TRUE(readyz.ok());
  EXPECT_EQ(readyz->code, 200);

  // Draining: not ready, still alive; new requests are refused.
  EXPECT_TRUE(server.server().Drain(absl::Seconds(1)));
  EXPECT_EQ(Check(server, "tessera.v1.Generation"), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Check(server, ""), HealthCheckResponse::SERVING);
  readyz = HttpGet(server.http_port(), "/readyz");
  ASSERT_TRUE(readyz.ok());
  EXPECT_EQ(readyz->code, 503);
  EXPECT_NE(readyz->body.find("draining"), std::string::npos);
  auto stub = server.NewStub();
  EXPECT_EQ(RunGenerate(*stub, GreedyRequest("late", 2)).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(HttpGet(server.http_port(), "/nope")->code, 404);
}

TEST(MetricsTest, CatalogIsCompleteAndCountersMatchWhatWasSent) {
  auto ts = TestServer::Start({});
  ASSERT_TRUE(ts.ok()) << ts.status();
  TestServer& server = **ts;
  auto stub = server.NewStub();

  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (int n : {3, 5, 7}) {
    const StreamResult r = RunGenerate(*stub, GreedyRequest("metrics", n));
    ASSERT_TRUE(r.status.ok());
    prompt_tokens += r.last.usage().prompt_tokens();
    completion_tokens += r.last.usage().completion_tokens();
  }
  for (int i = 0; i < 2; ++i) {
    tessera::v1::GenerateRequest bad = GreedyRequest("x", 2);
    bad.mutable_sampling()->set_temperature(-1);
    EXPECT_EQ(RunGenerate(*stub, bad).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }

  auto resp = HttpGet(server.http_port(), "/metrics");
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->code, 200);
  const std::string& m = resp->body;
  auto value = [&](const std::string& series) {
    auto v = MetricValue(m, series);
    EXPECT_TRUE(v.ok()) << v.status() << "\n" << m;
    return v.ok() ? *v : -1.0;
  };
  EXPECT_EQ(value("tessera_requests_total{code=\"OK\"}"), 3);
  EXPECT_EQ(value("tessera_requests_total{code=\"INVALID_ARGUMENT\"}"), 2);
  EXPECT_EQ(value("tessera_prompt_tokens_total"), prompt_tokens);
  EXPECT_EQ(value("tessera_generation_tokens_total"), completion_tokens);
  EXPECT_EQ(value("tessera_generation_tokens_total"), 15);
  EXPECT_EQ(value("tessera_request_duration_seconds_count"), 3);
  EXPECT_EQ(value("tessera_queue_time_seconds_count"), 3);
  EXPECT_EQ(value("tessera_time_to_first_token_seconds_count"), 3);
  // 15 tokens in 3 streams: 12 gaps between consecutive tokens.
  EXPECT_EQ(value("tessera_inter_token_latency_seconds_count"), 12);
  EXPECT_EQ(value("tessera_requests_running"), 0);
  EXPECT_EQ(value("tessera_requests_waiting"), 0);
  EXPECT_EQ(value("tessera_kv_cache_usage_ratio"), 0);
  EXPECT_GT(value("tessera_model_load_seconds"), 0);
  const std::string kernel = server.model().plan.at(0).kernel;
  EXPECT_EQ(value(absl::StrCat("tessera_linear_layers{format=\"f32\",kernel=\"", kernel, "\"}")),
            15);
  // Each request: one prefill step (which yields the first token), then one step per token.
  EXPECT_EQ(value("tessera_engine_steps_total"), 15);
  EXPECT_EQ(value("tessera_engine_decode_steps_total"), 12);
  for (const char* family :
       {"tessera_requests_total", "tessera_requests_running", "tessera_requests_waiting",
        "tessera_prompt_tokens_total", "tessera_generation_tokens_total",
        "tessera_time_to_first_token_seconds", "tessera_inter_token_latency_seconds",
        "tessera_request_duration_seconds", "tessera_queue_time_seconds",
        "tessera_kv_cache_usage_ratio", "tessera_model_load_seconds", "tessera_linear_layers",
        "tessera_engine_steps_total", "tessera_engine_decode_steps_total"}) {
    EXPECT_NE(m.find(absl::StrCat("# TYPE ", family, " ")), std::string::npos) << family;
  }

  if (Shell("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not found (Debian package 'prometheus'; tools/setup.sh installs "
                    "it): skipping `promtool check metrics`";
  }
  const std::string path = MakeTempDir() + "/metrics.txt";
  {
    std::ofstream out(path);
    out << m;
  }
  EXPECT_EQ(Shell(absl::StrCat("promtool check metrics < ", path)), 0) << m;
}

}  // namespace
}  // namespace tessera::server::testing
