// The JSON Lines report against its documented schema (docs/report-format.md), its atomic
// whole-line appends, torn-line recovery and rotation.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hang/files/jsonl_writer.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  std::string p = std::string(dir ? dir : "/tmp") + "/hangwatch_" + name + "_" +
                  std::to_string(getpid()) + ".jsonl";
  unlink(p.c_str());
  unlink((p + ".1").c_str());
  return p;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What docs/report-format.md tells readers to do: one object per line, skip lines that do not
// parse.
std::vector<json> ReadReport(const std::string& path, size_t* skipped = nullptr) {
  std::vector<json> out;
  std::istringstream lines(ReadFile(path));
  std::string line;
  size_t bad = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      ++bad;
      continue;
    }
    out.push_back(std::move(j));
  }
  if (skipped) *skipped = bad;
  return out;
}

// ---- the documented schema, field by field ----
#define REQUIRE(cond, msg)                \
  do {                                    \
    if (!(cond)) return std::string(msg); \
  } while (0)

bool IsHex(const json& v) {
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  if (s.size() < 3 || s.rfind("0x", 0) != 0) return false;
  return s.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
}
bool IsLowerHex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string ValidateFrame(const json& f) {
  REQUIRE(f.is_object(), "frame not an object");
  REQUIRE(IsHex(f["addr"]), "frame.addr not hex");
  REQUIRE(f["module"].is_string(), "frame.module not a string");
  REQUIRE(f["build_id"].is_string() && IsLowerHex(f["build_id"]), "frame.build_id");
  REQUIRE(IsHex(f["offset"]), "frame.offset not hex");
  if (f.contains("symbol")) REQUIRE(f["symbol"].is_string(), "frame.symbol");
  if (f.contains("file")) REQUIRE(f["file"].is_string() && f["line"].is_number_integer(), "file");
  if (f.contains("method")) {
    const std::set<std::string> methods = {"pc", "fp", "cfi", "lr", "fp-scan"};
    REQUIRE(f["method"].is_string() && methods.count(f["method"].get<std::string>()),
            "frame.method");
  }
  return "";
}

std::string ValidateHang(const json& j) {
  REQUIRE(j.is_object(), "not an object");
  REQUIRE(j["type"] == "hang", "type");
  REQUIRE(j["format_version"] == 1, "format_version");
  for (const char* k : {"pid", "tid", "hang_id", "start_unix_ms", "duration_ms", "cpu_ms",
                        "cpu_percent", "stopped_ms", "threshold_ms", "sample_interval_ms",
                        "samples", "failed_samples", "dropped_stacks", "dominant_stack"}) {
    REQUIRE(j.contains(k) && j[k].is_number_integer(), std::string("integer field ") + k);
  }
  REQUIRE(j["pid"].get<int64_t>() > 0 && j["tid"].get<int64_t>() > 0, "pid/tid");
  REQUIRE(j["cpu_percent"].get<int64_t>() >= 0 && j["cpu_percent"].get<int64_t>() <= 100,
          "cpu_percent range");
  REQUIRE(j["cpu_ms"].get<int64_t>() <= j["duration_ms"].get<int64_t>(), "cpu_ms > duration");
  REQUIRE(j["process"].is_string(), "process");
  const std::set<std::string> classes = {"busy", "blocked", "mixed", "unknown"};
  REQUIRE(j["class"].is_string() && classes.count(j["class"].get<std::string>()), "class");
  REQUIRE(j["fatal"].is_boolean() && j["timeline_truncated"].is_boolean(), "booleans");
  REQUIRE(j["fingerprint"].is_string(), "fingerprint");
  const std::string fp = j["fingerprint"];
  REQUIRE(fp.empty() || (fp.size() == 16 && IsLowerHex(fp)), "fingerprint format");
  REQUIRE(j["stacks"].is_array() && j["timeline"].is_array() && j["modules"].is_array(), "arrays");
  const json& stacks = j["stacks"];
  const int64_t dominant = j["dominant_stack"];
  REQUIRE(stacks.empty() ? dominant == -1 : dominant == 0, "dominant_stack");
  REQUIRE(stacks.empty() == fp.empty(), "fingerprint iff stacks");
  uint64_t counted = 0, prev = UINT64_MAX;
  std::set<std::string> frame_modules;
  for (size_t i = 0; i < stacks.size(); ++i) {
    const json& s = stacks[i];
    REQUIRE(s["id"] == static_cast<int64_t>(i), "stack id == index");
    for (const char* k : {"count", "first_seen_ms", "last_seen_ms", "cpu_ms"}) {
      REQUIRE(s[k].is_number_integer(), std::string("stack.") + k);
    }
    const uint64_t count = s["count"];
    REQUIRE(count >= 1 && count <= prev, "stacks sorted by count");
    prev = count;
    counted += count;
    REQUIRE(s["first_seen_ms"].get<uint64_t>() <= s["last_seen_ms"].get<uint64_t>(), "seen");
    REQUIRE(s["frames"].is_array() && !s["frames"].empty(), "stack.frames");
    for (const json& f : s["frames"]) {
      if (std::string e = ValidateFrame(f); !e.empty()) return e;
      if (!f["module"].get<std::string>().empty()) frame_modules.insert(f["module"]);
    }
  }
  REQUIRE(counted + j["dropped_stacks"].get<uint64_t>() == j["samples"].get<uint64_t>(),
          "stack counts + dropped == samples");
  uint64_t prev_t = 0;
  for (const json& t : j["timeline"]) {
    REQUIRE(t["t_ms"].is_number_integer() && t["cpu_us"].is_number_integer(), "timeline ints");
    REQUIRE(t["t_ms"].get<uint64_t>() >= prev_t, "timeline in time order");
    prev_t = t["t_ms"];
    const int64_t st = t["stack"];
    REQUIRE(st >= -1 && st < static_cast<int64_t>(stacks.size()), "timeline.stack");
    REQUIRE(t["state"].is_string() && t["state"].get<std::string>().size() == 1, "state");
    if (t.contains("method")) {
      const std::set<std::string> methods = {"signal", "proc", "mach"};
      REQUIRE(t["method"].is_string() && methods.count(t["method"].get<std::string>()) && st >= 0,
              "timeline.method (only for a sample with a stack)");
    }
  }
  std::set<std::string> module_paths;
  for (const json& m : j["modules"]) {
    REQUIRE(m["path"].is_string() && IsHex(m["base"]) && m["build_id"].is_string(), "module");
    module_paths.insert(m["path"]);
  }
  for (const auto& p : frame_modules) REQUIRE(module_paths.count(p), "frame module listed");
  return "";
}

TEST(JsonReportTest, EveryLineValidatesAgainstTheDocumentedSchema) {
  const std::string path = TempPath("schema");
  Config c = testing::TestConfig();
  c.json_path = path;
  testing::HangCollector collector;
  ASSERT_TRUE(Start(c).ok());
  {
    WorkScope pass;
    std::this_thread::sleep_for(150ms);
  }
  {
    WorkScope pass;
    const auto end = std::chrono::steady_clock::now() + 150ms;
    while (std::chrono::steady_clock::now() < end) {
    }
  }
  ASSERT_TRUE(collector.WaitFor(2));
  Stop();
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  size_t skipped = 0;
  const auto lines = ReadReport(path, &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(lines.size(), 2u);
  for (const json& j : lines) {
    EXPECT_EQ(ValidateHang(j), "") << j.dump();
    EXPECT_EQ(j["pid"], getpid());
    EXPECT_GT(j["samples"].get<int>(), 0);
    EXPECT_FALSE(j["fatal"].get<bool>());
  }
  // The line is the record: the callback saw the same hang.
  EXPECT_EQ(lines[0]["fingerprint"], collector.hangs()[0].fingerprint);
  EXPECT_EQ(lines[1]["duration_ms"], collector.hangs()[1].duration_ms);
  unlink(path.c_str());
}

HangRecord SyntheticRecord(int id) {
  HangRecord r;
  r.pid = 42;
  r.tid = 42;
  r.hang_id = static_cast<uint64_t>(id);
  r.duration_ms = 300;
  r.cpu_ms = 150;
  r.cpu_percent = 50;
  r.hang_class = HangClass::kMixed;
  r.samples = 2;
  r.fingerprint = "0123456789abcdef";
  r.dominant_stack = 0;
  Stack s;
  s.count = 2;
  s.frames.push_back(Frame{0x401000, "/bin/x", "abcd", 0x1000, "weird \"name\"\n\t\x01\\", "", 0,
                           FrameMethod::kPc});
  s.frames.push_back(Frame{0x402000, "", "", 0x402000, "", "a.cc", 7, FrameMethod::kCfi});
  s.frames.push_back(Frame{0x403000, "", "", 0x403000, "", "", 0});
  r.stacks.push_back(s);
  r.timeline.push_back(TimelineEntry{150, 0, 1000, 'R', SampleMethod::kSignal});
  r.timeline.push_back(TimelineEntry{160, 0, 1000, '\0'});
  r.modules.push_back(ModuleInfo{"/bin/x", 0x400000, "abcd"});
  return r;
}

TEST(JsonReportTest, EscapingRoundTripsAndStaysOnOneLine) {
  const HangRecord r = SyntheticRecord(1);
  const std::string line = ToJsonLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json j = json::parse(line);
  EXPECT_EQ(ValidateHang(j), "") << line;
  EXPECT_EQ(j["stacks"][0]["frames"][0]["symbol"], "weird \"name\"\n\t\x01\\");
  EXPECT_EQ(j["stacks"][0]["frames"][1]["line"], 7);
  EXPECT_EQ(j["timeline"][1]["state"], "?");
  EXPECT_EQ(j["stacks"][0]["frames"][0]["method"], "pc");
  EXPECT_EQ(j["stacks"][0]["frames"][1]["method"], "cfi");
  EXPECT_FALSE(j["stacks"][0]["frames"][2].contains("method")) << "unknown is left out";
  EXPECT_EQ(j["timeline"][0]["method"], "signal");
  EXPECT_FALSE(j["timeline"][1].contains("method"));
  EXPECT_EQ(j["stacks"][0]["frames"][0]["addr"], "0x401000");
}

TEST(JsonReportTest, FileCutMidLineLosesOnlyThatLine) {
  const std::string path = TempPath("cut");
  {
    agent::JsonlWriter w(path, 1 << 20);
    std::string error;
    ASSERT_TRUE(w.Open(&error)) << error;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(w.Append(ToJsonLine(SyntheticRecord(i)), &error));
  }
  const std::string full = ReadFile(path);
  const size_t third = full.find('\n', full.find('\n') + 1) + 1;
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(third + (full.size() - third) / 2)), 0);
  size_t skipped = 0;
  auto lines = ReadReport(path, &skipped);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(lines[1]["hang_id"], 1);
  // A new writer (the next run) does not glue its line to the torn one.
  {
    agent::JsonlWriter w(path, 1 << 20);
    std::string error;
    ASSERT_TRUE(w.Append(ToJsonLine(SyntheticRecord(3)), &error)) << error;
  }
  lines = ReadReport(path, &skipped);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(lines[2]["hang_id"], 3);
  unlink(path.c_str());
}

TEST(JsonReportTest, RotatesBeforeExceedingTheCapAndNeverSplitsALine) {
  const std::string path = TempPath("rotate");
  const std::string line = ToJsonLine(SyntheticRecord(0));
  agent::JsonlWriter w(path, 2 * line.size() + 10);  // room for two lines
  std::string error;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(w.Append(ToJsonLine(SyntheticRecord(i)), &error));
  size_t skipped = 0;
  const auto current = ReadReport(path, &skipped);
  EXPECT_EQ(skipped, 0u);
  const auto previous = ReadReport(path + ".1", &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(current.size(), 1u);
  ASSERT_EQ(previous.size(), 2u);
  EXPECT_EQ(previous[0]["hang_id"], 2);
  EXPECT_EQ(previous[1]["hang_id"], 3);
  EXPECT_EQ(current[0]["hang_id"], 4);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_LE(static_cast<size_t>(st.st_size), 2 * line.size() + 10);
  unlink(path.c_str());
  unlink((path + ".1").c_str());
}

TEST(JsonReportTest, ConcurrentWritersNeverInterleave) {
  const std::string path = TempPath("concurrent");
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      agent::JsonlWriter w(path, 1 << 30);
      std::string error;
      for (int i = 0; i < 200; ++i) w.Append(ToJsonLine(SyntheticRecord(t * 1000 + i)), &error);
    });
  }
  for (auto& th : writers) th.join();
  size_t skipped = 0;
  const auto lines = ReadReport(path, &skipped);
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(lines.size(), 800u);
  unlink(path.c_str());
}

}  // namespace
}  // namespace hangwatch
