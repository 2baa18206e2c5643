// `hangwatch top`: what hangs most across many report files, processes and hosts (--help).
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tools/common/debug_file_flags.h"
#include "tools/common/flag_parser.h"
#include "tools/common/terminal_text.h"
#include "tools/top/top_command.h"
#include "tools/top/top_group.h"
#include "tools/top/top_output.h"
#include "tools/top/top_scan.h"
#include "tools/top/top_symbolize.h"

namespace hangwatch::tools {
namespace {

constexpr char kUsage[] =
    "usage: hangwatch top FILE...\n"
    "           [--by signature|fingerprint|culprit|cause|thread|context|label:NAME]\n"
    "                     [--format text|json]\n"
    "                     [--label K=V]... [--since TIME] [--until TIME] [options]\n"
    "\n"
    "What hangs most across a fleet: reads hang reports (JSON Lines, from any number of\n"
    "processes and hosts) and prints one group per kind of hang, most hangs first:\n"
    "  --by signature     the same function names on top of the dominant stack: the same hang\n"
    "                     across builds and machines (default)\n"
    "  --by fingerprint   the same code addresses: the same hang in the same build\n"
    "  --by culprit       the same culprit function (and module; a Python function's file)\n"
    "  --by cause         the same kind of cause: why the hangs waited (lock, deadlock, io,\n"
    "                     fault, ipc, child, sleep, starved, throttled, pressure, other; \"-\"\n"
    "                     for hangs without one)\n"
    "  --by thread        the same thread role (main, or a watched thread's: render, io...);\n"
    "                     by any key, each role's hangs are grouped apart (THREAD column)\n"
    "  --by context       what the passes were serving: the innermost label\n"
    "                     (hangwatch::ScopedLabel), else the source an adapter dispatched,\n"
    "                     else the kind of event that began the pass (tcp, timerfd, timeout...);\n"
    "                     \"-\" for hangs without context\n"
    "  --by label:NAME    the same value of label NAME (HANGWATCH_LABELS): compare builds\n"
    "                     with --by label:build\n"
    "For each group: hangs, hosts and processes (distinct host+pid) it was seen in, of all\n"
    "those the files name (3/40), duration p50/p95/max/total, the hang rate (S/H: seconds of\n"
    "hang per hour watched, the watched time being what the lag records cover; by label: those\n"
    "with the group's value), hangs by class (busy, blocked), the cause kinds (CAUSE: the most\n"
    "common, +N other kinds), the most common culprit with file:line, the process names, first\n"
    "and last seen, and the longest hangs as examples (host, pid, hang_id).\n"
    "\n"
    "The culprit of each group printed is symbolized offline as `hangwatch report` does it: one\n"
    "hang of the group is read again in full, its frames looked up by build-id and module offset\n"
    "(functions, files, lines, inlined frames; debug files fetched from $DEBUGINFOD_URLS when\n"
    "set) and its culprit recomputed. Binaries and debug files are found at the recorded module\n"
    "paths when their build-id matches, else from:\n"
    "  --search PATH      a binary or directory of binaries to match by build-id; repeatable\n"
    "  --debug-dir DIR    separate debug files (DIR/.build-id/xx/rest.debug); repeatable\n"
    "                     (default /usr/lib/debug)\n"
    "  --cache-dir DIR    symbol index cache (default $HANGWATCH_CACHE_DIR, ~/.cache/hangwatch)\n"
    "  --no-cache         neither read nor write cached indexes\n"
    "  --no-symbolize     print the culprits as recorded\n"
    "\n"
    "Filters (a hang must pass all):\n"
    "  --label K=V        the hang's labels (HANGWATCH_LABELS) include K=V; repeatable\n"
    "  --since TIME       started at or after TIME\n"
    "  --until TIME       started before TIME\n"
    "  TIME is Unix milliseconds (1763700000123) or an ISO-8601 date or date and time, UTC\n"
    "  unless an offset is given: 2025-11-21, 2025-11-21T04:40, 2025-11-21T04:40:00.123Z,\n"
    "  '2025-11-21 04:40:00+02:00'.\n"
    "Output:\n"
    "  --format F, -f F   text (a table, default) or json (an array of groups)\n"
    "  --sort count|total order groups by hangs (default) or by total hang time\n"
    "  --limit N          at most N groups (default 30 for text, all for json; 0: all)\n"
    "  --jobs N, -j N     reading threads (default: one per CPU)\n"
    "  --output FILE, -o FILE   write there instead of stdout\n"
    "\n"
    "Files are read in parallel, large ones in slices; stacks are skipped, not\n"
    "decoded. Bad lines (torn writes), records of unknown types or of another format version,\n"
    "and whole files that cannot be read or are compressed are counted and skipped with a note\n"
    "on stderr; so is a culprit whose hang cannot be read again (the file changed), shown as\n"
    "recorded. Exit status: 0; 2 for bad usage, or when no file could be read.\n";

constexpr char kCommand[] = "hangwatch top";

// One note per file that had anything skipped.
void PrintNotes(const std::vector<ScanStats>& stats) {
  for (const ScanStats& s : stats) {
    if (!s.error.empty()) {
      std::fprintf(
          stderr, "%s",
          EscapeForTerminal("hangwatch top: " + s.path + ": skipped: " + s.error + "\n").c_str());
      continue;
    }
    std::string what;
    auto add = [&](uint64_t n, const char* one, const char* many) {
      if (n == 0) return;
      what += (what.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
    };
    add(s.bad_lines, "bad line (torn or malformed)", "bad lines (torn or malformed)");
    add(s.unknown_types, "record of an unknown type", "records of unknown types");
    add(s.other_versions, "record of another format_version", "records of another format_version");
    if (s.bad_lines > 0) {
      what += "; the first bad line at byte " + std::to_string(s.first_bad_offset);
    }
    if (!what.empty()) {
      std::fprintf(stderr, "hangwatch top: %s: skipped %s\n", EscapeForTerminal(s.path).c_str(),
                   what.c_str());
    }
  }
}

int Run(int argc, char** argv) {
  std::string format = "text", output;
  TopQuery query;
  TopSort sort = TopSort::kCount;
  long limit = -1, jobs = 0;
  bool symbolize = true;
  ReportSymbolizeOptions symbolize_options;
  symbolize_options.command = "top";
  FlagParser flags(kCommand);
  flags.Help({kUsage});
  flags.Value({"--by"}, [&](const std::string& v) -> std::string {
    if (v == "signature") {
      query.by = TopBy::kSignature;
    } else if (v == "fingerprint") {
      query.by = TopBy::kFingerprint;
    } else if (v == "culprit") {
      query.by = TopBy::kCulprit;
    } else if (v == "cause") {
      query.by = TopBy::kCause;
    } else if (v == "thread") {
      query.by = TopBy::kThread;
    } else if (v == "context") {
      query.by = TopBy::kContext;
    } else if (v.rfind("label:", 0) == 0 && v.size() > 6) {
      query.by = TopBy::kLabel;
      query.by_label = v.substr(6);
    } else {
      return "--by wants signature, fingerprint, culprit, cause, thread, context or label:NAME, "
             "not '" +
             v + "'";
    }
    return "";
  });
  flags.Value({"--format", "-f"}, [&](const std::string& v) -> std::string {
    if (v != "text" && v != "json") return "unknown format '" + v + "' (text, json)";
    format = v;
    return "";
  });
  flags.Value({"--sort"}, [&](const std::string& v) -> std::string {
    if (v != "count" && v != "total") return "--sort wants count or total, not '" + v + "'";
    sort = v == "total" ? TopSort::kTotal : TopSort::kCount;
    return "";
  });
  flags.Value({"--label"}, [&](const std::string& v) -> std::string {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) return "--label wants K=V, not '" + v + "'";
    query.labels.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    return "";
  });
  for (auto [flag, bound] :
       {std::pair{"--since", &query.since_ms}, std::pair{"--until", &query.until_ms}}) {
    flags.Value({flag}, [flag = std::string(flag), bound = bound](const std::string& v) {
      int64_t ms = 0;
      if (!ParseTopTime(v, &ms)) {
        return flag + " wants Unix milliseconds or an ISO-8601 date/time, not '" + v + "'";
      }
      *bound = ms;
      return std::string();
    });
  }
  flags.Number({"--limit"}, 0, LONG_MAX, &limit, "--limit wants a number, not '{}'");
  flags.Number({"--jobs", "-j"}, 1, LONG_MAX, &jobs, "--jobs wants a positive number");
  flags.String({"--output", "-o"}, &output);
  AddSymbolizeFlags(&flags, &symbolize_options.symbolizer, &symbolize);
  if (const std::optional<int> done = flags.Parse(argc, argv)) return *done;
  const std::vector<std::string>& files = flags.positional();
  if (files.empty()) return Fail(kCommand, "no report file given (see hangwatch top --help)");

  TopScanOptions options;
  options.threads = static_cast<int>(jobs);
  options.want_labels = !query.labels.empty() || query.by == TopBy::kLabel;
  std::vector<std::unique_ptr<TopSink>> sinks;
  const std::vector<ScanStats> stats = ScanTopFiles(
      files, options, [&] { return std::make_unique<TopAggregator>(query); }, &sinks);
  PrintNotes(stats);
  size_t read = 0;
  for (const ScanStats& s : stats) read += s.error.empty() ? 1 : 0;
  if (read == 0) return Fail(kCommand, "no file could be read");
  TopAggregator all(query);
  for (auto& s : sinks) all.Merge(std::move(static_cast<TopAggregator&>(*s)));
  std::vector<TopGroup> groups = all.Groups(sort);
  // Rows printed: text 30 by default, JSON all (0).
  const size_t shown = limit >= 0 ? static_cast<size_t>(limit) : format == "json" ? 0 : 30;
  if (symbolize) {
    // Only the groups printed: the scan stays the cost of reading the files.
    symbolize_options.progress = isatty(STDERR_FILENO) == 1;
    std::vector<std::string> notes, warnings;
    SymbolizeTopCulprits(files, symbolize_options, shown, &groups, &notes, &warnings);
    for (const std::string& n : notes) {
      std::fprintf(stderr, "hangwatch top: %s\n", EscapeForTerminal(n).c_str());
    }
    for (const std::string& w : warnings) {
      std::fprintf(stderr, "hangwatch top: warning: %s\n", EscapeForTerminal(w).c_str());
    }
  }

  std::string text;
  if (format == "json") {
    text = FormatTopJson(groups, query.by, shown, query.by_label);
  } else {
    TopTextOptions o;
    o.by = query.by;
    o.limit = shown;
    o.hangs = all.hangs();
    o.files = read;
    o.by_label = query.by_label;
    o.hosts_total = all.hosts_total();
    o.processes_total = all.processes_total();
    o.watched_ms = all.watched_ms();
    o.delay_max_ms = all.delay_max_ms();
    o.queued_passes = all.queued_passes();
    text = FormatTopText(groups, o);
  }
  FILE* out = output.empty() ? stdout : std::fopen(output.c_str(), "w");
  if (out == nullptr) return Fail(kCommand, output + ": " + std::strerror(errno));
  std::fwrite(text.data(), 1, text.size(), out);
  if ((out == stdout ? std::fflush(out) : std::fclose(out)) != 0) {
    return Fail(kCommand, (output.empty() ? "stdout" : output) + ": " + std::strerror(errno));
  }
  return 0;
}

}  // namespace

const Command kTopCommand = {
    "top", "what hangs most across many report files and hosts: groups, counts, durations", Run};
}  // namespace hangwatch::tools
