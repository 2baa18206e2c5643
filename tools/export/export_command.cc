// `hangwatch export --otlp URL FILE...`: hang reports as OpenTelemetry log records over OTLP/HTTP
// (see --help; the mapping is tools/export/otlp_encode.h, delivery tools/export/otlp_sender.h, the
// resume state tools/export/otlp_state.h).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "report/report_decode.h"
#include "symbols/url_credentials.h"
#include "tools/common/debug_file_flags.h"
#include "tools/common/flag_parser.h"
#include "tools/common/terminal_text.h"
#include "tools/export/export_command.h"
#include "tools/export/otlp_encode.h"
#include "tools/export/otlp_sender.h"
#include "tools/export/otlp_state.h"
#include "tools/reader/input_file.h"
#include "tools/reader/line_reader.h"
#include "tools/reader/report_reader.h"
#include "tools/reader/report_symbolize.h"

namespace hangwatch::tools {
namespace {

constexpr char kUsage[] =
    "usage: hangwatch export --otlp URL [options] FILE...\n"
    "\n"
    "Sends every hang of the reports (JSON Lines files of the agent, or open-hang files of a\n"
    "process that died during a hang) as an OpenTelemetry log record over OTLP/HTTP: a POST of\n"
    "an ExportLogsServiceRequest to URL/v1/logs (an OpenTelemetry Collector's otlphttp receiver\n"
    "listens on http://HOST:4318). One record per hang: severity WARN (FATAL for a fatal hang),\n"
    "a one-line summary as body, attributes hang.duration_ms, hang.cpu_ms, hang.class,\n"
    "hang.signature, hang.fingerprint, hang.culprit.function/.file/.line, hang.samples, and when\n"
    "known hang.context.label, hang.context.source, hang.trigger.kind, hang.perceived (boolean),\n"
    "hang.not_responding, hang.input.events; resource service.name (the process name),\n"
    "host.name, process.pid and the hang's labels.\n"
    "\n"
    "  --otlp URL            the endpoint (default $OTEL_EXPORTER_OTLP_ENDPOINT)\n"
    "  --protocol P          http/json (default) or http/protobuf\n"
    "  --header K=V          an HTTP header for every request (authentication); repeatable.\n"
    "                        Also from $OTEL_EXPORTER_OTLP_HEADERS=\"k=v,k=v\" (values\n"
    "                        percent-decoded: \"Authorization=Basic%20...\"), which keeps\n"
    "                        secrets out of the command line that every user can read in\n"
    "                        /proc/PID/cmdline (ps); messages never show header values or a\n"
    "                        URL's user:password\n"
    "  --state FILE          remember how far each input file was sent (by device, inode and\n"
    "                        first bytes, so rotated files keep their place) and start there:\n"
    "                        a job run every few minutes sends each hang once\n"
    "  --batch-size N        hangs per request, at most 512 (default 512)\n"
    "  --timeout-ms N        per request attempt, connecting included (default 10000)\n"
    "  --retries N           retries of a request answered 429, 502, 503 or 504, or timed out\n"
    "                        (default 5); waits follow Retry-After, else --backoff-ms doubling\n"
    "  --backoff-ms N        first wait between retries (default 500)\n"
    "  --max-backoff-ms N    longest wait (default 30000); a longer Retry-After gives up\n"
    "  --with-peers          also send the other end of what began a hang's pass:\n"
    "                        hang.trigger.peer (an address or socket path), hang.trigger.pid,\n"
    "                        hang.trigger.process. Off by default: they name other hosts and\n"
    "                        programs\n"
    "Symbolization (as hangwatch report, before sending: culprits get files and lines):\n"
    "  --search PATH, --debug-dir DIR, --cache-dir DIR, --no-cache, --no-symbolize\n"
    "  ($DEBUGINFOD_URLS: missing debug files are fetched by build-id)\n"
    "\n"
    "Lines that are not hang records (torn lines, start-up stalls, lag records, other types)\n"
    "are skipped and counted. Exit status: 0 when every hang was delivered; 1 when delivery\n"
    "failed (endpoint refused or unreachable, an HTTP error, retries exhausted: one line says\n"
    "which; the state keeps what was delivered); 2 for bad usage or an unreadable input or\n"
    "state file (nothing is sent then).\n";

constexpr int kExitDelivery = 1;
constexpr size_t kMaxBatch = 512;

// Every message may name the endpoint (with its user:password) and quote the server's answer
// (any bytes): credentials are redacted and control characters escaped.
std::string ForLog(std::string_view message) {
  return EscapeForTerminal(symbols::RedactUrlCredentials(message));
}

constexpr char kCommand[] = "hangwatch export";

int Fail(int code, const std::string& message) {
  tools::Fail(kCommand, symbols::RedactUrlCredentials(message));
  return code;
}

// "K=V" or "K: V" as an HTTP header line; "" when malformed.
std::string HeaderLine(std::string_view kv) {
  size_t cut = kv.find('=');
  const size_t colon = kv.find(':');
  if (colon != std::string_view::npos && (cut == std::string_view::npos || colon < cut)) {
    cut = colon;
  }
  if (cut == 0 || cut == std::string_view::npos) return "";
  std::string_view key = kv.substr(0, cut), value = kv.substr(cut + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  for (char c : kv) {
    if (c == '\r' || c == '\n') return "";
  }
  for (char c : key) {
    if (c == ' ' || c == '\t') return "";
  }
  return std::string(key) + ": " + std::string(value);
}

// A header as a message may show it: its name, never its value ("Authorization: ***"); "***"
// when no name can be told from it.
std::string RedactedHeader(std::string_view kv) {
  const size_t cut = kv.find_first_of("=:");
  if (cut == 0 || cut == std::string_view::npos) return "***";
  return std::string(kv.substr(0, cut + 1)) + "***";
}

// `s` with each "%XX" (two hex digits) replaced by its byte; anything else is kept as it is.
std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// $OTEL_EXPORTER_OTLP_HEADERS as the OpenTelemetry specification defines it: "k=v,k=v", each
// key and value trimmed of white space and the value percent-decoded (W3C Baggage encoding).
// An entry that does not make a header line (no '=', an empty key, a decoded CR, LF or NUL,
// which would smuggle in another header) is left out with one note naming its key at most.
std::vector<std::string> OtelHeaders(std::string_view all) {
  std::vector<std::string> out;
  while (!all.empty()) {
    const size_t comma = all.find(',');
    const std::string_view entry = all.substr(0, comma);
    all = comma == std::string_view::npos ? std::string_view() : all.substr(comma + 1);
    if (Trimmed(entry).empty()) continue;
    const size_t eq = entry.find('=');
    std::string line;
    if (eq != std::string_view::npos) {
      const std::string value = PercentDecode(Trimmed(entry.substr(eq + 1)));
      if (value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos) {
        line = HeaderLine(std::string(Trimmed(entry.substr(0, eq))) + "=" + value);
      }
    }
    if (line.empty()) {
      std::fprintf(stderr,
                   "hangwatch export: $OTEL_EXPORTER_OTLP_HEADERS: '%s' is not a header "
                   "(KEY=VALUE), left out\n",
                   ForLog(RedactedHeader(Trimmed(entry))).c_str());
      continue;
    }
    out.push_back(line);
  }
  return out;
}

// One input file.
struct Input {
  InputFile file;
  bool open_hang_file = false;
  uint64_t consumed = 0;  // every line before this was read (sent, batched or skipped)
};

// Hangs waiting to be sent, and what has been sent.
struct Exporter {
  OtlpSender* sender = nullptr;
  bool protobuf = false;
  size_t batch_size = kMaxBatch;
  bool symbolize = true;
  ReportSymbolizeOptions symbolize_options;
  OtlpOptions otlp;              // --with-peers
  ExportState* state = nullptr;  // null without --state
  std::vector<Input>* inputs = nullptr;
  std::vector<HangRecord> batch;
  std::set<std::string> warned;
  size_t sent = 0, requests = 0, rejected = 0;
  std::string error;  // the delivery failure

  // Sends the batch (when not empty), then records every input's consumed offset. False when
  // delivery failed (*error set).
  bool Flush() {
    if (!batch.empty()) {
      if (symbolize) {
        Report report;
        report.hangs = std::move(batch);
        std::vector<std::string> warnings;
        SymbolizeReport(symbolize_options, &report, &warnings);
        for (const std::string& w : warnings) {
          if (warned.insert(w).second) {
            std::fprintf(stderr, "hangwatch export: warning: %s\n", ForLog(w).c_str());
          }
        }
        batch = std::move(report.hangs);
      }
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      const auto logs = HangsToOtlpLogs(
          batch,
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()),
          otlp);
      const std::string body = protobuf ? EncodeOtlpProtobuf(logs) : EncodeOtlpJson(logs);
      OtlpDelivery d;
      if (absl::Status s = sender->Send(body, &d); !s.ok()) {
        error = "cannot deliver to " + sender->url() + ": " + std::string(s.message());
        return false;
      }
      ++requests;
      sent += batch.size();
      rejected += static_cast<size_t>(d.rejected);
      batch.clear();
    }
    if (state == nullptr) return true;
    for (const Input& in : *inputs) {
      struct stat st;
      if (fstat(in.file.fd(), &st) == 0)
        state->Record(in.file.path(), in.file.fd(), st, in.consumed);
    }
    if (absl::Status s = state->Save(); !s.ok()) {
      error = std::string(s.message());
      return false;
    }
    return true;
  }

  bool Add(HangRecord hang) {
    batch.push_back(std::move(hang));
    return batch.size() < batch_size || Flush();
  }
};

// Skipped lines of one file, for its note.
struct Skipped {
  size_t bad = 0, other = 0, too_long = 0;
  uint64_t first_too_long = 0;  // its byte offset
};

// Reads `in` from its consumed offset, handing each hang to the exporter. False when delivery
// failed or the file could not be read (ex->error set).
bool ExportJsonLines(Input* in, Exporter* ex, Skipped* skipped) {
  LineReader reader(in->file, in->consumed);
  Line line;
  while (reader.Next(&line)) {
    if (line.too_long) {
      // Never a hang record: skipped whole (also when its end is not written yet).
      if (skipped->too_long++ == 0) skipped->first_too_long = line.offset;
      in->consumed = line.offset + line.length + (line.terminated ? 1 : 0);
      continue;
    }
    // A last line without its newline may still be being written: left for the next run.
    if (!line.terminated) break;
    in->consumed = line.offset + line.length + 1;
    if (line.text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    HangRecord h;
    std::string why;
    if (ParseHangLine(line.text, &h, &why)) {
      if (!ex->Add(std::move(h))) return false;
      continue;
    }
    // Records of other types are counted apart from lines that do not decode, among which
    // records of another format version (docs/report-format.md, Reading rules).
    report::Record record;
    const bool decoded = report::Decode(line.text, &record, &why);
    const auto* unknown = std::get_if<report::UnknownRecord>(&record);
    const bool other_type = decoded && (unknown == nullptr || !unknown->other_version);
    ++(other_type ? skipped->other : skipped->bad);
  }
  if (reader.error() != 0) {
    ex->error = in->file.path() + ": " + std::strerror(reader.error());
    return false;
  }
  return true;
}

struct ExportOptions {
  std::string endpoint, protocol = "http/json", state_path;
  std::vector<std::string> headers;
  OtlpSenderOptions send;
  long batch_size = kMaxBatch;
  std::vector<std::string> files;
};

// Reads the options ($OTEL_EXPORTER_OTLP_ENDPOINT and _HEADERS first, the flags then); the
// symbolization flags go to `ex`. The exit status when `export` is done (--help, bad usage).
std::optional<int> ParseExportOptions(int argc, char** argv, ExportOptions* o, Exporter* ex) {
  if (const char* e = std::getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) o->endpoint = e;
  if (const char* h = std::getenv("OTEL_EXPORTER_OTLP_HEADERS")) o->headers = OtelHeaders(h);
  FlagParser flags(kCommand);
  flags.Redact(symbols::RedactUrlCredentials);
  flags.Help({kUsage});
  flags.String({"--otlp"}, &o->endpoint);
  flags.Value({"--protocol"}, [o](const std::string& v) -> std::string {
    if (v != "http/json" && v != "http/protobuf") {
      return "unknown protocol '" + v + "' (http/json, http/protobuf)";
    }
    o->protocol = v;
    return "";
  });
  flags.Value({"--header"}, [o](const std::string& v) -> std::string {
    const std::string line = HeaderLine(v);
    if (line.empty()) {
      return "--header wants NAME=VALUE (one line), not '" + RedactedHeader(v) +
             "' (values are not shown)";
    }
    o->headers.push_back(line);
    return "";
  });
  flags.String({"--state"}, &o->state_path);
  flags.Number({"--batch-size"}, 1, kMaxBatch, &o->batch_size);
  flags.Number({"--timeout-ms"}, 1, 3600000, &o->send.timeout_ms);
  flags.Number({"--retries"}, 0, 100, &o->send.max_retries);
  flags.Number({"--backoff-ms"}, 0, 3600000, &o->send.initial_backoff_ms);
  flags.Number({"--max-backoff-ms"}, 0, 3600000, &o->send.max_backoff_ms);
  flags.Switch({"--with-peers"}, [ex] { ex->otlp.with_peers = true; });
  AddSymbolizeFlags(&flags, &ex->symbolize_options.symbolizer, &ex->symbolize);
  if (const std::optional<int> done = flags.Parse(argc, argv)) return done;
  o->files = flags.positional();
  if (o->endpoint.empty()) return Fail(kExitUsage, "no endpoint: --otlp URL (see --help)");
  if (o->files.empty()) {
    return Fail(kExitUsage, "no report file given (see hangwatch export --help)");
  }
  return std::nullopt;
}

int Run(int argc, char** argv) {
  ExportOptions o;
  Exporter ex;
  if (const std::optional<int> done = ParseExportOptions(argc, argv, &o, &ex)) return *done;
  const std::string& state_path = o.state_path;
  OtlpSenderOptions& send = o.send;
  // A debuginfod download longer than a second says so, as in `report`.
  ex.symbolize_options.progress = isatty(STDERR_FILENO) == 1;
  ex.symbolize_options.command = "export";

  // Every input opens before anything is sent: a typo in a cron line sends nothing.
  std::vector<Input> inputs;
  for (const std::string& f : o.files) {
    Input in;
    std::string error;
    if (!in.file.Open(f, &error)) return Fail(kExitUsage, error);
    inputs.push_back(std::move(in));
  }
  ExportState state;
  int lock_fd = -1;
  if (!state_path.empty()) {
    // One export per state file at a time: two overlapping cron runs would send twice.
    lock_fd = open((state_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) return Fail(kExitUsage, state_path + ".lock: " + std::strerror(errno));
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      return Fail(kExitDelivery, "another export is running with the state file " + state_path);
    }
    if (absl::Status s = state.Load(state_path); !s.ok())
      return Fail(kExitUsage, std::string(s.message()));
    ex.state = &state;
  }

  send.endpoint = o.endpoint;
  send.content_type = o.protocol == "http/json" ? "application/json" : "application/x-protobuf";
  send.headers = o.headers;
  send.on_retry = [](long status, std::chrono::milliseconds wait) {
    std::fprintf(stderr, "hangwatch export: %s, retrying in %lld ms\n",
                 status == 0 ? "request timed out" : ("HTTP " + std::to_string(status)).c_str(),
                 static_cast<long long>(wait.count()));
  };
  auto sender = OtlpSender::Create(send);
  if (!sender.ok()) {
    return Fail(
        sender.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitDelivery,
        std::string(sender.status().message()));
  }
  ex.sender = sender->get();
  ex.protobuf = o.protocol == "http/protobuf";
  ex.batch_size = static_cast<size_t>(o.batch_size);
  ex.inputs = &inputs;

  // Every input's place first: a batch sent while reading the first file records them all.
  for (Input& in : inputs) {
    struct stat st;
    if (ex.state != nullptr && fstat(in.file.fd(), &st) == 0) {
      in.consumed = state.ResumeOffset(in.file.path(), in.file.fd(), st);
    }
  }
  bool ok = true;
  for (Input& in : inputs) {
    const std::string& path = in.file.path();
    const InputFormat format = in.file.Sniff();
    if (const std::string_view why = CompressedFileError(format); !why.empty()) {
      std::fprintf(stderr, "hangwatch export: %s: %.*s, skipped\n", ForLog(path).c_str(),
                   static_cast<int>(why.size()), why.data());
      continue;
    }
    if (format == InputFormat::kOpenHang) {
      // An open-hang file holds at most one (fatal) hang: sent once, as a whole.
      struct stat st;
      fstat(in.file.fd(), &st);
      if (in.consumed >= static_cast<uint64_t>(st.st_size)) continue;
      Report one;
      std::string error;
      if (!ReadReportFile(path, &one, &error)) {
        std::fprintf(stderr, "hangwatch export: %s, skipped\n", ForLog(error).c_str());
        continue;
      }
      in.consumed = static_cast<uint64_t>(st.st_size);
      for (HangRecord& h : one.hangs) {
        if (!(ok = ex.Add(std::move(h)))) break;
      }
      if (!ok) break;
      continue;
    }
    Skipped skipped;
    if (!(ok = ExportJsonLines(&in, &ex, &skipped))) break;
    if (skipped.bad + skipped.other > 0) {
      std::fprintf(stderr,
                   "hangwatch export: %s: skipped %zu line(s) that do not decode (torn writes, "
                   "another format version) and %zu record(s) of other types\n",
                   ForLog(path).c_str(), skipped.bad, skipped.other);
    }
    if (skipped.too_long > 0) {
      std::fprintf(stderr,
                   "hangwatch export: %s: skipped %zu line(s) longer than %zu MiB (no hang record "
                   "is), the first at byte %llu\n",
                   ForLog(path).c_str(), skipped.too_long, kMaxLineBytes >> 20,
                   static_cast<unsigned long long>(skipped.first_too_long));
    }
  }
  if (ok) ok = ex.Flush();
  if (lock_fd >= 0) close(lock_fd);
  if (!ok) {
    return Fail(kExitDelivery, ex.error + " (" + std::to_string(ex.sent) + " hang(s) sent before)");
  }
  std::printf("hangwatch export: %zu hang(s) sent in %zu request(s) to %s\n", ex.sent, ex.requests,
              ForLog(ex.sender->url()).c_str());
  if (ex.rejected > 0) {
    std::fprintf(stderr,
                 "hangwatch export: the endpoint rejected %zu record(s) (partial success)\n",
                 ex.rejected);
  }
  return 0;
}

}  // namespace

const Command kExportCommand = {
    "export", "send hangs to an OpenTelemetry endpoint (OTLP/HTTP logs), resumable", Run};
}  // namespace hangwatch::tools
