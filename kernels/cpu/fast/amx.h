// Intel AMX (Advanced Matrix Extensions: eight 1 KiB tile registers and one tile multiply that does
// a 16 x 32 x 16 bf16 or a 16 x 64 x 16 int8 product per instruction) for the 16-column panel
// kernels: bf16 weights (bf16_dot_matmul.h) and INT8 W8A8 (int8_dot_matmul.h) run their panels as
// AMX B tiles when this process may use AMX, and their AVX-512 paths otherwise. The panels are
// already AMX's B layout (16 columns x one K pair / quad per 64-byte row), so no second copy of the
// weights exists; FP8 panels (fp8_panel_matmul.h) decode their codes into that layout, tile by
// tile or a few panels at a time, and run the bf16 walk. Linux hands out the tile data state only
// on request (arch_prctl ARCH_REQ_XCOMP_PERM); a kernel that refused it, a CPU without AMX (every
// machine this project can test on), or TESSERA_DISABLE_AMX=1 in the environment keeps the AVX-512
// kernels.
//
// What is and is not verified: the tile walk (amx_panel_gemm.h) runs in the test suite on a
// software model of the tile instructions written from Intel's pseudo-code (tile shapes checked on
// every instruction, as the hardware faults on a mismatch), against the AVX-512 kernels: bit for
// bit for INT8 (integer sums), within the f32 rounding bound for bf16. The tile instructions
// themselves run on none of this project's CI machines; AmxPanelGemmTest.HardwareMatchesTheModel
// runs them where a CPU grants AMX, as tests/gpu/device_session.sh does on a lent GPU machine's
// host (on 2026-11-27 a 16-core Xeon: every test passed; the hardware's bf16 sums differ from the
// model's in their last bits, within the bound). AmxBf16Usable / AmxInt8Usable run each AMX kernel
// once per process (at model load) against the AVX-512 one on a small random problem, in a forked
// child so that a fault cannot take the server down, and keep the AVX-512 kernel (with one line on
// stderr) if the child disagrees or dies.
#ifndef TESSERA_KERNELS_CPU_FAST_AMX_H_
#define TESSERA_KERNELS_CPU_FAST_AMX_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"

namespace tessera::kernels::cpu::fast {

// CPUID says AMX-TILE, AMX-BF16 and AMX-INT8, the OS granted this process the tile data state, and
// TESSERA_DISABLE_AMX is not set. Asked once per process.
bool AmxAvailable();

// AmxAvailable() and check() (an AMX kernel against its AVX-512 twin) passed, run in a forked
// child so that a faulting instruction costs the child, not this process; asked once per kernel
// by its caller. A failed check prints one line naming `kernel` on stderr.
bool AmxPassesSelfCheck(bool (*check)(), const char* kernel);

// check() run in a forked child (where fork exists; else in this process): whether it returned
// true, false, or the child died (its signal in *signal) or could not be started.
enum class ChildOutcome { kPassed, kFailed, kDied, kNoChild };
ChildOutcome RunInChild(bool (*check)(), int* signal);

namespace amx {

// The 64-byte operand of LDTILECFG (palette 1): per tile, its bytes per row and its rows; a tile
// with 0 rows is unused.
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  bool operator==(const TileConfig&) const = default;
};
static_assert(sizeof(TileConfig) == 64);

// Writes K tile kt of panel p (1 KiB, 64-byte aligned, bf16_dot_matmul.h's pair-panel layout)
// into `tile`; ctx is the maker's own state.
using Bf16TileMaker = void (*)(const void* ctx, int64_t p, int64_t kt, uint8_t* tile);

// The per-group fold of a walk whose K comes in groups of whole K tiles (amx_panel_gemm.h's
// GroupPanelGemm; integer codes with a scale and zero point per column and group). A block's c
// and tot are [32][32] f32: row i is the block's row m0 + i, column j the output column
// 16·p0 + j.
struct GroupFolder {
  // Folds group g's sums c (rows [0, rows), `panels` panels from p0) into tot.
  void (*fold)(const void* ctx, int64_t m0, int rows, int64_t p0, int panels, int64_t g,
               const float* c, float* tot);
  // Writes the block's outputs from tot: rows [0, rows), columns [c_begin, c_end); col0 is tot's
  // column 0.
  void (*finish)(const void* ctx, int64_t m0, int rows, int64_t col0, int64_t c_begin,
                 int64_t c_end, const float* tot);
  const void* ctx;
};

}  // namespace amx

namespace internal {

// A bf16 pair-panel GEMM with Bf16DotMatmul's contract (the AVX-512 tiles, the AMX walk, or in
// tests the AMX walk on the software model of the tile instructions).
using Bf16PanelGemmFn = void (*)(const FastWeights& w, const uint16_t* hi, const uint16_t* lo,
                                 int64_t rows, const float* bias, float* y, int64_t n_begin,
                                 int64_t n_end);

// AmxBf16MadeTilesMatmul's signature: the walk over tiles a maker writes.
using Bf16MadeTilesGemmFn = void (*)(amx::Bf16TileMaker make, const void* ctx, int64_t n, int64_t k,
                                     const uint16_t* hi, const uint16_t* lo, int64_t rows,
                                     const float* bias, float* y, int64_t n_begin, int64_t n_end);

// AmxBf16GroupMatmul's signature: the group walk over tiles `make` writes, or with make null over
// stored pair panels (panel_bytes apart, whole K tiles).
using Bf16GroupGemmFn = void (*)(amx::Bf16TileMaker make, const void* make_ctx,
                                 const uint8_t* panels, int64_t panel_bytes, int64_t n, int64_t k,
                                 int64_t group_tiles, const uint16_t* hi, const uint16_t* lo,
                                 int64_t rows, int64_t n_begin, int64_t n_end,
                                 const amx::GroupFolder& fold);

// The GEMMs of an AMX route over codes decoded to bf16 (FP8 panels, the quant pair panels): over
// decoded panels (more than one 32-row block) and over tiles decoded one at a time inside the
// walk (one block: decode, M = 1), and the group walk (integer codes) for either. The kernels pass
// the AMX instructions' (below); tests pass the walks on the software model.
struct AmxBf16Gemms {
  Bf16PanelGemmFn stored;
  Bf16MadeTilesGemmFn made;
  Bf16GroupGemmFn group = nullptr;
};

// The AMX forms of Bf16DotMatmul and Int8DotMatmul (amx_kernels.cc; same contracts). Require
// AmxAvailable(); the kernels' own dispatch calls them once the self-check passed.
void AmxBf16DotMatmul(const FastWeights& w, const uint16_t* hi, const uint16_t* lo, int64_t rows,
                      const float* bias, float* y, int64_t n_begin, int64_t n_end);
void AmxInt8DotMatmul(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& a,
                      int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);
// AmxBf16DotMatmul over [n, k] panels that `make` writes tile by tile (amx_panel_gemm.h's
// MadeTiles), y [rows, n]: the same tile walk, so the same bits as over the stored panels.
void AmxBf16MadeTilesMatmul(amx::Bf16TileMaker make, const void* ctx, int64_t n, int64_t k,
                            const uint16_t* hi, const uint16_t* lo, int64_t rows, const float* bias,
                            float* y, int64_t n_begin, int64_t n_end);
// The group walk (amx_panel_gemm.h's GroupPanelGemm) with Bf16GroupGemmFn's contract.
void AmxBf16GroupMatmul(amx::Bf16TileMaker make, const void* make_ctx, const uint8_t* panels,
                        int64_t panel_bytes, int64_t n, int64_t k, int64_t group_tiles,
                        const uint16_t* hi, const uint16_t* lo, int64_t rows, int64_t n_begin,
                        int64_t n_end, const amx::GroupFolder& fold);

}  // namespace internal
}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_AMX_H_
