// Every reader of the JSON Lines format over one corpus (tests/report/corpus/: real records,
// and lines by hand for each class) and the lines made here by mutating the real ones: the
// report decoder (report/report_decode.h), the report reader that `report`, `run` and `export`
// read through (tools/reader/report_reader.h), the gate's reader (tools/gate/gate_reader.h:
// report/record_scan.h's scanner, then the decoder for some lines; both paths exercised) and
// top's (tools/top/top_scan.h: the same scanner, through the line parser the Prometheus
// exporter also classifies its lines with) must put each line in the class
// docs/report-format.md's reading rules give it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "report/record_types.h"
#include "report/report_decode.h"
#include "tools/gate/gate_reader.h"
#include "tools/reader/report_reader.h"
#include "tools/top/top_scan.h"

namespace hangwatch::tools {
namespace {

using ojson = nlohmann::ordered_json;
using testing::TempDir;
using testing::WriteFile;

// What a line is, by the reading rules.
// kLost: a line no counter took: a reader that drops a line without saying so.
enum class Class { kHang, kLag, kStall, kUnknown, kOtherVersion, kBad, kLost };

const char* Name(Class c) {
  switch (c) {
    case Class::kHang:
      return "hang";
    case Class::kLag:
      return "lag";
    case Class::kStall:
      return "startup_stall";
    case Class::kUnknown:
      return "unknown";
    case Class::kOtherVersion:
      return "other_version";
    case Class::kBad:
      return "bad";
    case Class::kLost:
      return "lost";
  }
  return "?";
}

struct Case {
  std::string line;
  Class expected;
  std::string why;  // the corpus file or the mutation
};

Class ByDecoder(const std::string& line) {
  report::Record record;
  std::string error;
  if (!report::Decode(line, &record, &error)) return Class::kBad;
  if (std::holds_alternative<HangRecord>(record)) return Class::kHang;
  if (std::holds_alternative<report::Lag>(record)) return Class::kLag;
  if (std::holds_alternative<report::StartupStall>(record)) return Class::kStall;
  return std::get<report::UnknownRecord>(record).other_version ? Class::kOtherVersion
                                                               : Class::kUnknown;
}

// The report reader counts other versions with unknown types (neither is shown).
Class ByReportReader(const std::string& line) {
  Report r;
  std::string error;
  ParseJsonLines(line, &r, &error);
  if (r.hangs.size() == 1) return Class::kHang;
  if (r.lags.size() == 1) return Class::kLag;
  if (r.startup_stalls.size() == 1) return Class::kStall;
  if (r.unknown_records == 1) return Class::kUnknown;
  return r.skipped_lines == 1 ? Class::kBad : Class::kLost;
}

struct CountingSink : TopSink {
  void Add(const TopHang&) override {}
};

// Top does not tell lag from start-up stall records (it counts neither): both are kLag here.
Class ByTop(const std::string& line, bool want_labels) {
  TopLineParser parser(want_labels);
  CountingSink sink;
  ScanStats stats;
  ScanTopText(line, 0, 0, &parser, &sink, &stats);
  if (stats.hangs == 1) return Class::kHang;
  if (stats.other_records == 1) return Class::kLag;
  if (stats.unknown_types == 1) return Class::kUnknown;
  if (stats.other_versions == 1) return Class::kOtherVersion;
  return stats.bad_lines == 1 ? Class::kBad : Class::kLost;
}

// The gate reads whole files: the line goes into one with a valid start-up stall (so that the
// file always has a valid record) and, for a line with a signature, a longer hang of the same
// signature, so that the line is not the longest of its group and is judged by the scanner's
// fast path alone (the longest is decoded in full). The gate counts unknown types and other
// versions together.
Class ByGate(const std::string& line, const std::string& stall, const std::string& longer,
             const TempDir& dir) {
  const std::string path = dir / "gate.jsonl";
  WriteFile(path, stall + "\n" + longer + (longer.empty() ? "" : "\n") + line + "\n");
  Report r;
  std::vector<HangTally> tallies;
  size_t lag_records = 0;
  std::string error;
  if (!ReadReportsForGate({path}, &r, &tallies, &lag_records, &error)) return Class::kBad;
  uint64_t hangs = 0;
  for (const HangTally& t : tallies) hangs += t.count;
  if (hangs == (longer.empty() ? 1u : 2u)) return Class::kHang;
  if (lag_records == 1) return Class::kLag;
  if (r.startup_stalls.size() == 2) return Class::kStall;
  if (r.unknown_records == 1) return Class::kUnknown;
  return r.skipped_lines == 1 ? Class::kBad : Class::kLost;
}

std::vector<std::string> Lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

const std::filesystem::path kCorpus = CORPUS_DIR;

Class ClassOfReal(const ojson& j) {
  const std::string type = j.value("type", "hang");
  return type == "lag" ? Class::kLag : type == "startup_stall" ? Class::kStall : Class::kHang;
}

// The top-level fields of each record type (report/record_types.h).
std::vector<report::TopLevelField> Fields(Class c) {
  if (c == Class::kLag) return {std::begin(report::kLagFields), std::end(report::kLagFields)};
  if (c == Class::kStall) {
    return {std::begin(report::kStartupStallFields), std::end(report::kStartupStallFields)};
  }
  return {std::begin(report::kHangFields), std::end(report::kHangFields)};
}

// A value of another JSON type than `v`.
ojson Mistyped(const ojson& v) { return v.is_string() ? ojson(17) : ojson("x"); }

std::vector<Case> Mutations(const std::string& line) {
  const ojson real = ojson::parse(line);
  const Class c = ClassOfReal(real);
  std::vector<Case> out;
  auto add = [&](const ojson& j, Class expected, const std::string& why) {
    out.push_back({j.dump(), expected, why});
  };
  for (size_t cut : {line.size() / 3, line.size() / 2, line.size() - 1}) {
    out.push_back({line.substr(0, cut), Class::kBad, "torn at " + std::to_string(cut)});
  }
  out.push_back({line + " {}", Class::kBad, "a second value"});
  out.push_back({line + " \t\r", c, "trailing white space"});
  out.push_back({"  " + line, c, "leading white space"});
  ojson j = real;
  j.erase("type");
  add(j, c == Class::kHang ? Class::kHang : Class::kBad, "without type");
  j = real;
  j.erase("format_version");
  add(j, c, "without format_version");
  j = real;
  j["format_version"] = 3;
  add(j, Class::kOtherVersion, "format_version 3");
  j = real;
  j["format_version"] = 2;  // the version of a thread other than main: read as version 1
  add(j, c, "format_version 2");
  j = real;
  j["format_version"] = "1";
  add(j, Class::kBad, "format_version a string");
  j = real;
  j.erase("format_version");
  j["format_version"] = 3;
  add(j, Class::kOtherVersion, "format_version 3, last");
  j = real;
  j.erase("type");
  j["type"] = real["type"];
  add(j, c, "type last");
  j = real;
  j["type"] = "frame_rate";
  add(j, Class::kUnknown, "an unknown type");
  j = real;
  j["type"] = 3;
  add(j, Class::kUnknown, "type not a string");
  j = real;
  j["future_field"] = ojson::array({1, "two", ojson::object()});
  add(j, c, "an unknown field");
  // An unknown field whose value is not JSON: the line is not one JSON object.
  out.push_back({line.substr(0, line.size() - 1) + R"(,"future_field":tru})", Class::kBad,
                 "an unknown field that is not JSON"});
  out.push_back({line.substr(0, line.size() - 1) + R"(,"future_field":"\q"})", Class::kBad,
                 "an escape JSON does not have"});
  // Ranges of the top-level integers (the decoder's: the C++ type of each field).
  for (const report::TopLevelField& f : Fields(c)) {
    if (f.kind == report::ValueKind::kUint32 || f.kind == report::ValueKind::kUint64) {
      j = real;
      j[std::string(f.name)] = -1;
      add(j, Class::kBad, std::string(f.name) + " negative");
    }
    if (f.kind == report::ValueKind::kUint32 || f.kind == report::ValueKind::kInt32) {
      j = real;
      j[std::string(f.name)] = uint64_t{1} << 32;
      add(j, Class::kBad, std::string(f.name) + " past 32 bits");
    }
  }
  if (real.contains("labels")) {
    j = real;
    j["labels"]["a_number"] = 3;
    add(j, Class::kBad, "a label that is not a string");
  }
  if (real.contains("culprit") && real["culprit"].is_object()) {
    j = real;
    j["culprit"]["kind"] = "cobol";
    add(j, Class::kBad, "a culprit of an unknown kind");
    j = real;
    j["culprit"]["line"] = -2;
    add(j, Class::kBad, "a culprit line out of range");
    j = real;
    j["culprit"]["symbol"] = 5;
    add(j, Class::kBad, "a culprit symbol not a string");
  }
  if (real.contains("thread")) {
    j = real;
    j["thread"]["tid"] = "9";
    add(j, Class::kBad, "a thread tid that is not an integer");
    j = real;
    j["thread"].erase("tid");
    add(j, Class::kBad, "a thread without tid");
    j = real;
    j["thread"]["role"] = 4;
    add(j, Class::kBad, "a thread role that is not a string");
    j = real;
    j["thread"]["name"] = ojson::array();
    add(j, Class::kBad, "a thread name that is not a string");
    j = real;
    j["thread"].erase("role");
    j["thread"].erase("name");
    add(j, c, "a thread with its tid only");
  }
  if (real.contains("context")) {
    j = real;
    j["context"]["label_path"] = ojson::array({"a", 2});
    add(j, Class::kBad, "a label path holding a number");
    j = real;
    j["context"]["trigger"] = ojson::object({{"fd", uint64_t{1} << 32}});
    add(j, Class::kBad, "a trigger fd past 32 bits");
    j = real;
    j["context"]["future"] = ojson::array();
    add(j, c, "an unknown member of context");
  }
  if (real.contains("input")) {
    j = real;
    j["input"]["events"] = -1;
    add(j, Class::kBad, "input events negative");
    j = real;
    j["input"]["kinds"] = "key";
    add(j, Class::kBad, "input kinds not an array");
  }
  for (const report::TopLevelField& f : Fields(c)) {
    if (!f.required) continue;
    j = real;
    j.erase(std::string(f.name));
    add(j, Class::kBad, "without " + std::string(f.name));
  }
  for (const auto& [name, value] : real.items()) {
    bool known = false;  // fields a record type does not read (a lag's figures) are ignored
    for (const report::TopLevelField& f : Fields(c)) known |= f.name == name;
    if (!known || (name == "culprit" && value.is_null())) continue;
    j = real;
    j[name] = Mistyped(value);
    add(j, Class::kBad, name + " mistyped");
    j = real;
    j.erase(name);
    j[name] = value;  // the same field last: the order of fields does not matter
    add(j, c, name + " moved to the end");
  }
  return out;
}

TEST(ReaderConformanceTest, EveryReaderClassifiesEveryLineByTheRules) {
  TempDir dir;
  std::vector<Case> cases;
  std::vector<std::string> real = Lines(kCorpus / "real.jsonl");
  ASSERT_GE(real.size(), 3u);
  // Records of watched threads: version 2 for a role other than main (docs/report-format.md).
  for (std::string& l : Lines(kCorpus / "threads.jsonl")) real.push_back(std::move(l));
  // Hangs with what their pass served and whether input waited (docs/report-format.md).
  for (std::string& l : Lines(kCorpus / "context.jsonl")) real.push_back(std::move(l));
  std::string stall;
  for (const std::string& l : real) {
    const Class c = ClassOfReal(ojson::parse(l));
    if (c == Class::kStall) stall = l;
    cases.push_back({l, c, "real.jsonl"});
    for (Case& m : Mutations(l)) cases.push_back(std::move(m));
  }
  ASSERT_FALSE(stall.empty());
  const std::pair<const char*, Class> files[] = {{"hang_first_agents.jsonl", Class::kHang},
                                                 {"unknown.jsonl", Class::kUnknown},
                                                 {"other_version.jsonl", Class::kOtherVersion},
                                                 {"bad.jsonl", Class::kBad}};
  for (const auto& [file, c] : files) {
    for (const std::string& l : Lines(kCorpus / file)) cases.push_back({l, c, file});
  }
  size_t checked = 0;
  for (const Case& k : cases) {
    // A longer hang of the line's signature, when it has one (see ByGate).
    std::string longer;
    if (const ojson j = ojson::parse(k.line, nullptr, false);
        j.is_object() && j.contains("signature") && j["signature"].is_string() &&
        !j["signature"].get<std::string>().empty()) {
      for (const std::string& r : real) {
        ojson h = ojson::parse(r);
        if (ClassOfReal(h) != Class::kHang) continue;
        h["signature"] = j["signature"];
        h["duration_ms"] = uint64_t{1} << 40;
        longer = h.dump();
        break;
      }
    }
    const Class top_expected = k.expected == Class::kStall ? Class::kLag : k.expected;
    const Class gate_expected = k.expected == Class::kOtherVersion ? Class::kUnknown : k.expected;
    const std::string what = k.why + ": " + k.line.substr(0, 160);
    EXPECT_STREQ(Name(ByDecoder(k.line)), Name(k.expected)) << "decoder, " << what;
    EXPECT_STREQ(Name(ByReportReader(k.line)), Name(gate_expected)) << "report reader, " << what;
    // With --label top reads the labels whole; without, only their type.
    EXPECT_STREQ(Name(ByTop(k.line, true)), Name(top_expected)) << "top --label, " << what;
    EXPECT_STREQ(Name(ByTop(k.line, false)), Name(top_expected)) << "top, " << what;
    EXPECT_STREQ(Name(ByGate(k.line, stall, longer, dir)), Name(gate_expected)) << "gate, " << what;
    ++checked;
  }
  EXPECT_GT(checked, 200u);
}

}  // namespace
}  // namespace hangwatch::tools
