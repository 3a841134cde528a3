// Status plumbing shared by every module (it sits in kernels/, the lowest layer, so the CUDA
// host code can use it without depending on engine/). Abseil 20220623 ships absl::Status but no
// RETURN_IF_ERROR / ASSIGN_OR_RETURN, so the project keeps its own two macros here; they are the
// only way errors cross module boundaries (no exceptions leave a module).
#ifndef TESSERA_KERNELS_COMMON_STATUS_MACROS_H_
#define TESSERA_KERNELS_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TESSERA_CONCAT_INNER_(a, b) a##b
#define TESSERA_CONCAT_(a, b) TESSERA_CONCAT_INNER_(a, b)

#define TESSERA_RETURN_IF_ERROR(expr)                \
  do {                                               \
    ::absl::Status tessera_status_ = (expr);         \
    if (!tessera_status_.ok()) return tessera_status_; \
  } while (0)

#define TESSERA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return std::move(tmp).status();       \
  lhs = std::move(tmp).value()

#define TESSERA_ASSIGN_OR_RETURN(lhs, expr) \
  TESSERA_ASSIGN_OR_RETURN_IMPL_(TESSERA_CONCAT_(tessera_statusor_, __LINE__), lhs, expr)

#endif  // TESSERA_KERNELS_COMMON_STATUS_MACROS_H_
