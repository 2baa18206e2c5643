// libFuzzer target: ReadOpenHangFile (hang/open_hang/open_hang_file.h), which the agent runs at
// start and `hangwatch report` / `gate` run on a file left by a process that died (a file in a
// directory others may write). Each input is read twice: as it is, and with every checksum
// recomputed so that mutations get past them to the layout, the counts and the records behind them.
// Seeds: files written by OpenHangFile itself, formats 1 to 8 (HANGWATCH_FUZZ_WRITE_SEEDS=DIR).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "hang/model/hang_data.h"
#include "hang/open_hang/open_hang_context.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hang_record.h"

namespace {

using hangwatch::agent::OpenHangFile;

// The file's checksum: FNV-1a, 64 bits (hang/open_hang/open_hang_file.cc).
uint64_t Checksum(const unsigned char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t Get(const std::string& s, size_t at, size_t bytes) {
  uint64_t v = 0;
  std::memcpy(&v, s.data() + at, bytes);  // native byte order, like the file
  return v;
}
void SetChecksum(std::string* s, size_t at, size_t covered_from) {
  const uint64_t sum =
      Checksum(reinterpret_cast<const unsigned char*>(s->data()) + covered_from, at - covered_from);
  std::memcpy(s->data() + at, &sum, sizeof sum);
}

// Recomputes the checksums of the layout in hang/open_hang/open_hang_file.cc, wherever the counts
// and offsets the file states fit in it: the static header's (bytes [0, 72), stored at 72); for
// each live header (at 256 and 512) that says a hang is open (u32 at +8), the sum of its module
// table (u32 count at +76, sum at +80) and of the sample records it counts (u32 at +12; each
// record's last 8 bytes); each live header's own (bytes [0, 152), stored at +152, from format 7
// (u32 at 8) on, whose header has the thread at +104; bytes [0, 104), stored at +104, in format 6,
// whose header has the Python names' bytes at +96; bytes [0, 96), stored at +96, in formats 4 and
// 5, whose header has the pause at +88; bytes [0, 88), stored at +88, before); from format 8, each
// copy of the context region (the file's last OpenHangContextBytes(version), by the size the
// static header states at 64) whose u32 at +8 is the format's OpenHangContextPayload (896 in
// format 8, this build's sizeof(HangContext) from 9): bytes [0, 16 + that)
// of the copy, stored after them. (The Python names region's entries and the cause region's
// copies carry their own checksums: a fuzzed one is not fixed.) The
// seeds, written by OpenHangFile, must come out unchanged (WriteSeeds checks), so a change of the
// layout is noticed here.
void FixChecksums(std::string* s) {
  if (s->size() < 1024) return;
  SetChecksum(s, 72, 0);
  const uint64_t version = Get(*s, 8, 4);
  const size_t live_checksum = version >= 7 ? 152 : version >= 6 ? 104 : version >= 4 ? 96 : 88;
  const uint64_t modules_offset = Get(*s, 32, 8), samples_offset = Get(*s, 40, 8);
  const uint64_t module_size = Get(*s, 48, 8), sample_size = Get(*s, 56, 8);
  uint64_t records = 0;
  for (size_t live : {256, 512}) {
    if (Get(*s, live + 8, 4) != 0) {
      records = std::max(records, Get(*s, live + 12, 4));
      const uint64_t num_modules = Get(*s, live + 76, 4);
      if (module_size <= s->size() && modules_offset <= s->size() &&
          num_modules * module_size <= s->size() - modules_offset) {
        const uint64_t sum =
            Checksum(reinterpret_cast<const unsigned char*>(s->data()) + modules_offset,
                     num_modules * module_size);
        std::memcpy(s->data() + live + 80, &sum, sizeof sum);
      }
    }
    SetChecksum(s, live + live_checksum, live);
  }
  const uint64_t file_size = Get(*s, 64, 8);
  const uint32_t format = static_cast<uint32_t>(version);
  const size_t context_bytes = version >= 8 ? hangwatch::agent::OpenHangContextBytes(format) : 0;
  if (version >= 8 && file_size <= s->size() && file_size >= 1024 + context_bytes) {
    const size_t context_size = hangwatch::agent::OpenHangContextPayload(format);
    for (size_t copy = 0; copy < 2; ++copy) {
      const size_t at = file_size - context_bytes + copy * (context_bytes / 2);
      if (Get(*s, at + 8, 4) == context_size) SetChecksum(s, at + 16 + context_size, at);
    }
  }
  if (sample_size < 8 || sample_size > s->size() || samples_offset > s->size()) return;
  for (uint64_t at = samples_offset, i = 0; i < records && s->size() - at >= sample_size;
       at += sample_size, ++i) {
    SetChecksum(s, at + sample_size - 8, at);
  }
}

std::string ReadWhole(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  char buf[65536];
  for (ssize_t n; fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  if (fd >= 0) close(fd);
  return out;
}

[[gnu::noinline]] void SeedFunction() { asm volatile(""); }

// An open hang of `samples` samples (one failed), frames in this binary, written as format
// `version`; the file's bytes while it is open.
std::string OpenHangBytes(uint32_t version, size_t samples) {
  hangwatch::agent::HangLimits limits;
  limits.max_frames = 6;
  limits.max_unique_stacks = 4;
  limits.max_timeline = 4;
  const std::string path = hangwatch::fuzz::ScratchDir() + "/seed.hang";
  unlink(path.c_str());
  std::string error;
  auto file = OpenHangFile::CreateForTest(path, limits, &error, version);
  if (file == nullptr) {
    std::fprintf(stderr, "open_hang_file_fuzzer: %s\n", error.c_str());
    std::abort();
  }
  hangwatch::agent::HangData hang(limits);
  hang.summary.pid = 4242;
  hang.summary.tid = 4242;
  hang.summary.start_unix_ms = 1700000000000;
  hang.summary.threshold_ms = 250;
  hang.summary.sample_interval_ms = 100;
  // What the pass was serving (kept from format 8).
  hangwatch::agent::HangContext& context = hang.context;
  std::strcpy(context.labels[0], "seed.outer");
  std::strcpy(context.labels[1], "seed.inner");
  context.label_count = 2;
  context.label_depth = 3;
  context.has_trigger = true;
  context.trigger_kind = hangwatch::internal::kTriggerFd;
  context.fd = 5;
  context.ready = 1;
  std::strcpy(context.trigger_name, "pipe");
  std::strcpy(context.source, "seed-source");
  context.callback = reinterpret_cast<uintptr_t>(&SeedFunction);
  context.input.known = true;
  context.input.pending = true;
  context.input.events = 2;
  context.input.kinds = hangwatch::agent::kInputKey;
  context.perceived_known = true;
  context.perceived = true;
  context.queued_ms = 700;
  const uintptr_t frames[3] = {reinterpret_cast<uintptr_t>(&SeedFunction),
                               reinterpret_cast<uintptr_t>(&OpenHangBytes) + 16,
                               reinterpret_cast<uintptr_t>(&FixChecksums) + 8};
  const hangwatch::FrameMethod methods[3] = {hangwatch::FrameMethod::kPc,
                                             hangwatch::FrameMethod::kCfi,
                                             hangwatch::FrameMethod::kFramePointer};
  for (size_t i = 0; i < samples; ++i) {
    const bool ok = i != 1;
    hang.AddSample(static_cast<uint32_t>(300 + 100 * i), ok ? frames : nullptr, ok ? 3 - i % 2 : 0,
                   frames[0], 20'000'000, i % 2 ? 'S' : 'R', ok, methods,
                   hangwatch::SampleMethod::kSignal);
    hang.summary.pause_ns += ok ? 35'000 : 0;  // format 4 keeps it
    if (i == 0)
      file->Open(hang);
    else
      file->AddLastSample(hang);
  }
  return ReadWhole(path);
}

void WriteSeeds(const std::string& dir) {
  const std::string seeds[] = {OpenHangBytes(2, 3), OpenHangBytes(1, 2), OpenHangBytes(2, 4),
                               OpenHangBytes(3, 3), OpenHangBytes(4, 3), OpenHangBytes(4, 4),
                               OpenHangBytes(6, 3), OpenHangBytes(7, 3), OpenHangBytes(8, 3),
                               OpenHangBytes(8, 4), OpenHangBytes(9, 3)};
  int i = 0;
  for (const std::string& seed : seeds) {
    std::string fixed = seed;
    FixChecksums(&fixed);
    if (fixed != seed) {
      std::fprintf(stderr,
                   "open_hang_file_fuzzer: the checksums are not where FixChecksums "
                   "puts them: update it to the layout of hang/open_hang/open_hang_file.cc\n");
      std::abort();
    }
    hangwatch::fuzz::WriteFile(dir + "/open" + std::to_string(i++), seed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hangwatch::fuzz::WriteSeedsIfAsked(WriteSeeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hangwatch::fuzz::ScratchDir() + "/input.hang";
  std::string bytes(reinterpret_cast<const char*>(data), size);
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) FixChecksums(&bytes);
    hangwatch::fuzz::WriteFile(path, bytes);
    hangwatch::HangRecord hang;
    std::string error;
    const auto status = hangwatch::agent::ReadOpenHangFile(path, &hang, &error);
    if (status == hangwatch::agent::OpenHangReadStatus::kInvalid &&
        (error.empty() || error.find('\n') != std::string::npos)) {
      __builtin_trap();  // one line saying why
    }
    if (status == hangwatch::agent::OpenHangReadStatus::kFound) {
      if (!hang.fatal) __builtin_trap();
      for (const auto& t : hang.timeline) {
        if (t.stack >= static_cast<int>(hang.stacks.size())) __builtin_trap();
      }
    }
  }
  return 0;
}
