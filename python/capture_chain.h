// ReadCaptureChain: a thread's chain of Python frames as a capture records it, from its
// innermost frame outwards: each frame's code object address, instruction and `entry` mark,
// nothing else. Unlike FrameChainReader::ReadChain it does not check that each frame's code is
// a code object (one more read per frame, outside the copied data stack): the capture records,
// the watchdog checks (FrameChainReader::IsCode) before anything is named.
//
// Allocation-free, bounded by `capacity` (a cycle fills the buffer and ends as kFull) and
// async-signal-safe when `memory` is.
#ifndef HANGWATCH_PYTHON_CAPTURE_CHAIN_H_
#define HANGWATCH_PYTHON_CAPTURE_CHAIN_H_

#include <cstddef>
#include <cstdint>

#include "python/frame_chain.h"
#include "python/memory_reader.h"
#include "python/python_layout.h"

namespace hangwatch::python {

// The frames from `innermost` (a _PyInterpreterFrame or PyFrameObject address), innermost
// first, into out[0..capacity); returns how many, *end says why it stopped (kNotCode: a frame
// without code; kNoEntry: the chain ended at a frame that began no native eval-loop call, so
// its outer part was not reached). Anything but kComplete means a partial chain.
size_t ReadCaptureChain(const MemoryReader& memory, const PythonLayout& layout, uint64_t innermost,
                        PythonFrame* out, size_t capacity, ChainEnd* end);

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_CAPTURE_CHAIN_H_
