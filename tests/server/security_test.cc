// Auth and TLS: with an API key file every Generation RPC needs `authorization: Bearer KEY`
// (missing or wrong: UNAUTHENTICATED) while grpc.health.v1 stays open for probes; without one,
// no key is needed. TLS round trip with a self-signed certificate made by openssl at test time.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/api_key_auth.h"
#include "server/client_channel.h"
#include "tests/server/test_server.h"

namespace tessera::server::testing {
namespace {

TEST(ApiKeysTest, AcceptsOnlyBearerWithAKnownKey) {
  const ApiKeys keys({"secret-one", "secret-two"});
  EXPECT_TRUE(keys.Accepts("Bearer secret-one"));
  EXPECT_TRUE(keys.Accepts("bearer secret-two"));
  EXPECT_TRUE(keys.Accepts("Bearer  secret-two "));
  EXPECT_FALSE(keys.Accepts("Bearer secret-on"));
  EXPECT_FALSE(keys.Accepts("Bearer secret-one2"));
  EXPECT_FALSE(keys.Accepts("secret-one"));
  EXPECT_FALSE(keys.Accepts("Basic secret-one"));
  EXPECT_FALSE(keys.Accepts("Bearer "));
  EXPECT_FALSE(keys.Accepts(""));
}

TEST(ApiKeysTest, FileSkipsCommentsAndBlankLinesAndMustHoldAKey) {
  const std::string dir = MakeTempDir();
  {
    std::ofstream(dir + "/keys") << "# rotated monthly\n\n  k1  \nk2\n";
    std::ofstream(dir + "/empty") << "# nothing\n\n";
  }
  auto keys = ApiKeys::LoadFile(dir + "/keys");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_TRUE(keys->Accepts("Bearer k1"));
  EXPECT_TRUE(keys->Accepts("Bearer k2"));
  EXPECT_FALSE(ApiKeys::LoadFile(dir + "/empty").ok());
  EXPECT_FALSE(ApiKeys::LoadFile(dir + "/missing").ok());
}

TEST(AuthTest, GenerationNeedsTheKeyHealthDoesNot) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/api_keys") << "s3cr3t\n";
  TestServerOptions o;
  o.server.api_key_file = dir + "/api_keys";
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();
  auto stub = (*ts)->NewStub();

  const StreamResult none = RunGenerate(*stub, GreedyRequest("hi", 3));
  EXPECT_EQ(none.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(none.status.error_message().find("authorization"), std::string::npos);
  EXPECT_EQ(RunGenerate(*stub, GreedyRequest("hi", 3), "wrong").status.error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const StreamResult ok = RunGenerate(*stub, GreedyRequest("hi", 3), "s3cr3t");
  ASSERT_TRUE(ok.status.ok()) << ok.status.error_message();
  EXPECT_EQ(ok.token_ids.size(), 3u);

  {
    grpc::ClientContext ctx;
    tessera::v1::ModelInfo info;
    EXPECT_EQ(stub->GetModelInfo(&ctx, {}, &info).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    AddApiKey("s3cr3t", &ctx);
    tessera::v1::TokenizeRequest req;
    req.set_text("a");
    tessera::v1::TokenizeResponse resp;
    EXPECT_TRUE(stub->Tokenize(&ctx, req, &resp).ok());
  }
  // Health: no key needed.
  auto health = grpc::health::v1::Health::NewStub((*ts)->NewChannel());
  for (const char* service : {"", "tessera.v1.Generation"}) {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    ASSERT_TRUE(health->Check(&ctx, req, &resp).ok()) << service;
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST(AuthTest, NoKeyFileMeansNoKeyNeeded) {
  auto ts = TestServer::Start({});
  ASSERT_TRUE(ts.ok()) << ts.status();
  auto stub = (*ts)->NewStub();
  EXPECT_TRUE(RunGenerate(*stub, GreedyRequest("hi", 2)).status.ok());
  EXPECT_TRUE(RunGenerate(*stub, GreedyRequest("hi", 2), "any-key").status.ok());
}

TEST(TlsTest, RoundTripWithASelfSignedCertificate) {
  if (Shell("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "openssl not found";
  const std::string dir = MakeTempDir();
  ASSERT_EQ(
      Shell(absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                         "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout ",
                         dir, "/key.pem -out ", dir, "/cert.pem >/dev/null 2>&1")),
      0);
  TestServerOptions o;
  o.server.tls_cert_file = dir + "/cert.pem";
  o.server.tls_key_file = dir + "/key.pem";
  auto ts = TestServer::Start(o);
  ASSERT_TRUE(ts.ok()) << ts.status();

  ClientChannelOptions co;
  co.address = (*ts)->grpc_target();
  co.tls_ca_file = dir + "/cert.pem";
  auto channel = MakeClientChannel(co);
  ASSERT_TRUE(channel.ok()) << channel.status();
  auto stub = tessera::v1::Generation::NewStub(*channel);
  const StreamResult r = RunGenerate(*stub, GreedyRequest("secure", 4));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.token_ids.size(), 4u);

  // A plaintext client cannot talk to the TLS port.
  auto plain = (*ts)->NewStub();
  EXPECT_EQ(RunGenerate(*plain, GreedyRequest("x", 2), "", absl::Seconds(3)).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // Both files or neither.
  ServerOptions half;
  half.grpc_address = "127.0.0.1:0";
  half.http_address = "";
  half.tls_cert_file = dir + "/cert.pem";
  EXPECT_EQ(TesseraServer::Start(half).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::server::testing
