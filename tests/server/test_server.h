// Test helpers for the server: an in-process tessera server (model + scheduler + TesseraServer)
// bound to OS-picked ports on 127.0.0.1, a Generation stub for it, a bare HTTP GET for the side
// port, and a Prometheus text reader. Everything the server tests share, so each test reads as
// the scenario it checks.
#ifndef TESSERA_TESTS_SERVER_TEST_SERVER_H_
#define TESSERA_TESTS_SERVER_TEST_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/runtime/scheduler.h"
#include "grpcpp/channel.h"
#include "server/loaded_model.h"
#include "server/server.h"
#include "tessera/v1/generation.grpc.pb.h"

namespace tessera::server::testing {

inline const std::string kStoriesPath =
    std::string(TESSERA_SHARED_DIR) + "/models/stories260K/stories260K.gguf";

struct TestServerOptions {
  std::string model_path;  // empty = demo
  runtime::SchedulerOptions scheduler;
  ServerOptions server;  // addresses default to 127.0.0.1:0
  bool attach = true;    // false: leave the server "loading"
};

class TestServer {
 public:
  static absl::StatusOr<std::unique_ptr<TestServer>> Start(TestServerOptions options);
  ~TestServer();

  std::string grpc_target() const;
  int http_port() const { return server_->http_port(); }
  TesseraServer& server() { return *server_; }
  runtime::Scheduler& scheduler() { return *scheduler_; }
  const LoadedModel& model() const { return *model_; }
  // Plaintext channel and stub to this server.
  std::unique_ptr<tessera::v1::Generation::Stub> NewStub() const;
  std::shared_ptr<grpc::Channel> NewChannel() const;
  void Attach();

 private:
  std::unique_ptr<LoadedModel> model_;
  std::unique_ptr<runtime::Scheduler> scheduler_;
  std::unique_ptr<TesseraServer> server_;
};

// The result of one Generate stream.
struct StreamResult {
  grpc::Status status;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<tessera::v1::GenerateResponse> chunks;
  tessera::v1::GenerateResponse last;  // the message with finish_reason set
};

StreamResult RunGenerate(tessera::v1::Generation::Stub& stub,
                         const tessera::v1::GenerateRequest& request,
                         const std::string& api_key = "",
                         absl::Duration timeout = absl::Seconds(60));

// A greedy request with `max_new_tokens` that ignores EOS (so the length is exact).
tessera::v1::GenerateRequest GreedyRequest(const std::string& prompt, int max_new_tokens);

struct HttpResponse {
  int code = 0;
  std::string body;
};
// GET http://127.0.0.1:port/path (HTTP/1.0, no keep-alive).
absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path);

// The value of one series in Prometheus text, e.g. `tessera_requests_total{code="OK"}` or
// `tessera_engine_steps_total`; NOT_FOUND when absent.
absl::StatusOr<double> MetricValue(const std::string& text, const std::string& series);

// Polls `condition` every 10 ms until true or `timeout`; returns its last value.
bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(10));

// Runs a shell command; returns its exit status (-1 when it could not run).
int Shell(const std::string& command);

// A fresh temporary directory (removed by the caller or left in /tmp).
std::string MakeTempDir();

}  // namespace tessera::server::testing

#endif  // TESSERA_TESTS_SERVER_TEST_SERVER_H_
