// Whether this process is about to run out of address space, so that the watchdog leaves out
// the work that maps files and allocates as it goes (issue: an RLIMIT_AS reached by the
// application made libdw fail inside the watchdog and take the process down).
//
// A sample's DWARF CFI walk (libdwfl maps a module's ELF file and parses its .eh_frame the first
// time a pc falls in it) and in-process names (a module's symbol table, read on first use) need
// memory that was not set aside at Start(). Close to a limit the watchdog does without them: the
// sample keeps its frame-pointer frames, the hang is reported with addresses and without names.
// Allocation failures that still happen (another thread took the room) end that sample or that
// report, never the process (agent.cc, stall_monitor.cc catch std::bad_alloc).
#ifndef HANGWATCH_AGENT_CORE_MEMORY_HEADROOM_H_
#define HANGWATCH_AGENT_CORE_MEMORY_HEADROOM_H_

#include <cstddef>

namespace hangwatch::agent {

// The room below RLIMIT_AS (or RLIMIT_DATA) under which the watchdog stops mapping and
// allocating for names and CFI: more than one large module's ELF file and tables.
inline constexpr size_t kMemoryHeadroomBytes = size_t{128} << 20;

// True when a finite RLIMIT_AS or RLIMIT_DATA is less than `headroom` bytes above what the
// process uses (/proc/self/statm). False without limits (one getrlimit call each, no file read)
// and when usage cannot be read.
bool NearMemoryLimit(size_t headroom = kMemoryHeadroomBytes);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_MEMORY_HEADROOM_H_
