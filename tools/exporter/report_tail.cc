#include "tools/exporter/report_tail.h"

#include <glob.h>
#include <sys/stat.h>

#include <cerrno>

#include "hangwatch_prometheus_metrics.h"
#include "tools/reader/line_reader.h"

namespace hangwatch::tools {
namespace {

bool IsPattern(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

ReportTail::ReportTail(std::vector<std::string> patterns, std::chrono::milliseconds grace)
    : patterns_(std::move(patterns)), grace_(grace) {}

std::vector<std::string> ReportTail::Names() const {
  std::vector<std::string> names;
  for (const std::string& p : patterns_) {
    if (!IsPattern(p)) {
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

void ReportTail::Unreadable(const std::string& name, const SkipHandler& on_skip) {
  if (unreadable_.insert(name).second) on_skip(kSkipUnreadable);
}

void ReportTail::Discover(const std::string& name, const SkipHandler& on_skip) {
  struct stat st = {};
  if (stat(name.c_str(), &st) != 0) {
    if (errno != ENOENT) Unreadable(name, on_skip);  // a missing file may appear later
    return;
  }
  const Key key{st.st_dev, st.st_ino};
  if (auto it = followed_.find(key); it != followed_.end()) {
    it->second->named = true;
    return;
  }
  if (refused_.count(key) != 0) return;
  auto f = std::make_unique<Followed>();
  std::string error;
  if (!f->file.Open(name, &error)) {
    Unreadable(name, on_skip);
    return;
  }
  if (f->file.Sniff() != InputFormat::kJsonLines) {
    refused_.insert(key);
    Unreadable(name, on_skip);
    return;
  }
  unreadable_.erase(name);
  f->named = true;
  followed_.emplace(key, std::move(f));
}

void ReportTail::Read(Followed* f, bool closing, const LineHandler& on_line,
                      const SkipHandler& on_skip) {
  struct stat st = {};
  if (fstat(f->file.fd(), &st) == 0 && static_cast<uint64_t>(st.st_size) < f->offset) {
    f->offset = 0;  // truncated (copytruncate): its lines are new ones
  }
  LineReader reader(f->file, f->offset);
  Line line;
  while (reader.Next(&line)) {
    if (!line.terminated) {
      if (closing) {
        on_skip(kSkipTorn);
        bytes_ += reader.offset() - f->offset;
        f->offset = reader.offset();
      }
      break;  // else: still being written; read again from its start next time
    }
    if (line.too_long) {
      on_skip(kSkipTooLong);
    } else if (!line.text.empty()) {
      on_line(line.text);
    }
    bytes_ += reader.offset() - f->offset;
    f->offset = reader.offset();
  }
  if (reader.error() != 0) Unreadable(f->file.path(), on_skip);
}

void ReportTail::Poll(const LineHandler& on_line, const SkipHandler& on_skip) {
  for (auto& [key, f] : followed_) f->named = false;
  for (const std::string& name : Names()) Discover(name, on_skip);
  const auto now = std::chrono::steady_clock::now();
  for (auto it = followed_.begin(); it != followed_.end();) {
    Followed* f = it->second.get();
    if (f->named) {
      f->unnamed_since = {};
    } else if (f->unnamed_since == std::chrono::steady_clock::time_point{}) {
      f->unnamed_since = now;
    }
    const bool closing = !f->named && now - f->unnamed_since >= grace_;
    Read(f, closing, on_line, on_skip);
    it = closing ? followed_.erase(it) : std::next(it);
  }
}

}  // namespace hangwatch::tools
