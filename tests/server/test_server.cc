#include "tests/server/test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "server/client_channel.h"

namespace tessera::server::testing {

absl::StatusOr<std::unique_ptr<TestServer>> TestServer::Start(TestServerOptions options) {
  auto ts = std::make_unique<TestServer>();
  if (options.server.grpc_address == ServerOptions().grpc_address) {
    options.server.grpc_address = "127.0.0.1:0";
  }
  if (options.server.http_address == ServerOptions().http_address) {
    options.server.http_address = "127.0.0.1:0";
  }
  auto server = TesseraServer::Start(options.server);
  if (!server.ok()) return server.status();
  ts->server_ = *std::move(server);
  runtime::EngineOptions engine_options;
  engine_options.threads = 2;
  auto model = LoadModel(options.model_path, engine_options);
  if (!model.ok()) return model.status();
  ts->model_ = *std::move(model);
  ts->scheduler_ = std::make_unique<runtime::Scheduler>(ts->model_->model(),
                                                        ts->model_->tokenizer(), options.scheduler);
  ts->scheduler_->Start();
  if (options.attach) ts->Attach();
  return ts;
}

void TestServer::Attach() { server_->AttachEngine(model_.get(), scheduler_.get()); }

TestServer::~TestServer() {
  if (server_ != nullptr) server_->Drain(absl::Seconds(5));
  if (scheduler_ != nullptr) scheduler_->Stop();
  if (server_ != nullptr) server_->Shutdown();
}

std::string TestServer::grpc_target() const {
  return absl::StrCat("127.0.0.1:", server_->grpc_port());
}

std::shared_ptr<grpc::Channel> TestServer::NewChannel() const {
  return grpc::CreateChannel(grpc_target(), grpc::InsecureChannelCredentials());
}

std::unique_ptr<tessera::v1::Generation::Stub> TestServer::NewStub() const {
  return tessera::v1::Generation::NewStub(NewChannel());
}

StreamResult RunGenerate(tessera::v1::Generation::Stub& stub,
                         const tessera::v1::GenerateRequest& request, const std::string& api_key,
                         absl::Duration timeout) {
  StreamResult r;
  grpc::ClientContext context;
  AddApiKey(api_key, &context);
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  auto reader = stub.Generate(&context, request);
  tessera::v1::GenerateResponse chunk;
  while (reader->Read(&chunk)) {
    r.text += chunk.text();
    r.token_ids.insert(r.token_ids.end(), chunk.token_ids().begin(), chunk.token_ids().end());
    if (chunk.finish_reason() != tessera::v1::FINISH_REASON_UNSPECIFIED) r.last = chunk;
    r.chunks.push_back(chunk);
  }
  r.status = reader->Finish();
  return r;
}

tessera::v1::GenerateRequest GreedyRequest(const std::string& prompt, int max_new_tokens) {
  tessera::v1::GenerateRequest req;
  req.set_text(prompt);
  req.mutable_sampling()->set_temperature(0);
  req.mutable_stopping()->set_max_new_tokens(max_new_tokens);
  req.mutable_stopping()->set_ignore_eos(true);
  return req;
}

absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to port ", port));
  }
  const std::string req = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return absl::InternalError("short write");
  }
  std::string raw;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) raw.append(buf, n);
  close(fd);
  HttpResponse resp;
  const size_t sp = raw.find(' ');
  const size_t header_end = raw.find("\r\n\r\n");
  if (sp == std::string::npos || header_end == std::string::npos ||
      !absl::SimpleAtoi(raw.substr(sp + 1, 3), &resp.code)) {
    return absl::InternalError(absl::StrCat("bad HTTP response: ", raw.substr(0, 200)));
  }
  resp.body = raw.substr(header_end + 4);
  return resp;
}

absl::StatusOr<double> MetricValue(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (!absl::StartsWith(line, series)) continue;
    absl::string_view rest = line.substr(series.size());
    if (rest.empty() || rest[0] != ' ') continue;
    double v;
    if (absl::SimpleAtod(rest.substr(1), &v)) return v;
  }
  return absl::NotFoundError(absl::StrCat("no series ", series));
}

bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return condition();
}

int Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  if (rc == -1) return -1;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string MakeTempDir() {
  std::string tmpl = "/tmp/tessera_server_test_XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  return dir == nullptr ? "/tmp" : std::string(dir);
}

}  // namespace tessera::server::testing
