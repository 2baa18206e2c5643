#include "hang/model/materialize_cause.h"

#include <string>

#include "report/cause_kinds.h"
#include "report/cause_text.h"
#include "report/stack_identity.h"

namespace hangwatch::agent {
namespace {

CauseLock LockOf(const WaitLock& l) {
  if (l.type == 0 && l.addr == 0) return {};
  return CauseLock{l.key(), l.addr};
}

CauseThread ThreadOf(const WaitThread& t, const WaitLock& holds, const FrameMaker& make_frame) {
  CauseThread c;
  c.tid = t.tid;
  c.name = t.name;
  c.state = t.state;
  c.syscall = t.call.text;
  c.wants = LockOf(t.wants);
  c.holds = LockOf(holds);
  const size_t n = t.num_frames < kCauseMaxFrames ? t.num_frames : kCauseMaxFrames;
  Stack s;
  for (size_t i = 0; i < n; ++i) s.frames.push_back(make_frame(t.frames[i], i > 0, t.methods[i]));
  c.culprit = report::FindCulprit(s);
  c.frames = std::move(s.frames);
  return c;
}

// The main thread as a thread of a deadlock cycle: its stack of the sample.
CauseThread MainThreadOf(const WaitCause& w, const HangRecord& record,
                         const std::vector<int>& new_id, const WaitLock& holds) {
  CauseThread c;
  c.tid = record.tid;
  c.name = w.main_name;
  c.state = 'S';
  c.syscall = w.call.text;
  c.wants = LockOf(w.lock);
  c.holds = LockOf(holds);
  if (w.main_stack >= 0 && static_cast<size_t>(w.main_stack) < new_id.size()) {
    const int id = new_id[static_cast<size_t>(w.main_stack)];
    if (id >= 0 && static_cast<size_t>(id) < record.stacks.size()) {
      c.frames = record.stacks[static_cast<size_t>(id)].frames;
      c.culprit = report::FindCulprit(record.stacks[static_cast<size_t>(id)]);
    }
  }
  return c;
}

}  // namespace

Cause MaterializeCause(const HangData& hang, const HangRecord& record,
                       const std::vector<int>& new_id, const FrameMaker& make_frame) {
  const WaitCause& w = hang.cause;
  Cause c;
  c.kind = w.kind;
  if (w.kind == CauseKind::kNone) return c;
  c.syscall = w.call.text;
  // The evidence of the kind's row (report/cause_kinds.h); the figures below are copied for
  // every kind (the encoder writes those of the row's groups).
  const report::CauseKindRow* row = report::FindCauseKind(w.kind);
  const uint8_t evidence = row != nullptr ? row->evidence : report::kEvidenceNone;
  if ((evidence & report::kEvidenceLocks) != 0) {
    c.lock = LockOf(w.lock);
    if (c.lock.empty()) c.lock = CauseLock{"unknown", 0};
    const size_t n = w.num_threads < kCauseMaxThreads ? w.num_threads : kCauseMaxThreads;
    for (size_t i = 0; i < n; ++i) {
      c.chain.push_back(
          ThreadOf(w.threads[i], i == 0 ? w.lock : w.threads[i - 1].wants, make_frame));
    }
    c.chain_truncated = w.chain_truncated;
    c.has_owner = !c.chain.empty();
    if (c.has_owner) c.owner = c.chain[0];
    if ((evidence & report::kEvidenceCycle) != 0 && n > 0) {
      // The last thread of the chain wants a lock held by the first of the cycle.
      const WaitLock& closing = w.threads[n - 1].wants;
      if (w.cycle_from < 0) {
        c.cycle.push_back(MainThreadOf(w, record, new_id, closing));
        for (const CauseThread& t : c.chain) c.cycle.push_back(t);
      } else {
        for (size_t i = static_cast<size_t>(w.cycle_from); i < n; ++i) {
          c.cycle.push_back(c.chain[i]);
        }
        if (!c.cycle.empty()) c.cycle[0].holds = LockOf(closing);
      }
    }
  }
  if ((evidence & report::kEvidenceChild) != 0) {
    c.child = CauseProcess{w.child.pid, w.child.name, w.child.state};
  }
  c.sleep_ms = w.sleep_ns / 1'000'000;
  c.sleep_forever = w.sleep_forever;
  c.path = w.path;
  c.wchan = w.wchan;
  c.kernel_stack = w.kernel_stack;
  c.major_faults = w.major_faults;
  c.mapping = w.mapping;
  for (size_t i = 0; i < w.num_fds && i < kCauseMaxFds; ++i) c.fds.push_back(w.fds[i]);
  for (size_t i = 0; i < w.num_peers && i < kCauseMaxPeers; ++i) {
    c.peers.push_back(CauseProcess{w.peers[i].pid, w.peers[i].name, w.peers[i].state});
  }
  c.local_address = w.local_address;
  c.remote_address = w.remote_address;
  c.run_delay_ms = w.run_delay_ns / 1'000'000;
  c.runnable_threads = w.runnable_threads;
  c.throttled_ms = w.throttled_ns / 1'000'000;
  c.nr_throttled = w.nr_throttled;
  c.pressure_resource = w.pressure_resource;
  c.pressure_some_avg10 = w.pressure_some_avg10_centi / 100.0;
  c.pressure_full_avg10 = w.pressure_full_avg10_centi / 100.0;
  c.summary = report::DescribeCause(c, record.duration_ms, record.thread_role);
  return c;
}

}  // namespace hangwatch::agent
