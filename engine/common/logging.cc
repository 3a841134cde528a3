#include "engine/common/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

#include "absl/strings/ascii.h"

namespace tessera {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(std::string(name));
  if (n == "debug") return LogLevel::kDebug;
  if (n == "info") return LogLevel::kInfo;
  if (n == "warning" || n == "warn") return LogLevel::kWarning;
  if (n == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(
      absl::StrFormat("log level '%s' is not one of debug, info, warning, error", name));
}

void LogMessage(LogLevel level, absl::string_view message) {
  static constexpr const char* kNames[] = {"D", "I", "W", "E"};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm_utc;
  gmtime_r(&t, &tm_utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm_utc);
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "%s%s.%03dZ %.*s\n", kNames[static_cast<int>(level)], stamp, ms,
               static_cast<int>(message.size()), message.data());
}

}  // namespace tessera
