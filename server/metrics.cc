#include "server/metrics.h"

#include <map>
#include <utility>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace tessera::server {
namespace {

// Token latencies: from sub-millisecond (a tiny model on a fast CPU) to tens of seconds (a
// long queue in front of a large model).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

// Whole requests run for up to minutes.
prometheus::Histogram::BucketBoundaries DurationBuckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

prometheus::MetricFamily Scalar(const std::string& name, const std::string& help,
                                prometheus::MetricType type, double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  family.metric.push_back(std::move(m));
  return family;
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  requests_ = &prometheus::BuildCounter()
                   .Name("tessera_requests_total")
                   .Help("Generate RPCs by final gRPC status code")
                   .Register(r);
  prompt_tokens_ = &prometheus::BuildCounter()
                        .Name("tessera_prompt_tokens_total")
                        .Help("Prompt tokens of admitted Generate requests")
                        .Register(r)
                        .Add({});
  generation_tokens_ = &prometheus::BuildCounter()
                            .Name("tessera_generation_tokens_total")
                            .Help("Generated tokens streamed to clients")
                            .Register(r)
                            .Add({});
  ttft_ = &prometheus::BuildHistogram()
               .Name("tessera_time_to_first_token_seconds")
               .Help("Time from accepting a request to its first generated token")
               .Register(r)
               .Add({}, LatencyBuckets());
  inter_token_ = &prometheus::BuildHistogram()
                      .Name("tessera_inter_token_latency_seconds")
                      .Help("Time between consecutive generated tokens of one request")
                      .Register(r)
                      .Add({}, LatencyBuckets());
  duration_ = &prometheus::BuildHistogram()
                   .Name("tessera_request_duration_seconds")
                   .Help("Time from accepting a request to its last token")
                   .Register(r)
                   .Add({}, DurationBuckets());
  queue_ = &prometheus::BuildHistogram()
                .Name("tessera_queue_time_seconds")
                .Help("Time a request waited before its first engine step")
                .Register(r)
                .Add({}, LatencyBuckets());
  load_seconds_ = &prometheus::BuildGauge()
                       .Name("tessera_model_load_seconds")
                       .Help("Seconds the model took to load")
                       .Register(r)
                       .Add({});
  linear_layers_ = &prometheus::BuildGauge()
                        .Name("tessera_linear_layers")
                        .Help("Linear layers of the loaded model by weight format and kernel")
                        .Register(r);
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::SetStatsSource(std::function<runtime::SchedulerStats()> source) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_source_ = std::move(source);
}

void ServerMetrics::SetModel(const LoadedModel& model) {
  load_seconds_->Set(model.load_seconds());
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const PlanRow& row : model.plan) ++counts[{row.weight_format, row.kernel}];
  for (const auto& [key, n] : counts) {
    linear_layers_->Add({{"format", key.first}, {"kernel", key.second}}).Set(n);
  }
}

void ServerMetrics::RecordRequest(const std::string& code) {
  requests_->Add({{"code", code}}).Increment();
}
void ServerMetrics::AddPromptTokens(int64_t n) {
  prompt_tokens_->Increment(static_cast<double>(n));
}
void ServerMetrics::AddGenerationTokens(int64_t n) {
  generation_tokens_->Increment(static_cast<double>(n));
}
void ServerMetrics::ObserveTimeToFirstToken(double s) { ttft_->Observe(s); }
void ServerMetrics::ObserveInterTokenLatency(double s) { inter_token_->Observe(s); }
void ServerMetrics::ObserveRequestDuration(double s) { duration_->Observe(s); }
void ServerMetrics::ObserveQueueTime(double s) { queue_->Observe(s); }

std::string ServerMetrics::Render() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  runtime::SchedulerStats stats;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_source_) stats = stats_source_();
  }
  using prometheus::MetricType;
  families.push_back(Scalar("tessera_requests_running", "Sequences in the running batch",
                            MetricType::Gauge, stats.running));
  families.push_back(Scalar("tessera_requests_waiting", "Requests queued for admission",
                            MetricType::Gauge, stats.waiting));
  families.push_back(Scalar("tessera_kv_cache_usage_ratio", "Used fraction of the KV cache blocks",
                            MetricType::Gauge, stats.kv_usage_ratio));
  families.push_back(Scalar("tessera_engine_steps_total", "Model forward steps taken",
                            MetricType::Counter, static_cast<double>(stats.steps)));
  families.push_back(Scalar("tessera_engine_decode_steps_total",
                            "Engine steps that decoded at least one running sequence",
                            MetricType::Counter, static_cast<double>(stats.decode_steps)));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace tessera::server
