// ServerMetrics: the server's Prometheus catalog (design.md §5), in one place so that names,
// units and labels cannot drift between the code that records them and the docs and dashboards
// that read them. Request-level series (counts by status code, token counts, latency
// histograms) are recorded by the Generation service as requests run; the engine-level series
// (running and waiting requests, KV cache usage, engine steps) are read from Scheduler::Stats()
// at scrape time, so they are exact at the moment of the scrape and cost nothing in between.
//
// Catalog:
//   tessera_requests_total{code}                 counter    Generate RPCs by final gRPC code
//   tessera_requests_running                     gauge      sequences in the running batch
//   tessera_requests_waiting                     gauge      requests queued for admission
//   tessera_prompt_tokens_total                  counter    prompt tokens of admitted requests
//   tessera_generation_tokens_total              counter    tokens streamed to clients
//   tessera_time_to_first_token_seconds          histogram  accepted -> first token
//   tessera_inter_token_latency_seconds          histogram  between consecutive tokens
//   tessera_request_duration_seconds             histogram  accepted -> finished
//   tessera_queue_time_seconds                   histogram  accepted -> first scheduled
//   tessera_kv_cache_usage_ratio                 gauge      used / total KV blocks
//   tessera_model_load_seconds                   gauge      time the model took to load
//   tessera_linear_layers{format,kernel}         gauge      linear layers per format and kernel
//   tessera_engine_steps_total                   counter    model forward steps
//   tessera_engine_decode_steps_total            counter    steps that decoded >= 1 sequence
#ifndef TESSERA_SERVER_METRICS_H_
#define TESSERA_SERVER_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "server/loaded_model.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace tessera::server {

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Where the engine-level series come from; unset (nullptr) while the model loads, when they
  // read as zero. Thread-safe.
  void SetStatsSource(std::function<runtime::SchedulerStats()> source);
  // Called once the model is loaded.
  void SetModel(const LoadedModel& model);

  // `code`: the gRPC code name ("OK", "INVALID_ARGUMENT", ...).
  void RecordRequest(const std::string& code);
  void AddPromptTokens(int64_t n);
  void AddGenerationTokens(int64_t n);
  void ObserveTimeToFirstToken(double seconds);
  void ObserveInterTokenLatency(double seconds);
  void ObserveRequestDuration(double seconds);
  void ObserveQueueTime(double seconds);

  // The Prometheus text exposition format (version 0.0.4) of every series.
  std::string Render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Counter* prompt_tokens_ = nullptr;
  prometheus::Counter* generation_tokens_ = nullptr;
  prometheus::Histogram* ttft_ = nullptr;
  prometheus::Histogram* inter_token_ = nullptr;
  prometheus::Histogram* duration_ = nullptr;
  prometheus::Histogram* queue_ = nullptr;
  prometheus::Gauge* load_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* linear_layers_ = nullptr;

  mutable std::mutex mu_;
  std::function<runtime::SchedulerStats()> stats_source_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_METRICS_H_
