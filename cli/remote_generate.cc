// `tessera generate --server ADDR --prompt TEXT [sampling flags]`: the same command as local
// generation (the same sampling flags, parsed by sampling_flags.cc), but the tokens come from a
// running server's Generation.Generate stream. Text goes to stdout as it arrives; the finish
// reason, usage and server timings go to stderr. Exit code: 0 on success, 1 on an RPC error
// (its gRPC code and message are printed), 2 on bad flags.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/sampling_flags.h"
#include "engine/runtime/scheduler.h"
#include "server/client_channel.h"
#include "server/grpc_status.h"
#include "tessera/v1/generation.grpc.pb.h"

namespace tessera::cli {
namespace {

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> f = {
      {"server", false, "host:port of a running tessera server"},
      {"prompt", false, "prompt text"},
      {"no_bos", true, "do not add the BOS token (special tokens)"},
      {"timeout", false, "deadline in seconds (default: none)"},
      {"request_id", false, "request id to send"},
      {"api_key_file", false, "file with the API key to send as a bearer token"},
      {"tls_ca", false, "PEM CA certificate: connect with TLS"},
      {"tls_server_name", false, "name to verify in the server certificate"},
      {"log_level", false, "accepted for symmetry with local generation; unused"},
      {"help", true, "show this help"},
  };
  for (const auto& s : SamplingFlagSpecs()) f.push_back(s);
  return f;
}

const char* ReasonName(tessera::v1::FinishReason r) {
  switch (r) {
    case tessera::v1::FINISH_REASON_LENGTH:
      return "length";
    case tessera::v1::FINISH_REASON_STOP:
      return "stop";
    case tessera::v1::FINISH_REASON_EOS:
      return "eos";
    case tessera::v1::FINISH_REASON_CANCELLED:
      return "cancelled";
    default:
      return "unspecified";
  }
}

// The parsed flags (as the local path sees them) as the proto request.
tessera::v1::GenerateRequest ToProto(const runtime::GenerationRequest& r, const Args& args) {
  tessera::v1::GenerateRequest p;
  p.set_text(args.GetString("prompt"));
  p.set_add_special_tokens(!args.GetBool("no_bos"));
  p.set_request_id(args.GetString("request_id"));
  tessera::v1::SamplingParams* s = p.mutable_sampling();
  s->set_temperature(r.sampling.temperature);
  s->set_top_k(r.sampling.top_k);
  s->set_top_p(r.sampling.top_p);
  s->set_min_p(r.sampling.min_p);
  s->set_repetition_penalty(r.sampling.repetition_penalty);
  s->set_presence_penalty(r.sampling.presence_penalty);
  s->set_frequency_penalty(r.sampling.frequency_penalty);
  if (r.sampling.seed) s->set_seed(*r.sampling.seed);
  tessera::v1::StoppingCriteria* st = p.mutable_stopping();
  st->set_max_new_tokens(r.stopping.max_new_tokens);
  for (const auto& x : r.stopping.stop_strings) st->add_stop_strings(x);
  for (int32_t id : r.stopping.stop_token_ids) st->add_stop_token_ids(id);
  st->set_ignore_eos(r.stopping.ignore_eos);
  if (r.return_logprobs) {
    p.mutable_logprobs()->set_enabled(true);
    p.mutable_logprobs()->set_top_logprobs(r.sampling.logprobs);
  }
  return p;
}

}  // namespace

int RunRemoteGenerate(const std::vector<std::string>& argv) {
  const auto flags = Flags();
  auto args = Args::Parse(argv, flags);
  if (!args.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (args->GetBool("help") || !args->Has("server")) {
    std::fprintf(stderr, "usage: tessera generate --server ADDR --prompt TEXT [flags]\n%s",
                 FlagsHelp(flags).c_str());
    return args->GetBool("help") ? 0 : 2;
  }
  runtime::GenerationRequest parsed;
  if (absl::Status s = ParseSamplingFlags(*args, &parsed); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  auto timeout = args->GetDouble("timeout", 0);
  if (!timeout.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(timeout.status().message()).c_str());
    return 2;
  }
  std::string api_key;
  if (args->Has("api_key_file")) {
    auto key = server::ReadApiKey(args->GetString("api_key_file"));
    if (!key.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(key.status().message()).c_str());
      return 2;
    }
    api_key = *key;
  }
  server::ClientChannelOptions options;
  options.address = args->GetString("server");
  options.tls_ca_file = args->GetString("tls_ca");
  options.tls_server_name = args->GetString("tls_server_name");
  auto channel = server::MakeClientChannel(options);
  if (!channel.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(channel.status().message()).c_str());
    return 1;
  }
  auto stub = tessera::v1::Generation::NewStub(*channel);
  grpc::ClientContext context;
  server::AddApiKey(api_key, &context);
  if (*timeout > 0) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(*timeout)));
  }
  const tessera::v1::GenerateRequest request = ToProto(parsed, *args);
  auto reader = stub->Generate(&context, request);
  tessera::v1::GenerateResponse chunk, last;
  while (reader->Read(&chunk)) {
    std::fwrite(chunk.text().data(), 1, chunk.text().size(), stdout);
    std::fflush(stdout);
    if (chunk.finish_reason() != tessera::v1::FINISH_REASON_UNSPECIFIED) last = chunk;
  }
  const grpc::Status status = reader->Finish();
  std::printf("\n");
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s: %s\n", server::GrpcCodeName(status.error_code()).c_str(),
                 status.error_message().c_str());
    return 1;
  }
  std::fprintf(stderr,
               "finish: %s; request %s; prompt %d tokens, generated %d tokens; queue %.3f s, "
               "first token %.3f s, total %.3f s\n",
               ReasonName(last.finish_reason()), last.request_id().c_str(),
               last.usage().prompt_tokens(), last.usage().completion_tokens(),
               last.timings().queue_seconds(), last.timings().time_to_first_token_seconds(),
               last.timings().total_seconds());
  return 0;
}

}  // namespace tessera::cli
