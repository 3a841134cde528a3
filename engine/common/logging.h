// A minimal leveled logger. Abseil 20220623 has no absl/log, and the engine must not pull in
// gRPC's logger, so every module logs through these few functions to stderr with a timestamp.
#ifndef TESSERA_ENGINE_COMMON_LOGGING_H_
#define TESSERA_ENGINE_COMMON_LOGGING_H_

#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"

namespace tessera {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);
void LogMessage(LogLevel level, absl::string_view message);

template <typename... Args>
void Log(LogLevel level, const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (level < GetLogLevel()) return;
  LogMessage(level, absl::StrFormat(format, args...));
}

}  // namespace tessera

#define TLOG_DEBUG(...) ::tessera::Log(::tessera::LogLevel::kDebug, __VA_ARGS__)
#define TLOG_INFO(...) ::tessera::Log(::tessera::LogLevel::kInfo, __VA_ARGS__)
#define TLOG_WARNING(...) ::tessera::Log(::tessera::LogLevel::kWarning, __VA_ARGS__)
#define TLOG_ERROR(...) ::tessera::Log(::tessera::LogLevel::kError, __VA_ARGS__)

#endif  // TESSERA_ENGINE_COMMON_LOGGING_H_
