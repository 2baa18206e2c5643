// `hangwatch export` against a loopback OTLP/HTTP receiver (otlp_receiver.js) that decodes every
// request with the official OTLP schema (@opentelemetry/otlp-transformer's generated code):
// records and attributes, both encodings, batching, retries on 503 / 429 (timed by the
// receiver's clock), an unreachable endpoint, resuming with --state, headers, bad usage. Then the
// pieces alone: Retry-After parsing, the UTF-8 guard, the state's identity checks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "python_hang.h"
#include "report/report_record.h"
#include "tests/sanitizer_allocator.h"
#include "tools/export/otlp_encode.h"
#include "tools/export/otlp_sender.h"
#include "tools/export/otlp_state.h"

namespace hangwatch::testing {
namespace {

using nlohmann::json;

const std::string kCli = HANGWATCH_CLI;

// The npm directory with @opentelemetry/otlp-transformer: $HANGWATCH_NPM_DIR, else the one the
// build was configured with; installed there (npm registry) when it is missing.
std::string NpmDir() {
  const char* env = std::getenv("HANGWATCH_NPM_DIR");
  return env != nullptr && *env ? env : HANGWATCH_NPM_DIR;
}

std::string SchemaFile() {
  return NpmDir() + "/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js";
}

// The receiver: node otlp_receiver.js, its standard input held open by us (it exits when we close
// it), its port read from the line it prints once listening.
class Receiver {
 public:
  explicit Receiver(const std::string& log, std::vector<std::string> script = {}) : log_(log) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      std::vector<std::string> args = {"node", OTLP_RECEIVER_JS, NpmDir() + "/node_modules", log};
      args.insert(args.end(), script.begin(), script.end());
      std::vector<char*> a;
      for (auto& s : args) a.push_back(s.data());
      a.push_back(nullptr);
      execvp("node", a.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    std::string line;
    char c;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    if (line.rfind("listening ", 0) == 0) port_ = std::stoi(line.substr(10));
  }
  ~Receiver() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0) {
      int status;
      waitpid(pid_, &status, 0);
    }
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The requests received so far, one JSON object each (see otlp_receiver.js).
  std::vector<json> Requests() const {
    std::vector<json> out;
    std::string text = ReadFile(log_);
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
      out.push_back(json::parse(text.substr(start, nl - start)));
    }
    return out;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int stdin_ = -1;
  int port_ = 0;
};

// The attributes of an OTLP object as key -> value string ("42" for intValue 42).
std::map<std::string, std::string> Attributes(const json& owner) {
  std::map<std::string, std::string> out;
  for (const json& kv : owner.value("attributes", json::array())) {
    const json& v = kv["value"];
    out[kv["key"]] = v.contains("stringValue") ? v["stringValue"].get<std::string>()
                                               : v["intValue"].get<std::string>();
  }
  return out;
}

// Every log record of the accepted requests, with its resource's attributes.
struct Received {
  std::map<std::string, std::string> resource, attributes;
  json record;
};
std::vector<Received> Records(const std::vector<json>& requests) {
  std::vector<Received> out;
  for (const json& r : requests) {
    if (r["status"] != 200) continue;
    for (const json& rl : r["request"]["resourceLogs"]) {
      for (const json& sl : rl["scopeLogs"]) {
        EXPECT_EQ(sl["scope"]["name"], "hangwatch");
        for (const json& lr : sl["logRecords"]) {
          out.push_back({Attributes(rl["resource"]), Attributes(lr), lr});
        }
      }
    }
  }
  return out;
}

HangRecord Synthetic(int i) {
  HangRecord h;
  h.pid = 1000 + i % 3;
  h.tid = h.pid;
  h.process = "/srv/app/bin/app";
  h.process_name = "app";
  h.host = "web-" + std::to_string(i % 2);
  h.labels = {{"version", "1.2." + std::to_string(i % 2)}, {"region", "eu"}};
  h.hang_id = static_cast<uint64_t>(i);
  h.start_unix_ms = 1763700000000 + i;
  h.duration_ms = 300 + static_cast<uint64_t>(i);
  h.cpu_ms = 200;
  h.cpu_percent = 66;
  h.hang_class = HangClass::kMixed;
  h.samples = 12;
  h.fingerprint = "00000000000000" + std::string(i % 2 ? "aa" : "bb");
  h.signature = "1111111111111111";
  h.culprit.symbol = "Load(int)";
  h.culprit.module = "/srv/app/bin/app";
  h.culprit.offset = 0x1234;
  h.culprit.file = "/src/app/load.cc";
  h.culprit.line = 42;
  h.culprit.frame = 0;
  Stack s;
  s.count = 12;
  Frame f;
  f.addr = 0x5000;
  f.module = "/srv/app/bin/app";
  f.offset = 0x1234;
  f.symbol = "Load(int)";
  s.frames.push_back(f);
  h.stacks.push_back(s);
  h.dominant_stack = 0;
  h.modules.push_back({"/srv/app/bin/app", 0x4000, ""});
  return h;
}

std::string Lines(int from, int to) {
  std::string text;
  for (int i = from; i < to; ++i) text += report::Encode(Synthetic(i)) + "\n";
  return text;
}

class ExportCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    struct stat st;
    if (stat(SchemaFile().c_str(), &st) != 0) {
      // Test set-up on a fresh machine: the pinned package from the npm registry.
      const auto r =
          RunCommand({"/bin/sh", "-c",
                      "mkdir -p \"$0\" && npm install --prefix \"$0\" --no-audit "
                      "--no-fund --loglevel=error @opentelemetry/otlp-transformer@0.52.1",
                      NpmDir()});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    dir_ = new TempDir;
    stall_report_ = *dir_ / "stall.jsonl";
    const auto r = RunCommand({STALL_PROGRAM, "--agent", stall_report_, "0", "400"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override { ASSERT_EQ(stat(SchemaFile().c_str(), &st_), 0) << SchemaFile(); }

  CommandResult Export(std::vector<std::string> args) {
    args.insert(args.begin(), {kCli, "export"});
    return RunCommand(args, {"HANGWATCH_CACHE_DIR=" + tmp_ / "cache"});
  }

  static TempDir* dir_;
  static std::string stall_report_;
  TempDir tmp_;
  struct stat st_;
};
TempDir* ExportCommand::dir_ = nullptr;
std::string ExportCommand::stall_report_;

TEST_F(ExportCommand, RecordsAndAttributesArriveDecodedByTheOfficialSchema) {
  HangRecord fatal = Synthetic(7);
  fatal.fatal = true;
  fatal.hang_class = HangClass::kBusy;
  fatal.culprit = Culprit();
  fatal.stacks.clear();
  fatal.dominant_stack = -1;
  const std::string report = tmp_ / "two.jsonl";
  WriteFile(report, ReadFile(stall_report_) + report::Encode(fatal) + "\n");
  for (const char* protocol : {"http/json", "http/protobuf"}) {
    SCOPED_TRACE(protocol);
    TempDir logs;
    Receiver rx(logs / "log");
    ASSERT_GT(rx.port(), 0);
    const auto r = Export({"--otlp", rx.url(), "--protocol", protocol, report});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto requests = rx.Requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0]["path"], "/v1/logs");
    EXPECT_FALSE(requests[0].contains("error")) << requests[0]["error"];
    EXPECT_EQ(requests[0]["content_type"],
              std::string(protocol) == "http/json" ? "application/json" : "application/x-protobuf");
    const auto records = Records(requests);
    ASSERT_EQ(records.size(), 2u);

    // The hang of stall_program, symbolized offline before sending.
    const Received& stall = records[0];
    EXPECT_EQ(stall.resource.at("service.name"), "stall_program");
    EXPECT_EQ(stall.resource.count("process.pid"), 1u);
    EXPECT_EQ(stall.record["severityNumber"], 13);
    EXPECT_EQ(stall.record["severityText"], "WARN");
    EXPECT_EQ(stall.attributes.at("hang.culprit.function"), "StallTheMainThread");
    EXPECT_NE(stall.attributes.at("hang.culprit.file").find("stall_program.cc"), std::string::npos);
    EXPECT_GT(std::stoi(stall.attributes.at("hang.culprit.line")), 0);
    const std::string body = stall.record["body"]["stringValue"];
    EXPECT_NE(body.find("StallTheMainThread at stall_program.cc:"), std::string::npos) << body;
    EXPECT_EQ(body.find('\n'), std::string::npos);

    // The synthetic fatal hang: every field where the contract puts it.
    const Received& f = records[1];
    EXPECT_EQ(f.resource, (std::map<std::string, std::string>{{"service.name", "app"},
                                                              {"host.name", "web-1"},
                                                              {"process.pid", "1001"},
                                                              {"version", "1.2.1"},
                                                              {"region", "eu"}}));
    EXPECT_EQ(f.attributes,
              (std::map<std::string, std::string>{{"hang.duration_ms", "307"},
                                                  {"hang.cpu_ms", "200"},
                                                  {"hang.class", "busy"},
                                                  {"hang.signature", "1111111111111111"},
                                                  {"hang.fingerprint", "00000000000000aa"},
                                                  {"hang.samples", "12"},
                                                  {"thread.id", "1001"},
                                                  {"hang.thread.role", "main"}}));
    EXPECT_EQ(f.record["severityNumber"], 21);
    EXPECT_EQ(f.record["severityText"], "FATAL");
    EXPECT_EQ(f.record["timeUnixNano"], "1763700000007000000");
    EXPECT_GT(std::stoull(f.record["observedTimeUnixNano"].get<std::string>()),
              1763700000007000000ull);
    EXPECT_EQ(f.record["body"]["stringValue"],
              "app: main thread hung until the process died, 307 ms (busy, 66% CPU)");
  }
}

TEST_F(ExportCommand, MoreThan512HangsGoInSeveralRequests) {
  const std::string report = tmp_ / "many.jsonl";
  WriteFile(report, Lines(0, 1100));
  Receiver rx(tmp_ / "log");
  const auto r = Export({"--otlp", rx.url(), "--no-symbolize", report});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "hangwatch export: 1100 hang(s) sent in 3 request(s) to " + rx.url() + "/v1/logs\n");
  const auto requests = rx.Requests();
  ASSERT_EQ(requests.size(), 3u);
  std::vector<size_t> sizes;
  for (const json& q : requests) sizes.push_back(Records(std::vector<json>{q}).size());
  EXPECT_EQ(sizes, (std::vector<size_t>{512, 512, 76}));
  // Each hang once, grouped by resource (3 pids x 2 hosts here).
  std::map<std::string, int> seen;
  for (const Received& x : Records(requests)) ++seen[x.record["timeUnixNano"].get<std::string>()];
  EXPECT_EQ(seen.size(), 1100u);
  EXPECT_LE(requests[0]["request"]["resourceLogs"].size(), 6u);
}

TEST_F(ExportCommand, RetriesA503AfterItsRetryAfterThenSucceeds) {
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 3));
  Receiver rx(tmp_ / "log", {"503:1"});
  const auto r = Export({"--otlp", rx.url(), "--no-symbolize", "--backoff-ms", "10", report});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("HTTP 503, retrying in 1000 ms"), std::string::npos) << r.err;
  const auto q = rx.Requests();
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0]["status"], 503);
  EXPECT_EQ(q[1]["status"], 200);
  // Retry-After: 1 (not the 10 ms backoff), by the receiver's clock.
  EXPECT_GE(q[1]["t_ms"].get<double>() - q[0]["t_ms"].get<double>(), 1000.0);
  EXPECT_EQ(Records(q).size(), 3u);
}

TEST_F(ExportCommand, Retries429WithExponentialBackoff) {
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 2));
  Receiver rx(tmp_ / "log", {"429", "429", "429"});
  const auto r = Export({"--otlp", rx.url(), "--no-symbolize", "--backoff-ms", "150", report});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto q = rx.Requests();
  ASSERT_EQ(q.size(), 4u);
  // Waits of 150, 300 and 600 ms between the attempts.
  const double waits[] = {150, 300, 600};
  for (size_t i = 1; i < q.size(); ++i) {
    EXPECT_GE(q[i]["t_ms"].get<double>() - q[i - 1]["t_ms"].get<double>(), waits[i - 1]) << i;
  }
  EXPECT_EQ(Records(q).size(), 2u);
}

TEST_F(ExportCommand, GivesUpAfterTheRetriesAndOnAnError) {
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 2));
  {
    Receiver rx(tmp_ / "log503", {"503", "503", "503", "503"});
    const auto r = Export(
        {"--otlp", rx.url(), "--no-symbolize", "--backoff-ms", "1", "--retries", "2", report});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(rx.Requests().size(), 3u);
    EXPECT_NE(r.err.find("HTTP 503: {\"message\":\"scripted 503\"} (after 3 attempts)"),
              std::string::npos)
        << r.err;
  }
  {
    Receiver rx(tmp_ / "log400", {"400"});
    const auto r = Export({"--otlp", rx.url(), "--no-symbolize", report});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(rx.Requests().size(), 1u);  // not retried
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  }
  {
    // A Retry-After longer than the longest wait: no waiting an hour in a cron job.
    Receiver rx(tmp_ / "log-long", {"503:3600"});
    const auto r = Export({"--otlp", rx.url(), "--no-symbolize", report});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(rx.Requests().size(), 1u);
    EXPECT_NE(r.err.find("Retry-After 3600"), std::string::npos) << r.err;
  }
}

TEST_F(ExportCommand, UnreachableEndpointIsOneLineAndExitOne) {
  // A bound socket that does not listen: connections to its port are refused.
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  const std::string report = tmp_ / "r.jsonl", state = tmp_ / "state";
  WriteFile(report, Lines(0, 2));
  const auto r = Export({"--otlp", url, "--no-symbolize", "--state", state, report});
  close(s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("hangwatch export: cannot deliver to " + url + "/v1/logs: ", 0), 0u)
      << r.err;
  EXPECT_EQ(r.out, "");
  // Nothing was delivered, so nothing is remembered as sent.
  EXPECT_EQ(ReadFile(state).find("\"offset\": 1"), std::string::npos);
}

TEST_F(ExportCommand, StateResumesWithoutResending) {
  const std::string report = tmp_ / "hangs.jsonl", state = tmp_ / "state.json";
  WriteFile(report, Lines(0, 5) + report::Encode(report::StartupStall{1, "/bin/a", 1, 2, 3}) +
                        "\n{\"type\":\"hang\",\"torn");
  Receiver rx(tmp_ / "log");
  auto run = [&](std::vector<std::string> files) {
    std::vector<std::string> args = {"--otlp", rx.url(), "--no-symbolize", "--state", state};
    args.insert(args.end(), files.begin(), files.end());
    const auto r = Export(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  auto sent = [&] {
    std::vector<std::string> ids;
    for (const Received& x : Records(rx.Requests())) {
      ids.push_back(x.record["timeUnixNano"].get<std::string>().substr(10, 3));
    }
    std::sort(ids.begin(), ids.end());  // records come grouped by resource
    return ids;
  };
  const auto first = run({report});
  EXPECT_NE(first.err.find("skipped 0 line(s) that do not decode (torn writes, another format "
                           "version) and 1 record(s) of other types"),
            std::string::npos)
      << first.err;
  EXPECT_EQ(sent(), (std::vector<std::string>{"000", "001", "002", "003", "004"}));
  run({report});  // nothing new: no request at all
  EXPECT_EQ(rx.Requests().size(), 1u);
  // The torn line is completed and more hangs are appended: only they are sent.
  {
    std::FILE* f = std::fopen(report.c_str(), "a");
    std::fputs("\n", f);
    std::fputs(Lines(5, 7).c_str(), f);
    std::fclose(f);
  }
  const auto third = run({report});
  EXPECT_NE(third.err.find("skipped 1 line(s)"), std::string::npos) << third.err;
  EXPECT_EQ(sent(), (std::vector<std::string>{"000", "001", "002", "003", "004", "005", "006"}));
  // Rotation: the file becomes hangs.jsonl.1 and a new hangs.jsonl starts. The old one keeps its
  // place under its new name; the new one is sent from its start.
  ASSERT_EQ(rename(report.c_str(), (report + ".1").c_str()), 0);
  WriteFile(report, Lines(7, 8));
  run({report, report + ".1"});
  EXPECT_EQ(sent(),
            (std::vector<std::string>{"000", "001", "002", "003", "004", "005", "006", "007"}));
  // A file truncated below its offset starts over.
  WriteFile(report, Lines(8, 9));
  run({report});
  EXPECT_EQ(sent().back(), "008");
  EXPECT_EQ(sent().size(), 9u);
}

// A report whose name and line hold bytes that are not UTF-8 (a line as agents before the
// format's UTF-8 rule wrote it): the hang is sent, the state saved (the name kept exactly) and
// the next run sends nothing again.
TEST_F(ExportCommand, NamesAndLinesThatAreNotUtf8AreSentAndTheStateKept) {
  const std::string report = tmp_ / "hangs\xff.jsonl", state = tmp_ / "state.json";
  std::string line = Lines(0, 1);
  line.replace(line.find("\"app\""), 5, "\"app\xfe\"");
  WriteFile(report, line);
  Receiver rx(tmp_ / "log");
  const std::vector<std::string> args = {"--otlp",  rx.url(), "--no-symbolize",
                                         "--state", state,    report};
  const auto first = Export(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto got = Records(rx.Requests());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].resource.at("service.name"), "app\xef\xbf\xbd");
  EXPECT_TRUE(json::parse(ReadFile(state), nullptr, false).is_object()) << ReadFile(state);
  const auto second = Export(args);
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(rx.Requests().size(), 1u);  // nothing sent twice
}

TEST_F(ExportCommand, StateOfSeveralFilesSurvivesABatchSentMidway) {
  // A batch sent while the first file is read records every file's place: the second file's
  // must be the one it had reached, not 0.
  const std::string a = tmp_ / "a.jsonl", b = tmp_ / "b.jsonl", state = tmp_ / "state.json";
  WriteFile(a, Lines(0, 600));
  WriteFile(b, Lines(600, 602));
  Receiver rx(tmp_ / "log");
  const std::vector<std::string> args = {"--otlp", rx.url(), "--no-symbolize", "--state", state,
                                         a,        b};
  ASSERT_EQ(Export(args).exit_code, 0);
  ASSERT_EQ(rx.Requests().size(), 2u);
  EXPECT_EQ(Records(rx.Requests()).size(), 602u);
  {
    std::FILE* f = std::fopen(a.c_str(), "a");
    std::fputs(Lines(602, 1202).c_str(), f);
    std::fclose(f);
  }
  const auto r = Export(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto q = rx.Requests();
  ASSERT_EQ(q.size(), 4u);
  const auto second = Records(std::vector<json>(q.begin() + 2, q.end()));
  EXPECT_EQ(second.size(), 600u);  // a's new hangs only: none of b's again
  for (const Received& x : second) {
    const std::string t = x.record["timeUnixNano"];
    EXPECT_GE(std::stoll(t.substr(0, 13)) - 1763700000000, 602) << t;  // hang index
  }
  ASSERT_EQ(Export(args).exit_code, 0);
  EXPECT_EQ(rx.Requests().size(), 4u);
}

TEST_F(ExportCommand, TwoRunsWithOneStateFileDoNotOverlap) {
  const std::string report = tmp_ / "r.jsonl", state = tmp_ / "state.json";
  WriteFile(report, Lines(0, 2));
  Receiver rx(tmp_ / "log");
  // Another run holds the lock.
  const int lock = open((state + ".lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_EQ(flock(lock, LOCK_EX), 0);
  const std::vector<std::string> args = {"--otlp",  rx.url(), "--no-symbolize",
                                         "--state", state,    report};
  const auto blocked = Export(args);
  EXPECT_EQ(blocked.exit_code, 1);
  EXPECT_NE(blocked.err.find("another export is running"), std::string::npos) << blocked.err;
  EXPECT_EQ(rx.Requests().size(), 0u);
  close(lock);
  EXPECT_EQ(Export(args).exit_code, 0);
  EXPECT_EQ(Records(rx.Requests()).size(), 2u);
}

TEST_F(ExportCommand, HeadersArriveWithEveryRequest) {
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 3));
  Receiver rx(tmp_ / "log");
  const auto r =
      Export({"--otlp", rx.url() + "/", "--no-symbolize", "--batch-size", "2", "--header",
              "Authorization=Bearer s3cret", "--header", "X-Scope-OrgID: tenant-1", report});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto q = rx.Requests();
  ASSERT_EQ(q.size(), 2u);
  for (const json& x : q) {
    EXPECT_EQ(x["path"], "/v1/logs");
    EXPECT_EQ(x["headers"]["authorization"], "Bearer s3cret");
    EXPECT_EQ(x["headers"]["x-scope-orgid"], "tenant-1");
  }
}

TEST_F(ExportCommand, BadUsageIsExitTwoAndSendsNothing) {
  Receiver rx(tmp_ / "log");
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 1));
  const std::vector<std::vector<std::string>> bad = {
      {report},
      {"--otlp", rx.url()},
      {"--otlp", rx.url(), "--protocol", "grpc", report},
      {"--otlp", "ftp://x", report},
      {"--otlp", rx.url(), "--batch-size", "513", report},
      {"--otlp", rx.url(), "--header", "novalue", report},
      {"--otlp", rx.url(), report, tmp_ / "missing.jsonl"},
  };
  for (const auto& args : bad) {
    const auto r = Export(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  }
  EXPECT_EQ(rx.Requests().size(), 0u);
  const auto help = Export({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--state FILE"), std::string::npos);
}

TEST_F(ExportCommand, CredentialsInTheUrlAndHeaderValuesAreNeverPrinted) {
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 2));
  {
    // An endpoint that refuses: the error names it, without its password.
    Receiver rx(tmp_ / "log400", {"400"});
    const std::string url = "http://robot:s3cret@127.0.0.1:" + std::to_string(rx.port());
    const auto r = Export({"--otlp", url, "--no-symbolize", report});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    ASSERT_EQ(rx.Requests().size(), 1u);
    EXPECT_FALSE(Has(r.err, "s3cret")) << r.err;
    EXPECT_TRUE(Has(r.err, "cannot deliver to http://***@127.0.0.1:")) << r.err;
    // The credentials were used all the same.
    EXPECT_EQ(rx.Requests()[0]["headers"]["authorization"], "Basic cm9ib3Q6czNjcmV0");
  }
  {
    // Delivered: the success line names the endpoint too.
    Receiver rx(tmp_ / "log200");
    const std::string url = "http://robot:s3cret@127.0.0.1:" + std::to_string(rx.port());
    const auto r = Export({"--otlp", url, "--no-symbolize", report});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(Has(r.out + r.err, "s3cret")) << r.out << r.err;
  }
  // Bad usage that echoes the URL or the header.
  const std::vector<std::vector<std::string>> bad = {
      {"--otlp", "ftp://robot:s3cret@host/", report},
      {"--otlp", "http://127.0.0.1:1", "--header", "Bearer s3cret", report},
      {"--otlp", "http://127.0.0.1:1", "--header", "Authorization=Bearer s3cret\r\nX-A: b", report},
  };
  for (const auto& args : bad) {
    const auto r = Export(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_FALSE(Has(r.err, "s3cret")) << r.err;
  }
}

TEST_F(ExportCommand, OtelHeadersAreTrimmedAndPercentDecoded) {
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 1));
  Receiver rx(tmp_ / "log");
  const auto r = RunCommand(
      {kCli, "export", "--otlp", rx.url(), "--no-symbolize", report},
      {"HANGWATCH_CACHE_DIR=" + tmp_ / "cache",
       "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic%20YWxhZGRpbjpvcGVuc2VzYW1l, X-Tenant = "
       "a%2Cb%3Dc ,X-Smuggled=x%0D%0AX-Evil: 1,X-Plain=100%"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto q = rx.Requests();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0]["headers"]["authorization"], "Basic YWxhZGRpbjpvcGVuc2VzYW1l");
  EXPECT_EQ(q[0]["headers"]["x-tenant"], "a,b=c");
  EXPECT_EQ(q[0]["headers"]["x-plain"], "100%");  // not an escape: kept
  // A value that decodes to a line break is left out, with a note that does not show it.
  EXPECT_FALSE(q[0]["headers"].contains("x-smuggled"));
  EXPECT_FALSE(q[0]["headers"].contains("x-evil"));
  EXPECT_TRUE(Has(r.err, "'X-Smuggled=***' is not a header")) << r.err;
  // --help says why the variable is the place for secrets.
  EXPECT_TRUE(Has(Export({"--help"}).out, "/proc/PID/cmdline"));
}

TEST_F(ExportCommand, AnErrorAnswerCannotWriteControlSequencesToTheTerminal) {
  const std::string report = tmp_ / "r.jsonl";
  WriteFile(report, Lines(0, 1));
  Receiver rx(tmp_ / "log", {"400::\x1b]0;pwned\x07\x1b[2J"});
  const auto r = Export({"--otlp", rx.url(), "--no-symbolize", report});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x07'), std::string::npos) << r.err;
  EXPECT_TRUE(Has(r.err, "HTTP 400: \\x1b]0;pwned\\x07\\x1b[2J")) << r.err;
}

// ---- the pieces alone ----

// The thread of a hang (issue 39): thread.id and thread.name (OpenTelemetry's semantic
// conventions) and hang.thread.role; the body names the role's thread.
TEST(OtlpEncode, TheThreadAndItsRoleAreAttributes) {
  std::vector<HangRecord> hangs(2);
  for (HangRecord& h : hangs) {
    h.pid = 7;
    h.tid = 7;
    h.process = "/srv/app";
    h.process_name = "app";
    h.duration_ms = 60;
    h.hang_class = HangClass::kBlocked;
  }
  hangs[1].tid = 8;
  hangs[1].thread_name = "RenderThread";
  hangs[1].thread_role = "render";
  const json request = json::parse(tools::EncodeOtlpJson(tools::HangsToOtlpLogs(hangs, 1)));
  std::vector<std::map<std::string, std::string>> attributes;
  std::vector<std::string> bodies;
  for (const json& rl : request["resourceLogs"]) {
    for (const json& sl : rl["scopeLogs"]) {
      for (const json& lr : sl["logRecords"]) {
        bodies.push_back(lr["body"]["stringValue"]);
        std::map<std::string, std::string> a;
        for (const json& kv : lr["attributes"]) {
          a[kv["key"]] = kv["value"].contains("stringValue") ? kv["value"]["stringValue"]
                                                             : kv["value"]["intValue"];
        }
        attributes.push_back(std::move(a));
      }
    }
  }
  ASSERT_EQ(attributes.size(), 2u);
  EXPECT_EQ(attributes[0]["thread.id"], "7");
  EXPECT_EQ(attributes[0].count("thread.name"), 0u);
  EXPECT_EQ(attributes[0]["hang.thread.role"], "main");
  EXPECT_EQ(attributes[1]["thread.id"], "8");
  EXPECT_EQ(attributes[1]["thread.name"], "RenderThread");
  EXPECT_EQ(attributes[1]["hang.thread.role"], "render");
  EXPECT_EQ(bodies[0].rfind("app: main thread hung 60 ms", 0), 0u) << bodies[0];
  EXPECT_EQ(bodies[1].rfind("app: render thread hung 60 ms", 0), 0u) << bodies[1];
}

// A hang's cause: kind and summary as attributes of its log record, and the summary in its body;
// a hang without one has neither.
TEST(OtlpEncode, TheCauseKindAndSummaryAreAttributes) {
  std::vector<HangRecord> hangs(2);
  for (HangRecord& h : hangs) {
    h.pid = 7;
    h.process = "/srv/app";
    h.process_name = "app";
    h.duration_ms = 900;
    h.hang_class = HangClass::kBlocked;
  }
  hangs[0].cause.kind = CauseKind::kLock;
  hangs[0].cause.summary =
      "waiting for mutex 0x10 held by thread 8 \"db-writer\", which is in fsync(fd 3)";
  const json request = json::parse(tools::EncodeOtlpJson(tools::HangsToOtlpLogs(hangs, 1)));
  std::vector<std::map<std::string, std::string>> attributes;
  std::vector<std::string> bodies;
  for (const json& rl : request["resourceLogs"]) {
    for (const json& sl : rl["scopeLogs"]) {
      for (const json& lr : sl["logRecords"]) {
        bodies.push_back(lr["body"]["stringValue"]);
        std::map<std::string, std::string> a;
        for (const json& kv : lr["attributes"]) {
          a[kv["key"]] = kv["value"].contains("stringValue") ? kv["value"]["stringValue"]
                                                             : kv["value"]["intValue"];
        }
        attributes.push_back(std::move(a));
      }
    }
  }
  ASSERT_EQ(attributes.size(), 2u);
  EXPECT_EQ(attributes[0]["hang.cause.kind"], "lock");
  EXPECT_EQ(attributes[0]["hang.cause.summary"], hangs[0].cause.summary);
  EXPECT_NE(bodies[0].find("; waiting for mutex 0x10 held by thread 8"), std::string::npos)
      << bodies[0];
  EXPECT_EQ(attributes[1].count("hang.cause.kind"), 0u);
  EXPECT_EQ(attributes[1].count("hang.cause.summary"), 0u);
  EXPECT_EQ(bodies[1].find("waiting"), std::string::npos) << bodies[1];
}

// Code outside any module (JIT code) is named by its offset alone, "0x7f00aa", as every other
// reader names it (the exporter said "??+0x7f00aa").
TEST(OtlpEncode, ACulpritOutsideAnyModuleIsItsOffset) {
  std::vector<HangRecord> hangs = {hangwatch::testing::PythonHang()};
  hangs[0].culprit = Culprit{};
  hangs[0].culprit.offset = 0x7f00aa;
  hangs[0].culprit.frame = 0;
  const json request = json::parse(tools::EncodeOtlpJson(tools::HangsToOtlpLogs(hangs, 1)));
  const json& lr = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  std::string function;
  for (const json& kv : lr["attributes"]) {
    if (kv["key"] == "hang.culprit.function") function = kv["value"]["stringValue"];
  }
  EXPECT_EQ(function, "0x7f00aa");
  const std::string body = lr["body"]["stringValue"];
  EXPECT_NE(body.find(" in 0x7f00aa"), std::string::npos) << body;
}

// A Python culprit: the function attribute is its qualified name, file and line
// where it is, as for a native function with debug information.
TEST(OtlpEncode, APythonCulpritIsItsFunctionFileAndLine) {
  const std::vector<HangRecord> hangs = {hangwatch::testing::PythonHang()};
  const json request = json::parse(tools::EncodeOtlpJson(tools::HangsToOtlpLogs(hangs, 1)));
  const json& lr = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  std::map<std::string, std::string> a;
  for (const json& kv : lr["attributes"]) {
    a[kv["key"]] =
        kv["value"].contains("stringValue") ? kv["value"]["stringValue"] : kv["value"]["intValue"];
  }
  EXPECT_EQ(a["hang.culprit.function"], "Handler.handle_request");
  EXPECT_EQ(a["hang.culprit.file"], "/srv/app.py");
  EXPECT_EQ(a["hang.culprit.line"], "42");
  EXPECT_EQ(a["hang.signature"], hangs[0].signature);
  const std::string body = lr["body"]["stringValue"];
  EXPECT_NE(body.find("in Handler.handle_request at app.py:42"), std::string::npos) << body;
}

// A report of 160 MB without a newline (a sparse file: no disk used) is one line over the
// 64 MiB limit: skipped with a note, in one pass, in memory bounded by the limit, not by the
// line (it used to be searched again for every 64 KiB read: quadratic, and kept whole). The
// hang after it is still read. The peak memory is the child's own (wait4), no timing is judged.
TEST(ExportLongLines, ALineOverTheLimitIsSkippedInBoundedMemory) {
  TempDir dir;
  const std::string report = dir / "long.jsonl";
  constexpr off_t kLine = 160 << 20;
  {
    const int fd = open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, kLine), 0);
    const std::string rest = "\n" + Lines(0, 1);
    ASSERT_EQ(pwrite(fd, rest.data(), rest.size(), kLine), static_cast<ssize_t>(rest.size()));
    close(fd);
  }
  const std::string err = dir / "err";
  const pid_t pid = fork();
  if (pid == 0) {
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(e, 2);
    // Nothing listens on port 9: the one hang cannot be delivered (exit 1), which is after the
    // long line was read past.
    execl(kCli.c_str(), kCli.c_str(), "export", "--otlp", "http://127.0.0.1:9", "--retries", "0",
          "--no-symbolize", report.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  struct rusage usage = {};
  ASSERT_EQ(wait4(pid, &status, 0, &usage), pid);
  const std::string text = ReadFile(err);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 1) << text;  // the hang after the long line was read
  EXPECT_TRUE(Has(text, report + ": skipped 1 line(s) longer than 64 MiB (no hang record is), "
                                 "the first at byte 0"))
      << text;
  EXPECT_TRUE(Has(text, "(0 hang(s) sent before)")) << text;
  // ru_maxrss is in KiB: the 64 MiB limit plus the program, far below the 160 MB line. (The
  // sanitizers' allocator keeps freed memory in quarantine: its peak says nothing of ours.)
#if !defined(HANGWATCH_TEST_SANITIZER_ALLOCATOR)
  EXPECT_LT(usage.ru_maxrss, 112 * 1024) << "peak RSS " << usage.ru_maxrss << " KiB";
#endif
}

TEST(OtlpSender, RetryAfterIsSecondsOrAnHttpDate) {
  const auto now = std::chrono::system_clock::from_time_t(784111777);  // 1994-11-06 08:49:37
  EXPECT_EQ(tools::ParseRetryAfterMs("3", now), 3000);
  EXPECT_EQ(tools::ParseRetryAfterMs("0", now), 0);
  EXPECT_EQ(tools::ParseRetryAfterMs("Sun, 06 Nov 1994 08:49:39 GMT", now), 2000);
  EXPECT_EQ(tools::ParseRetryAfterMs("Sun, 06 Nov 1994 08:49:30 GMT", now), 0);
  EXPECT_EQ(tools::ParseRetryAfterMs("", now), -1);
  EXPECT_EQ(tools::ParseRetryAfterMs("soon", now), -1);
  EXPECT_EQ(tools::ParseRetryAfterMs("-1", now), -1);
}

TEST(OtlpEncode, StringsAreValidUtf8AndTheBodyOneLine) {
  HangRecord h = Synthetic(0);
  h.culprit.symbol = std::string("bad\xff\xc0name\nx") + "\xc3\xa9";
  const auto logs = tools::HangsToOtlpLogs(std::vector<HangRecord>{h}, 1);
  ASSERT_EQ(logs.size(), 1u);
  const auto& r = logs[0].records[0];
  EXPECT_EQ(r.body.find('\n'), std::string::npos);
  std::string function;
  for (const auto& a : r.attributes) {
    if (a.key == "hang.culprit.function") function = a.value.string_value;
  }
  EXPECT_EQ(function, "bad\xEF\xBF\xBD\xEF\xBF\xBDname\nx\xc3\xa9");
  EXPECT_EQ(tools::HangSummary(h).find('\n'), std::string::npos);
}

TEST(ExportState, IdentityIsDeviceInodeAndFirstBytes) {
  TempDir dir;
  const std::string path = dir / "f", state_path = dir / "state";
  WriteFile(path, "line one\nline two\n");
  const int fd = open(path.c_str(), O_RDONLY);
  struct stat st;
  fstat(fd, &st);
  tools::ExportState state;
  ASSERT_TRUE(state.Load(state_path).ok());
  EXPECT_EQ(state.ResumeOffset(path, fd, st), 0u);
  state.Record(path, fd, st, 9);
  ASSERT_TRUE(state.Save().ok());
  tools::ExportState again;
  ASSERT_TRUE(again.Load(state_path).ok());
  EXPECT_EQ(again.ResumeOffset(path, fd, st), 9u);
  // Same inode, other first bytes (a file rewritten in place, or an inode reused): from 0.
  WriteFile(path, "LINE ONE\nline two\n");
  fstat(fd, &st);
  EXPECT_EQ(again.ResumeOffset(path, fd, st), 0u);
  close(fd);
  WriteFile(state_path, "not json");
  EXPECT_FALSE(again.Load(state_path).ok());
}

// Found by fuzz/otlp_state_fuzzer.cc: a state file whose JSON is well formed but whose fields
// have other types (a job of another version, an edit by hand) killed `export` with an uncaught
// nlohmann::json type_error. It is refused with one line instead.
TEST(ExportState, MistypedFieldsAreRefusedNotThrown) {
  TempDir dir;
  const std::string state_path = dir / "state";
  for (const char* text :
       {R"({"version":"1","files":[]})", R"({"version":1,"files":[{"path":1,"dev":2,"inode":3}]})",
        R"({"version":1,"files":[{"path":"/x","head_hash":7}]})"}) {
    WriteFile(state_path, text);
    tools::ExportState state;
    absl::Status status;
    EXPECT_NO_THROW(status = state.Load(state_path)) << text;
    EXPECT_FALSE(status.ok()) << text;
    EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace hangwatch::testing
