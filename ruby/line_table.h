// Which entry of an instruction sequence's line table (insns_info) an instruction is in.
//
// Ruby keeps one entry (line, event flags) per run of instructions and, in release builds,
// the instructions where each entry starts as a "succinct index table" (iseq.c,
// VM_INSN_INFO_TABLE_IMPL 2; the positions array itself is freed): for the first 54
// positions a table of ranks, 7 bits each, nine to a 64-bit word; past them one block per 512
// positions: the rank where the block starts, the ranks of its eight 64-bit parts (9 bits
// each), and the parts' bits (1: an entry starts at that position). The rank of a position (how
// many entries start at or before it) minus one is its entry.
//
// The decoders here work on words already read; SuccIndexRank reads the few it needs through a
// MemoryReader. Bounded: nothing loops over untrusted sizes.
#ifndef HANGWATCH_RUBY_LINE_TABLE_H_
#define HANGWATCH_RUBY_LINE_TABLE_H_

#include <cstddef>
#include <cstdint>

#include "python/memory_reader.h"

namespace hangwatch::ruby {

inline constexpr int kImmediatePositions = 54;  // IMMEDIATE_TABLE_SIZE: 6 words of 9 ranks
inline constexpr int kBlockPositions = 512;
// One block past the immediate words: rank (4 bytes and padding), small ranks, eight parts.
inline constexpr size_t kBlockBytes = 8 + 8 + 8 * 8;
inline constexpr size_t kImmediateBytes = kImmediatePositions / 9 * 8;

// The rank of `pos` (< kImmediatePositions) in the immediate word that holds it.
int ImmediateRank(uint64_t word, int pos);
// The rank of `pos` (>= kImmediatePositions) from its block's bytes (kBlockBytes).
int BlockRank(const unsigned char* block, int pos);

// The rank of `pos` in the table at `table` (an instruction sequence of `iseq_size` code
// units); -1 when pos is out of range or the table cannot be read.
int SuccIndexRank(const python::MemoryReader& memory, uint64_t table, uint32_t iseq_size,
                  int64_t pos);

// The same from a positions array (`positions[0..count)`, ascending: VM_CHECK_MODE builds keep
// it): the index of the last entry starting at or before `pos`, 0 when none.
size_t PositionsEntry(const uint32_t* positions, size_t count, int64_t pos);

}  // namespace hangwatch::ruby

#endif  // HANGWATCH_RUBY_LINE_TABLE_H_
