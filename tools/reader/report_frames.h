// Small helpers shared by the report formats: how a frame is named, how stacks compare.
#ifndef HANGWATCH_TOOLS_REPORT_FRAMES_H_
#define HANGWATCH_TOOLS_REPORT_FRAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "hangwatch/culprit_label.h"  // CulpritLabel, for the formats
#include "hangwatch/hang_record.h"
#include "tools/common/names.h"  // FileLine, for the formats

namespace hangwatch::tools {

// "0x1234" (lowercase).
std::string Hex(uint64_t v);

// A frame's display name: its symbol, else "module+0xoffset", else its address. A Python frame:
// "Handler.handle (app.py:42)" (report::PythonFunctionLabel), as its culprit is named.
std::string FrameName(const Frame& f);

// "file:line" when known, else "".
std::string FrameLocation(const Frame& f);

// The hang's culprit (hang_record.h): as recorded, else found in its stacks (a file written by
// an older agent; report::HangCulprit). Empty when there is no stack.
Culprit HangCulprit(const HangRecord& h);

// "file:line" of a culprit ("file" without a line), "" when unknown.
std::string CulpritLocation(const Culprit& c);

// Recomputes each hang's culprit from its stacks (report::HangCulprit, after offline symbolization
// has added names, files, lines and inlined frames), and its signature when the record had none.
void RefreshHangIdentity(HangRecord* h);

// For each frame of the dominant stack (innermost first), the number of samples of the hang
// whose stack reaches that frame through the same callers (their stacks share the dominant
// stack's frames from the outermost one down to it): the call-tree count of the dominant path.
std::vector<uint32_t> DominantPathCounts(const HangRecord& h);

// UTC time "YYYY-MM-DD HH:MM:SS.mmm UTC" of a Unix time in ms.
std::string FormatUnixMs(int64_t unix_ms);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_REPORT_FRAMES_H_
