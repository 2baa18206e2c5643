// ExportState: per-file offsets of `hangwatch export`, by file identity.
#include "tools/export/otlp_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "report/utf8.h"

namespace hangwatch::tools {
namespace {

constexpr uint64_t kHeadBytes = 4096;

uint64_t U64(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  // 64-bit values that a reader in another language may hold as doubles are strings.
  if (it->is_string()) return std::strtoull(it->get<std::string>().c_str(), nullptr, 10);
  return 0;
}

// A string field: `fallback` when absent, false when it has another type (json::value would
// throw).
bool StringField(const nlohmann::json& j, const char* key, const char* fallback, std::string* out) {
  const auto it = j.find(key);
  if (it == j.end()) {
    *out = fallback;
    return true;
  }
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

}  // namespace

uint64_t HashFileHead(int fd, uint64_t len) {
  uint64_t h = 14695981039346656037ull;
  char buf[4096];
  uint64_t at = 0;
  while (at < len) {
    const ssize_t n =
        pread(fd, buf, std::min<uint64_t>(sizeof buf, len - at), static_cast<off_t>(at));
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ull;
    }
    at += static_cast<uint64_t>(n);
  }
  return h;
}

absl::Status ExportState::Load(const std::string& path) {
  path_ = path;
  files_.clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::InvalidArgumentError(path + ": " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return absl::OkStatus();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  const auto not_state = [&] {
    files_.clear();
    return absl::InvalidArgumentError(path + ": not a hangwatch export state file");
  };
  if (!j.is_object() || !j.contains("version") || !j["version"].is_number_integer() ||
      j["version"] != 1 || !j.contains("files") || !j["files"].is_array()) {
    return not_state();
  }
  for (const auto& f : j["files"]) {
    if (!f.is_object()) continue;
    ExportFileState s;
    std::string head_hash;
    if (!StringField(f, "path", "", &s.path) || !StringField(f, "head_hash", "0", &head_hash)) {
      return not_state();
    }
    if (f.contains("path_hex") && f["path_hex"].is_string()) {
      s.path = absl::HexStringToBytes(f["path_hex"].get<std::string>());
    }
    s.dev = U64(f, "dev");
    s.inode = U64(f, "inode");
    s.size = U64(f, "size");
    s.offset = U64(f, "offset");
    s.head_len = U64(f, "head_len");
    s.head_hash = std::strtoull(head_hash.c_str(), nullptr, 16);
    files_.push_back(std::move(s));
  }
  return absl::OkStatus();
}

ExportFileState* ExportState::Find(const struct stat& st) {
  for (ExportFileState& f : files_) {
    if (f.dev == static_cast<uint64_t>(st.st_dev) && f.inode == static_cast<uint64_t>(st.st_ino)) {
      return &f;
    }
  }
  return nullptr;
}

uint64_t ExportState::ResumeOffset(const std::string&, int fd, const struct stat& st) {
  const ExportFileState* f = Find(st);
  if (f == nullptr) return 0;
  if (static_cast<uint64_t>(st.st_size) < f->offset) return 0;  // truncated
  if (HashFileHead(fd, f->head_len) != f->head_hash) return 0;  // another file, same inode
  return f->offset;
}

void ExportState::Record(const std::string& path, int fd, const struct stat& st, uint64_t offset) {
  ExportFileState* f = Find(st);
  if (f == nullptr) {
    files_.emplace_back();
    f = &files_.back();
    f->dev = static_cast<uint64_t>(st.st_dev);
    f->inode = static_cast<uint64_t>(st.st_ino);
  }
  f->path = path;
  f->size = static_cast<uint64_t>(st.st_size);
  f->offset = offset;
  f->head_len = std::min<uint64_t>(offset, kHeadBytes);  // bytes already read: stable
  f->head_hash = HashFileHead(fd, f->head_len);
}

absl::Status ExportState::Save() {
  nlohmann::json files = nlohmann::json::array();
  for (const ExportFileState& f : files_) {
    // A file that no longer exists under its last name, as that file, is forgotten.
    struct stat st;
    if (stat(f.path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_dev) != f.dev ||
        static_cast<uint64_t>(st.st_ino) != f.inode) {
      continue;
    }
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(f.head_hash));
    nlohmann::json entry = {{"path", report::ValidUtf8(f.path)},
                            {"dev", f.dev},
                            {"inode", f.inode},
                            {"size", f.size},
                            {"offset", f.offset},
                            {"head_len", f.head_len},
                            {"head_hash", hash}};
    // JSON holds only UTF-8: a name with other bytes is kept exactly in hex too, so that the
    // next save finds the file again under it.
    if (!report::IsValidUtf8(f.path)) entry["path_hex"] = absl::BytesToHexString(f.path);
    files.push_back(std::move(entry));
  }
  const std::string text = nlohmann::json({{"version", 1}, {"files", files}}).dump(1) + "\n";
  const std::string tmp = path_ + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(tmp + ": " + std::strerror(errno));
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = fsync(fd) == 0 && ok;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return absl::UnavailableError(path_ + ": cannot write: " + why);
  }
  return absl::OkStatus();
}

}  // namespace hangwatch::tools
