#include "fuzz/fuzz_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace hangwatch::fuzz {

const std::string& ScratchDir() {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hw-fuzz-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    auto* d = new std::string(tmpl);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchDir(), ignored);
    });
    return d;
  }();
  return *dir;
}

void WriteFile(const std::string& path, std::string_view bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  size_t done = 0;
  while (fd >= 0 && done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (fd < 0 || done != bytes.size() || close(fd) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

void WriteSeedsIfAsked(void (*write)(const std::string& dir)) {
  const char* dir = std::getenv("HANGWATCH_FUZZ_WRITE_SEEDS");
  if (dir == nullptr || *dir == '\0') return;
  write(dir);
  std::exit(0);
}

uint64_t InputReader::Take(size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes && i < 8; ++i, ++at_) {
    if (at_ < size_) v |= uint64_t{data_[at_]} << (8 * i);
  }
  return v;
}

std::string_view InputReader::Rest() const {
  return at_ < size_ ? std::string_view(reinterpret_cast<const char*>(data_ + at_), size_ - at_)
                     : std::string_view();
}

}  // namespace hangwatch::fuzz
