#include "tools/reader/report_follower.h"

#include <glob.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "tools/reader/line_reader.h"

namespace hangwatch::tools {
namespace {

bool IsGlobPattern(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

ReportFollower::ReportFollower(std::vector<std::string> patterns, Options options)
    : patterns_(std::move(patterns)), options_(options) {
  if (!options_.from_end_at_start) return;
  for (const std::string& name : Names()) Take(name, /*from_end=*/true, [](Event) {});
}

std::vector<std::string> ReportFollower::Names() const {
  std::vector<std::string> names;
  for (const std::string& p : patterns_) {
    if (!options_.globs || !IsGlobPattern(p)) {
      names.push_back(p);
      continue;
    }
    glob_t g = {};
    if (glob(p.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) names.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  return names;
}

void ReportFollower::Unreadable(const std::string& name, const EventHandler& on_event) {
  if (unreadable_.insert(name).second) on_event(Event::kUnreadable);
}

// Holds `name` unless it is a file already held or refused.
void ReportFollower::Take(const std::string& name, bool from_end, const EventHandler& on_event) {
  struct stat st = {};
  if (stat(name.c_str(), &st) != 0) {
    if (errno != ENOENT) Unreadable(name, on_event);  // a missing file may appear later
    return;
  }
  const Key key{st.st_dev, st.st_ino};
  if (followed_.count(key) != 0) {
    for (auto& f : order_) f->named |= f->key == key;
    return;
  }
  if (refused_.count(key) != 0) return;
  // InputFile's rule: an open never waits (a FIFO put in its place), only a regular file is
  // kept. A symbolic link is followed, as the writers follow it.
  auto f = std::make_unique<Followed>();
  std::string error;
  if (!f->file.Open(name, &error)) {
    Unreadable(name, on_event);
    return;
  }
  f->key = {f->file.stat().st_dev, f->file.stat().st_ino};
  if (followed_.count(f->key) != 0) return;  // replaced between the stat and the open
  if (f->file.Sniff() != InputFormat::kJsonLines) {
    refused_.insert(f->key);
    Unreadable(name, on_event);
    return;
  }
  unreadable_.erase(name);
  f->named = true;
  f->offset = from_end ? static_cast<uint64_t>(f->file.stat().st_size) : 0;
  followed_.insert(f->key);
  order_.push_back(std::move(f));
}

void ReportFollower::Discover(const EventHandler& on_event) {
  for (auto& f : order_) f->named = false;
  for (const std::string& name : Names()) Take(name, /*from_end=*/false, on_event);
}

int ReportFollower::Read(Followed* f, Ending ending, const LineHandler& on_line,
                         const EventHandler& on_event) {
  struct stat st = {};
  if (fstat(f->file.fd(), &st) == 0 && static_cast<uint64_t>(st.st_size) < f->offset) {
    f->offset = 0;  // truncated (copytruncate): its lines are new ones
  }
  LineReader reader(f->file, f->offset);
  Line line;
  while (reader.Next(&line)) {
    if (!line.terminated && ending == Ending::kWait) break;  // still being written: read it again
    if (line.too_long) {
      on_event(Event::kTooLong);
    } else if (!line.terminated && ending == Ending::kTorn) {
      on_event(Event::kTorn);
    } else {
      on_line(line.text);
    }
    bytes_ += reader.offset() - f->offset;
    f->offset = reader.offset();
  }
  return reader.error();
}

void ReportFollower::Poll(const LineHandler& on_line, const EventHandler& on_event) {
  Discover(on_event);
  const auto now = std::chrono::steady_clock::now();
  for (auto it = order_.begin(); it != order_.end();) {
    Followed* f = it->get();
    if (f->named) {
      f->unnamed_since = {};
    } else if (f->unnamed_since == std::chrono::steady_clock::time_point{}) {
      f->unnamed_since = now;
    }
    const bool closing = !f->named && now - f->unnamed_since >= options_.grace;
    if (Read(f, closing ? Ending::kTorn : Ending::kWait, on_line, on_event) != 0) {
      Unreadable(f->file.path(), on_event);
    }
    if (closing) {
      followed_.erase(f->key);
      it = order_.erase(it);
    } else {
      ++it;
    }
  }
}

bool ReportFollower::ReadToEnd(const LineHandler& on_line, const EventHandler& on_event,
                               std::string* error) {
  Discover(on_event);
  std::vector<std::unique_ptr<Followed>> files = std::move(order_);
  order_.clear();
  followed_.clear();
  for (auto& f : files) {
    if (const int e = Read(f.get(), Ending::kLine, on_line, on_event); e != 0) {
      *error = f->file.path() + ": " + std::strerror(e);
      return false;
    }
  }
  return true;
}

}  // namespace hangwatch::tools
