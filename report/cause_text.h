// DescribeCause: a cause in one line, the `summary` of docs/report-format.md ("cause"), e.g.
//   waiting for mutex 0x55b7c0 held by thread 1636 "db-writer", which is in fsync(fd 3) <-
//   Journal::Flush (journal.cc:88)
// Written by the agent when it materializes a hang; the tools print it as it is.
#ifndef HANGWATCH_REPORT_CAUSE_TEXT_H_
#define HANGWATCH_REPORT_CAUSE_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "hangwatch/hang_record.h"

namespace hangwatch::report {

// `duration_ms`: the hang's, for a sleep whose length is unknown. The text of the cause's kind
// (cause_kinds.h); "" for no cause.
// `thread_role`: the role of the thread that hung (hangwatch/threads.h); a text that names the
// thread ("slept 300 ms on the main thread") names it by its role when it is not "main".
std::string DescribeCause(const Cause& c, uint64_t duration_ms, std::string_view thread_role = {});

// "thread 1636 \"db-writer\"".
std::string DescribeThread(const CauseThread& t);

// "mutex 0x55b7c0" (a lock's type in words and its address).
std::string DescribeLock(const CauseLock& l);

// What a thread does: "in fsync(fd 3) <- Journal::Flush (journal.cc:88)", "running <- ...".
std::string DescribeActivity(const CauseThread& t);

// The text of each kind: the `text` column of kCauseKinds (cause_kinds.h).
namespace cause_text {
std::string Cpu(const Cause& c, uint64_t duration_ms);
std::string Starved(const Cause& c, uint64_t duration_ms);
std::string Throttled(const Cause& c, uint64_t duration_ms);
std::string Pressure(const Cause& c, uint64_t duration_ms);
std::string Lock(const Cause& c, uint64_t duration_ms);
std::string Deadlock(const Cause& c, uint64_t duration_ms);
std::string Io(const Cause& c, uint64_t duration_ms);
std::string Fault(const Cause& c, uint64_t duration_ms);
std::string Ipc(const Cause& c, uint64_t duration_ms);
std::string Child(const Cause& c, uint64_t duration_ms);
std::string Sleep(const Cause& c, uint64_t duration_ms);
std::string Other(const Cause& c, uint64_t duration_ms);
}  // namespace cause_text

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_CAUSE_TEXT_H_
