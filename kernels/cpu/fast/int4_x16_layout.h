// Where each block's scales and codes sit inside one column group's tile of int4_x16.h: shared by
// the repacks, the portable loop, the VNNI and AVX2 kernels, so they cannot disagree. A tile is a
// sequence of records, each a scale area followed by the codes of the blocks it scales, so the
// kernel reads one sequential stream: on the 2-core Zen 4 VMs the earlier layout (all scales, then
// all codes: two streams a few KiB apart) read 25-30 GB/s with software prefetch and 19-20 without,
// records 27-33 without (bench/README.md, 2026-11-25 fourth session).
// Records: kQ4_0x16 / kQ8_0x16 two blocks after 64 bytes of f16 scales [2 blocks][16 columns];
// kNvfp4x16 two blocks after 64 bytes of UE4M3 scales [2 blocks][2 halves][16]; kU4x16 / kU8x16
// one quantization group (group_size / 32 blocks) after its f32 scales [16] and zero points [16];
// kQ4_Kx16 one GGUF super-block (eight blocks) after 320 bytes: d [16] and dmin [16] as f16, then
// the 6-bit scales sc [8 blocks][16] and mins m [8 blocks][16] a byte each; kQ6_Kx16 one
// super-block after 320 bytes: d [16] as f16, then the int8 scales sc [16 halves][16] (and 32
// bytes of padding), each block's codes as 256 bytes of low nibbles and 128 of high bit pairs;
// kQ3_Kx16 kQ6_Kx16's record (f16 d, the int8 scales sc − 32 per 16) and per block Q2_K's 2-bit
// chunks (Q2KCodeOffset) then a 64-byte plane of the codes' third bits (Q3KHighBit), 192 bytes;
// kQ2_Kx16 one
// super-block after 320 bytes: d [16] and dmin [16] as f16, then the file's scale bytes (4-bit
// scale low, 4-bit min high) [16 halves][16], each block's 2-bit codes as 128 bytes (one 64-byte
// chunk per half block, Q2KCodeOffset); kIq4Nlx16 kQ4_0x16's records; kIq4Xsx16 one super-block
// after 192 bytes: d [16] as f16, the int8 scales (ls − 32) [8 blocks][16] and 32 bytes of
// padding, then Q4_0's nibble blocks;
// kIqGrid16x16 one super-block after 320 bytes: d [16] as f32 (the grid type's f16 d times 1/8, 1/4
// or 1), the multipliers 2·ls + 1 [16 halves][16] a byte each, then Q4_0's nibble blocks (codes
// into the type's table); kIqGrid32x16 the same with one multiplier per block, [8 blocks][16],
// after 192 bytes (kIq4Xsx16's record size);
// kQ5_Kx16 kQ4_Kx16's records with each block's 256 bytes of nibbles followed by 64 of fifth bits;
// kMxfp4x16 four blocks after 64 bytes of E8M0 scales [4 blocks][16] (MXFP4's 4.25 bits per
// weight).
// Scale areas and code blocks are multiples of 64 bytes, so every load stays on its cache lines.
#ifndef TESSERA_KERNELS_CPU_FAST_INT4_X16_LAYOUT_H_
#define TESSERA_KERNELS_CPU_FAST_INT4_X16_LAYOUT_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"

namespace tessera::kernels::cpu::fast::internal {

struct X16Layout {
  int64_t blocks_per_record = 2;
  int64_t scale_bytes = 64;  // per record
  int64_t code_bytes = 256;  // per block of 32 K values x 16 columns
  bool group_scales = false;  // kU4x16 / kU8x16: one f32 scale and zero point set per record
  int64_t block_scale_bytes = 32;  // per block inside a record's scale area (not group_scales)

  static X16Layout Of(FastFormat format, int64_t group_size) {
    X16Layout l;
    const bool q3_k = format == FastFormat::kQ3_Kx16;  // q6_k's records, 2-bit codes + third bits
    const bool q2_k = format == FastFormat::kQ2_Kx16;  // q4_k's scale area size, 2-bit codes
    // nibbles under a super-block record of 192 bytes
    const bool iq4_xs = format == FastFormat::kIq4Xsx16 || format == FastFormat::kIqGrid32x16;
    // q6_k's record size (f32 d instead of f16), nibbles through a table
    const bool iq_grid = format == FastFormat::kIqGrid16x16;
    const bool q6_k = format == FastFormat::kQ6_Kx16 || q3_k;
    const bool q4_k = format == FastFormat::kQ4_Kx16 || format == FastFormat::kQ5_Kx16;
    const bool q5_k = format == FastFormat::kQ5_Kx16;  // q4_k's records plus fifth bits
    const bool bytes = format == FastFormat::kQ8_0x16 || format == FastFormat::kU8x16;
    const bool groups = format == FastFormat::kU4x16 || format == FastFormat::kU8x16;
    const bool mxfp4 = format == FastFormat::kMxfp4x16;
    const bool super_blocks = q4_k || q6_k || q2_k || iq4_xs || iq_grid;  // one GGUF super-block per record
    l.code_bytes = q2_k ? 128 : q3_k ? 192 : q6_k ? 384 : q5_k ? 320 : bytes ? 512 : 256;
    l.blocks_per_record = groups ? group_size / 32 : super_blocks ? 8 : mxfp4 ? 4 : 2;
    l.scale_bytes = groups ? 128 : iq4_xs ? 192 : super_blocks ? 320 : 64;
    l.group_scales = groups;
    l.block_scale_bytes = super_blocks ? 0 : mxfp4 ? 16 : 32;
    return l;
  }
  int64_t record_bytes() const { return scale_bytes + blocks_per_record * code_bytes; }
  // Start of the record holding block b.
  int64_t Record(int64_t b) const { return b / blocks_per_record * record_bytes(); }
  // kQ4_0x16 / kQ8_0x16 / kNvfp4x16 / kMxfp4x16: block b's 32 (MXFP4: 16) scale bytes. kU4x16 / kU8x16: its group's f32
  // scales (the zero points follow 64 bytes later). kQ4_Kx16 / kQ6_Kx16: its record's scale area
  // (block b is the (b % 8)-th of the record).
  int64_t Scales(int64_t b) const {
    return Record(b) + (group_scales ? 0 : (b % blocks_per_record) * block_scale_bytes);
  }
  int64_t Codes(int64_t b) const {
    return Record(b) + scale_bytes + (b % blocks_per_record) * code_bytes;
  }
  // Bytes of one column group's tile (a last record of Q4_0 / Q8_0 / NVFP4 / MXFP4 may be short).
  int64_t TileBytes(int64_t blocks) const {
    const int64_t rest = blocks % blocks_per_record;
    return blocks / blocks_per_record * record_bytes() +
           (rest != 0 ? scale_bytes + rest * code_bytes : 0);
  }
};

inline constexpr int64_t kX16Cols = 16;

// The FastWeights of an [n, k] matrix of `format` tiles at dst (row_stride: one column group's
// tile), and the bytes of all its column groups.
inline FastWeights X16Weights(FastFormat format, uint8_t* dst, int64_t n, int64_t k,
                              int64_t group_size) {
  FastWeights w;
  w.format = format;
  w.data = dst;
  w.n = n;
  w.k = k;
  w.group_size = group_size;
  w.row_stride = X16Layout::Of(format, group_size).TileBytes(k / 32);
  return w;
}
inline int64_t X16Bytes(FastFormat format, int64_t n, int64_t k, int64_t group_size) {
  return (n + kX16Cols - 1) / kX16Cols * X16Weights(format, nullptr, n, k, group_size).row_stride;
}

// Offset of code j of column c in a block's byte codes (kQ8_0x16, kU8x16): chunk j / 4 of the
// block holds K values 4q .. 4q + 3 of the 16 columns, 4 bytes per column.
inline int64_t ByteCodeOffset(int64_t c, int j) { return (j / 4) * 64 + c * 4 + j % 4; }

// Offset of code j (0..31) of column c in a kQ2_Kx16 block: chunk j / 16 (the half block) holds
// its 16 K values for the 16 columns, 4 bytes per column; byte i of a column holds K = 16h + i in
// bits 0-1, 16h + 4 + i in bits 2-3, 16h + 8 + i in bits 4-5 and 16h + 12 + i in bits 6-7, so that
// (byte >> 2s) & 3 over the chunk is one vpdpbusd operand for K = 16h + 4s .. 16h + 4s + 3.
// Returns the byte offset; the code's bit shift is Q2KCodeShift(j).
inline int64_t Q2KCodeOffset(int64_t c, int j) { return (j / 16) * 64 + c * 4 + j % 4; }
inline int Q2KCodeShift(int j) { return 2 * ((j % 16) / 4); }
// kQ3_Kx16: the third bit (value 4) of code j of column c is bit Q3KHighBit(j) of the block's
// byte 128 + c * 4 + j % 4, so that testing bit 4h + s of the plane marks the bytes of the
// vpdpbusd operand for K = 16h + 4s .. 16h + 4s + 3.
inline int Q3KHighBit(int j) { return 4 * (j / 16) + (j % 16) / 4; }

// Writes column c's nibble codes into a block's codes, given code(j) for j in 0..31.
template <class Code>
void PutCodes(uint8_t* block_codes, int64_t c, Code code) {
  for (int q = 0; q < 4; ++q) {
    for (int i = 0; i < 4; ++i) {
      block_codes[q * 64 + c * 4 + i] =
          static_cast<uint8_t>(code(8 * q + i) | (code(8 * q + 4 + i) << 4));
    }
  }
}

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_INT4_X16_LAYOUT_H_
