// The engine's status macros are the kernels' (kernels/common/status_macros.h, the lowest layer
// that uses absl::Status); this header keeps engine code including them from its own folder.
#ifndef TESSERA_ENGINE_COMMON_STATUS_MACROS_H_
#define TESSERA_ENGINE_COMMON_STATUS_MACROS_H_

#include "kernels/common/status_macros.h"

#endif  // TESSERA_ENGINE_COMMON_STATUS_MACROS_H_
