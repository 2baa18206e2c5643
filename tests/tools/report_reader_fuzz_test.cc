// The fuzz target's entry point (fuzz/report_reader_fuzzer.cc, the object library
// hangwatch_fuzz_report_reader) on its seed corpus and on deterministic mutations of it (byte
// flips, cuts, duplications, insertions of JSON punctuation), in every build - plus every output
// format on whatever parses: nothing may crash, and the trace output must stay valid.
#include <dirent.h>

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cli_util.h"
#include "tools/reader/report_reader.h"
#include "tools/report/formats/report_formats.h"
#include "trace_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace hangwatch::tools {
namespace {

std::vector<std::string> Corpus() {
  std::vector<std::string> seeds;
  DIR* d = opendir(FUZZ_CORPUS_DIR);
  if (d == nullptr) return seeds;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    seeds.push_back(hangwatch::testing::ReadFile(std::string(FUZZ_CORPUS_DIR) + "/" + e->d_name));
  }
  closedir(d);
  return seeds;
}

std::string Mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  const char* kPieces[] = {"{",
                           "}",
                           "[",
                           "]",
                           "\"",
                           ",",
                           ":",
                           "\\",
                           "0x",
                           "-1",
                           "1e999",
                           "null",
                           "\n",
                           "\"stacks\":[",
                           "\"frames\":{}",
                           "\xff",
                           "\\u0000"};
  const int edits = 1 + static_cast<int>(rng() % 2);
  for (int i = 0; i < edits && !s.empty(); ++i) {
    const size_t at = rng() % s.size();
    switch (rng() % 5) {
      case 0:
        s[at] = static_cast<char>(rng());
        break;
      case 1:
        s.erase(at, rng() % 64);
        break;
      case 2:
        s.insert(at, kPieces[rng() % (sizeof kPieces / sizeof kPieces[0])]);
        break;
      case 3:
        s.insert(at, s.substr(rng() % s.size(), rng() % 128));
        break;
      case 4:
        s.resize(at);
        break;
    }
  }
  return s;
}

TEST(ReportReaderFuzz, SeedsAndMutationsNeverCrash) {
  const std::vector<std::string> seeds = Corpus();
  ASSERT_GE(seeds.size(), 4u);
  std::mt19937_64 rng(12345);
  size_t parsed = 0, inputs = 0;
  for (int round = 0; round < 600; ++round) {
    for (const std::string& seed : seeds) {
      const std::string input = round == 0 ? seed : Mutate(seed, rng);
      ++inputs;
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      Report r;
      std::string error;
      if (!ParseJsonLines(input, &r, &error) || r.hangs.empty()) continue;
      ++parsed;
      (void)FormatText(r);
      (void)FormatSummary(r, 8);
      (void)FormatFolded(r);
      (void)FormatSvg(r, "t");
      (void)FormatJsonLines(r);
      ASSERT_EQ(hangwatch::testing::CheckTraceEvents(FormatTrace(r)), "") << input;
    }
  }
  EXPECT_GT(parsed, inputs / 20) << "mutations should not all be rejected";
}

}  // namespace
}  // namespace hangwatch::tools
