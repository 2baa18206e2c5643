// Reading a HotSpot thread dump (thread_dump.h).
#include "jvm/thread_dump.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hangwatch::jvm {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s[0] == ' ' || s[0] == '\t')) s.remove_prefix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// A hexadecimal number at the start of `s` ("0x" optional); false when there is none.
bool HexAt(std::string_view s, uint64_t* v) {
  if (StartsWith(s, "0x")) s.remove_prefix(2);
  size_t n = 0;
  uint64_t value = 0;
  while (n < s.size() && n < 16) {
    const char c = s[n];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      break;
    }
    value = value * 16 + static_cast<uint64_t>(d);
    ++n;
  }
  if (n == 0) return false;
  *v = value;
  return true;
}

// The value after "key=" in a header, as hex ("nid=0x2b4f").
bool HeaderHex(std::string_view header, std::string_view key, uint64_t* v) {
  const size_t at = header.rfind(key);
  return at != std::string_view::npos && HexAt(header.substr(at + key.size()), v);
}

// A thread header: '"' NAME '"' then fields; the name may hold anything, quotes included, so it
// ends at the last quote before the fields (found from the end: "prio=" or "os_prio=" or, for
// VM threads, "tid=" / "nid=").
bool ParseHeader(std::string_view line, JavaThread* t) {
  if (line.size() < 2 || line[0] != '"') return false;
  size_t fields = std::string_view::npos;
  for (std::string_view key : {" os_prio=", " prio=", " tid=", " nid="}) {
    const size_t at = line.rfind(key);
    if (at != std::string_view::npos && (fields == std::string_view::npos || at < fields)) {
      fields = at;
    }
  }
  if (fields == std::string_view::npos) return false;
  const size_t quote = line.rfind('"', fields);
  if (quote == std::string_view::npos || quote == 0) return false;
  t->name = std::string(line.substr(1, quote - 1));
  const std::string_view rest = line.substr(quote + 1);
  HeaderHex(rest, " nid=", &t->nid);
  const std::string_view after_name = TrimLeft(rest);
  if (StartsWith(after_name, "#")) {
    t->number = std::strtoll(std::string(after_name.substr(1, 20)).c_str(), nullptr, 10);
  }
  t->daemon = rest.find(" daemon ") != std::string_view::npos;
  return true;
}

// "<0x000000069ec19210> (a java.lang.Object)": the object and its class.
void ParseLockObject(std::string_view s, JavaLockLine* lock) {
  const size_t lt = s.find('<');
  if (lt != std::string_view::npos) HexAt(s.substr(lt + 1), &lock->object);
  const size_t a = s.find("(a ");
  if (a != std::string_view::npos) {
    std::string_view k = s.substr(a + 3);
    const size_t close = k.find(')');
    if (close != std::string_view::npos) k = k.substr(0, close);
    lock->klass = std::string(k);
  }
}

// A "- ..." lock line of a frame; false when unknown.
bool ParseLockLine(std::string_view s, JavaLockLine* lock) {
  struct Prefix {
    std::string_view text;
    JavaLockRole role;
  };
  static constexpr Prefix kPrefixes[] = {
      {"- waiting to lock ", JavaLockRole::kWaitingToLock},
      {"- waiting to re-lock in wait() ", JavaLockRole::kWaitingToRelock},
      {"- waiting on ", JavaLockRole::kWaitingOn},
      {"- parking to wait for ", JavaLockRole::kParkingFor},
      {"- locked ", JavaLockRole::kLocked},
  };
  for (const Prefix& p : kPrefixes) {
    if (StartsWith(s, p.text)) {
      lock->role = p.role;
      ParseLockObject(s.substr(p.text.size()), lock);
      return true;
    }
  }
  return false;
}

// `"worker-a":` in the deadlock section: the name between the first and the last quote.
bool QuotedName(std::string_view s, std::string* name) {
  s = TrimRight(s);
  if (s.size() < 2 || s[0] != '"') return false;
  const size_t last = s.rfind('"');
  if (last == 0) return false;
  *name = std::string(s.substr(1, last - 1));
  return true;
}

}  // namespace

bool ParseJavaFrame(std::string_view text, JavaFrame* frame) {
  text = TrimRight(text);
  if (text.empty() || text.back() != ')') return false;
  const size_t open = text.rfind('(');
  if (open == std::string_view::npos || open == 0) return false;
  frame->method = std::string(text.substr(0, open));
  std::string_view where = text.substr(open + 1, text.size() - open - 2);
  // "module@version/" first (a class loader's "app//" too), then the place in the file.
  const size_t slash = where.rfind('/');
  if (slash != std::string_view::npos) {
    frame->module = std::string(where.substr(0, slash));
    where.remove_prefix(slash + 1);
    if (!frame->module.empty() && frame->module.back() == '/') frame->module.pop_back();
  }
  if (where == "Native Method") {
    frame->native_method = true;
    return true;
  }
  if (where == "Unknown Source") return true;
  const size_t colon = where.rfind(':');
  if (colon != std::string_view::npos) {
    const std::string digits(where.substr(colon + 1));
    char* end = nullptr;
    errno = 0;
    const long line = std::strtol(digits.c_str(), &end, 10);
    if (!digits.empty() && *end == '\0' && errno == 0 && line > 0 && line < (1L << 30)) {
      frame->line = static_cast<int>(line);
      where = where.substr(0, colon);
    }
  }
  frame->file = std::string(where);
  return true;
}

std::string JavaFrameLabel(const JavaFrame& f) {
  std::string s = f.method;
  if (f.native_method) return s + " (Native Method)";
  if (f.file.empty()) return s;
  s += " (" + f.file;
  if (f.line > 0) s += ":" + std::to_string(f.line);
  return s + ")";
}

ThreadDump ParseThreadDump(std::string_view text, size_t max_threads, size_t max_frames) {
  ThreadDump dump;
  enum class Section { kThreads, kDeadlock, kDeadlockStacks } section = Section::kThreads;
  JavaThread* thread = nullptr;  // the thread whose lines follow
  bool ownable = false;          // inside its "Locked ownable synchronizers:"
  std::vector<JavaDeadlockEdge>* cycle = nullptr;
  JavaDeadlockEdge* edge = nullptr;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = TrimRight(text.substr(at, end - at));
    at = end + 1;
    const std::string_view line = TrimLeft(raw);
    if (StartsWith(raw, "Full thread dump ")) {
      std::string_view vm = raw.substr(17);
      if (!vm.empty() && vm.back() == ':') vm.remove_suffix(1);
      dump.vm = std::string(vm);
      continue;
    }
    if (StartsWith(raw, "Found one Java-level deadlock:")) {
      section = Section::kDeadlock;
      dump.deadlocks.emplace_back();
      cycle = &dump.deadlocks.back();
      edge = nullptr;
      thread = nullptr;
      continue;
    }
    if (StartsWith(raw, "Java stack information for the threads listed above")) {
      section = Section::kDeadlockStacks;
      continue;
    }
    if (section == Section::kDeadlockStacks) continue;  // the same frames again
    if (section == Section::kDeadlock) {
      std::string name;
      if (StartsWith(raw, "\"") && QuotedName(raw, &name) && raw.back() == ':') {
        cycle->push_back({});
        edge = &cycle->back();
        edge->thread = name;
      } else if (edge != nullptr && StartsWith(line, "waiting to lock monitor ")) {
        edge->monitor = true;
        const size_t object = line.find("(object ");
        if (object != std::string_view::npos) HexAt(line.substr(object + 8), &edge->object);
        const size_t a = line.find(", a ");
        if (a != std::string_view::npos) {
          std::string_view k = line.substr(a + 4);
          k = k.substr(0, k.find(')'));
          edge->klass = std::string(k);
        }
      } else if (edge != nullptr && StartsWith(line, "waiting for ownable synchronizer ")) {
        edge->monitor = false;
        HexAt(line.substr(33), &edge->object);
        const size_t a = line.find("(a ");
        if (a != std::string_view::npos) {
          std::string_view k = line.substr(a + 3);
          k = k.substr(0, k.find(')'));
          edge->klass = std::string(k);
        }
      } else if (edge != nullptr && StartsWith(line, "which is held by ")) {
        std::string_view held = line.substr(17);
        if (!QuotedName(held, &edge->held_by)) edge->held_by = std::string(held);
      }
      continue;
    }
    // The threads.
    if (StartsWith(raw, "\"")) {
      JavaThread t;
      if (!ParseHeader(raw, &t)) continue;
      if (dump.threads.size() >= max_threads) {
        thread = nullptr;
        continue;
      }
      dump.threads.push_back(std::move(t));
      thread = &dump.threads.back();
      ownable = false;
      continue;
    }
    if (thread == nullptr) continue;
    if (StartsWith(line, "java.lang.Thread.State: ")) {
      thread->state = std::string(line.substr(24));
    } else if (StartsWith(line, "at ")) {
      ownable = false;
      JavaFrame f;
      if (thread->frames.size() < max_frames && ParseJavaFrame(line.substr(3), &f)) {
        thread->frames.push_back(std::move(f));
      }
    } else if (StartsWith(line, "Locked ownable synchronizers:")) {
      ownable = true;
    } else if (StartsWith(line, "- ")) {
      JavaLockLine lock;
      if (ownable) {
        if (line == "- None") continue;
        lock.role = JavaLockRole::kOwnable;
        ParseLockObject(line.substr(2), &lock);
        lock.frame = thread->frames.size();
        thread->locks.push_back(std::move(lock));
      } else if (!thread->frames.empty() && ParseLockLine(line, &lock)) {
        lock.frame = thread->frames.size() - 1;
        thread->locks.push_back(std::move(lock));
      }
    } else if (raw.empty()) {
      ownable = false;
    }
  }
  // A deadlock section cut short leaves an empty cycle.
  std::erase_if(dump.deadlocks, [](const auto& c) { return c.empty(); });
  return dump;
}

}  // namespace hangwatch::jvm
