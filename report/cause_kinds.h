// The kinds of a hang's cause (docs/report-format.md, "cause"), one row each: the kind, its key
// in JSON (the `kind` of a cause object and a timeline entry's `cause`), the evidence fields its
// cause object carries, its one-line text (the cause's `summary`) and where the agent decides
// that a blocked sample waits for it (its resolver).
//
// Everything that handles every kind reads this table: the encoder (which evidence to write),
// the decoder (a key back to its kind), DescribeCause (the text), the open-hang file's reader (a
// stored kind is one of these), the metrics (the `cause` label of `hangwatch exporter` and of
// RegisterMetrics is the key: hangwatch_prometheus_metrics.h, CauseLabel). A new kind is its
// value and name in include/hangwatch/hang_record.h (CauseKind, CauseKindName: the public API),
// one row here, its text in cause_text.cc and its resolver: docs/architecture.md, "A new cause
// kind".
#ifndef HANGWATCH_REPORT_CAUSE_KINDS_H_
#define HANGWATCH_REPORT_CAUSE_KINDS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hangwatch/hang_record.h"
#include "report/cause_text.h"

namespace hangwatch::report {

// The groups of evidence fields of a cause object, besides kind, summary and syscall (which
// every cause has), in the order the encoder writes them (docs/report-format.md, "cause").
inline constexpr uint8_t kEvidenceNone = 0;
inline constexpr uint8_t kEvidenceLocks = 1 << 0;  // lock, owner, chain, chain_truncated
inline constexpr uint8_t kEvidenceCycle = 1 << 1;  // cycle
inline constexpr uint8_t kEvidenceChild = 1 << 2;  // child
inline constexpr uint8_t kEvidenceSleep = 1 << 3;  // sleep_ms, sleep_forever
// path, wchan, kernel_stack, major_faults, mapping, fds, peers, local_address, remote_address
inline constexpr uint8_t kEvidenceFiles = 1 << 4;
// run_delay_ms, runnable_threads, throttled_ms, nr_throttled, pressure_resource,
// pressure_some_avg10, pressure_full_avg10
inline constexpr uint8_t kEvidenceScheduling = 1 << 5;

struct CauseKindRow {
  CauseKind kind;
  std::string_view key;  // in JSON; CauseKindName(kind)
  uint8_t evidence;      // kEvidence* bits
  // The cause's summary; `duration_ms` is the hang's (a sleep of unknown length lasted that).
  std::string (*text)(const Cause& c, uint64_t duration_ms);
  // Where a sample is found to wait for it: the agent's probe, and what it calls in cause/.
  std::string_view resolver;
};

// In the order of CauseKind, from kCpu (kNone, no cause, has no row).
inline constexpr CauseKindRow kCauseKinds[] = {
    {CauseKind::kCpu, "cpu", kEvidenceNone, cause_text::Cpu,
     "none yet: the agent leaves a busy sample without a cause"},
    {CauseKind::kStarved, "starved", kEvidenceScheduling, cause_text::Starved,
     "agent/samplers/wait_fd_cause.cc, RefineBySchedule (cause/sched_pressure.h)"},
    {CauseKind::kThrottled, "throttled", kEvidenceScheduling, cause_text::Throttled,
     "agent/samplers/wait_fd_cause.cc, RefineBySchedule (cause/sched_pressure.h: the cgroup's "
     "cpu.stat)"},
    {CauseKind::kPressure, "pressure", kEvidenceScheduling, cause_text::Pressure,
     "agent/samplers/wait_fd_cause.cc, RefineBySchedule (cause/sched_pressure.h: /proc/pressure)"},
    {CauseKind::kLock, "lock", kEvidenceLocks, cause_text::Lock,
     "agent/samplers/wait_cause_probe.cc, ProbeLock (cause/lock_owner.h)"},
    {CauseKind::kDeadlock, "deadlock", kEvidenceLocks | kEvidenceCycle, cause_text::Deadlock,
     "agent/samplers/wait_cause_probe.cc, ProbeLock (cause/lock_owner.h, FollowChain)"},
    {CauseKind::kIo, "io", kEvidenceFiles, cause_text::Io,
     "agent/samplers/wait_fd_cause.cc (cause/fd_peer.h, cause/kernel_wait.h)"},
    {CauseKind::kFault, "fault", kEvidenceFiles, cause_text::Fault,
     "agent/samplers/wait_fd_cause.cc, RefineBySchedule (cause/sched_pressure.h, cause/fault.h)"},
    {CauseKind::kIpc, "ipc", kEvidenceFiles, cause_text::Ipc,
     "agent/samplers/wait_fd_cause.cc (cause/wait_fds.h, cause/fd_peer.h, cause/sock_diag.h)"},
    {CauseKind::kChild, "child", kEvidenceChild, cause_text::Child,
     "agent/samplers/wait_cause_probe.cc (cause/child_wait.h)"},
    {CauseKind::kSleep, "sleep", kEvidenceSleep, cause_text::Sleep,
     "agent/samplers/wait_cause_probe.cc (cause/syscall_decode.h)"},
    {CauseKind::kOther, "other", kEvidenceNone, cause_text::Other,
     "agent/samplers/wait_cause_probe.cc (cause/syscall_decode.h): any other system call"},
};
inline constexpr size_t kNumCauseKinds = sizeof(kCauseKinds) / sizeof(kCauseKinds[0]);

// Each row is in its place and under its public name, and every kind of the enum has one.
constexpr bool CauseKindsAreInOrder() {
  for (size_t i = 0; i < kNumCauseKinds; ++i) {
    const CauseKindRow& row = kCauseKinds[i];
    if (static_cast<size_t>(row.kind) != i + 1) return false;
    if (row.key != std::string_view(CauseKindName(row.kind))) return false;
  }
  return std::string_view(CauseKindName(static_cast<CauseKind>(kNumCauseKinds + 1))).empty();
}
static_assert(CauseKindsAreInOrder(), "kCauseKinds: one row per CauseKind, in the enum's order");

// The row of a kind; nullptr for kNone and for values no row has (a damaged file's).
constexpr const CauseKindRow* FindCauseKind(CauseKind kind) {
  const size_t i = static_cast<size_t>(kind);
  return i >= 1 && i <= kNumCauseKinds ? &kCauseKinds[i - 1] : nullptr;
}

// The kind's evidence has a cycle of threads (a deadlock): the reports list those threads,
// else the chain of lock owners.
constexpr bool CauseHasCycle(CauseKind kind) {
  const CauseKindRow* row = FindCauseKind(kind);
  return row != nullptr && (row->evidence & kEvidenceCycle) != 0;
}

// A stored kind (the open-hang file's byte) that this build knows, kNone included.
constexpr bool IsKnownCauseKind(uint8_t value) { return value <= kNumCauseKinds; }

// A key back to its kind; kNone for "" and for keys of kinds this build does not know (a newer
// writer's: read as no cause).
constexpr CauseKind CauseKindFromKey(std::string_view key) {
  for (const CauseKindRow& row : kCauseKinds) {
    if (row.key == key) return row.kind;
  }
  return CauseKind::kNone;
}

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_CAUSE_KINDS_H_
