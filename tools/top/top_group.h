// Grouping for `hangwatch top`: hangs of many files, processes and hosts gathered into one group
// per kind of hang (same signature, fingerprint or culprit), with counts, duration percentiles,
// the busy/blocked split, first and last seen, and examples.
//
// Each scanning thread fills its own TopAggregator (a TopSink); they are merged at the end.
// Every figure is independent of how the input was split among threads: sums, minima, maxima,
// exact percentiles over all durations, and ties broken by value, never by arrival order.
#ifndef HANGWATCH_TOOLS_TOP_GROUP_H_
#define HANGWATCH_TOOLS_TOP_GROUP_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <vector>
#include "hangwatch/hang_record.h"

#include "tools/top/top_scan.h"

namespace hangwatch::tools {

enum class TopBy { kSignature, kFingerprint, kCulprit, kCause, kLabel, kThread, kContext };
enum class TopSort { kCount, kTotal };

struct TopQuery {
  TopBy by = TopBy::kSignature;
  std::string by_label;  // kLabel: the label whose value is the group ("" when a hang has none)
  // Only hangs with all these labels (key, value).
  std::vector<std::pair<std::string, std::string>> labels;
  std::optional<int64_t> since_ms;  // start_unix_ms >= since
  std::optional<int64_t> until_ms;  // start_unix_ms < until
};

// A time for --since / --until: Unix milliseconds ("1763700000123"), or an ISO-8601 date or date
// and time in UTC unless it names its offset: "2025-11-21", "2025-11-21T04:40",
// "2025-11-21T04:40:00.123Z", "2025-11-21 04:40:00+02:00". False when it is neither.
bool ParseTopTime(std::string_view text, int64_t* unix_ms);

struct TopExample {
  std::string host;
  int64_t pid = 0;
  uint64_t hang_id = 0;
  int64_t start_unix_ms = 0;
  uint64_t duration_ms = 0;
};

struct TopCulprit {
  std::string symbol, module, file;
  uint64_t offset = 0;
  int64_t line = 0;
  // An interpreter's function (Python, JavaScript, Ruby): symbol is its name. kNative else.
  FrameLanguage language = FrameLanguage::kNative;

  // As the report format's culprit (hang_record.h), for the names every command gives it.
  Culprit AsCulprit() const {
    Culprit c{symbol, module, offset, file, static_cast<int>(line), 0};
    c.language = language;
    return c;
  }
};

// Where one hang line is: its file (an index into the scanned paths) and byte offset.
struct TopLineRef {
  uint32_t file = 0;
  uint64_t offset = 0;
  friend bool operator<(const TopLineRef& a, const TopLineRef& b) {
    return a.file != b.file ? a.file < b.file : a.offset < b.offset;
  }
};

// Hangs of different thread roles are never in one group: by any key, the main thread's hangs
// and each other role's are grouped apart (TopGroup::role); --by thread groups by role alone.
struct TopGroup {
  std::string key;  // the signature, fingerprint, culprit name, cause kind, thread role or
                    // context key; "" for hangs without stacks (or, by cause, without a cause;
                    // by context, without a context)
  std::string role = "main";  // the thread role of its hangs
  uint64_t count = 0;
  uint64_t hosts = 0;      // distinct host names ("" counts as one)
  uint64_t processes = 0;  // distinct processes: (host, pid)
  // Seconds of hang per hour watched (docs/report-format.md, "Hang rate"): the group's hang time
  // over the time the lag records of its thread role cover (with --by label:NAME, those with the
  // group's value); nullopt without such lag records.
  std::optional<double> hang_seconds_per_hour;
  std::vector<std::pair<std::string, uint64_t>> process_names;  // most hangs first
  // The kinds of the hangs' causes ("lock", "io", ...; "" for none), most hangs first.
  std::vector<std::pair<std::string, uint64_t>> causes;
  std::string signature, fingerprint;  // the most common in the group
  std::optional<TopCulprit> culprit;   // the most common in the group
  // The first line (by file, then offset) of a hang with that culprit: what top_symbolize.h
  // reads again. Set with `culprit`.
  std::optional<TopLineRef> culprit_line;
  uint64_t busy = 0, blocked = 0, mixed = 0, unknown = 0;  // hangs by class
  uint64_t fatal = 0;
  uint64_t p50_ms = 0, p95_ms = 0, max_ms = 0, total_ms = 0;  // durations (nearest rank)
  uint64_t cpu_ms = 0;  // total CPU time of the main threads during these hangs
  int64_t first_unix_ms = 0, last_unix_ms = 0;  // earliest and latest start
  std::vector<TopExample> examples;             // the longest hangs (up to kTopExamples)
};

inline constexpr size_t kTopExamples = 3;

class TopAggregator : public TopSink {
 public:
  explicit TopAggregator(const TopQuery& query);
  ~TopAggregator() override;

  // Applies the query's filters, then counts the hang in its group.
  void Add(const TopHang& h) override;
  // Applies the filters (start_unix_ms for --since/--until), then adds its interval to the
  // watched time (of its label value with --by label:NAME) and its host and process to the
  // totals.
  void AddLag(const TopHang& lag) override;
  void Merge(TopAggregator&& other);

  uint64_t hangs() const { return hangs_; }            // counted
  uint64_t filtered_out() const { return filtered_; }  // left out by the filters
  // Distinct hosts and processes (host, pid) of every record counted, hangs and lag records:
  // the groups' and the lag records' put together when asked (not per hang: the scan's cost).
  uint64_t hosts_total() const;
  uint64_t processes_total() const;
  // The intervals of the main thread's lag records (other roles' are their groups' own).
  uint64_t watched_ms() const { return watched_ms_; }
  // The main thread's longest queued + running time of a pass in its lag records, and how many
  // of its passes had a known wait (docs/context.md).
  double delay_max_ms() const { return delay_max_ms_; }
  uint64_t queued_passes() const { return queued_passes_; }
  std::vector<TopGroup> Groups(TopSort sort) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <typename V>
  using StringMap = std::unordered_map<std::string, V, Hash, std::equal_to<>>;
  // Hangs with one culprit, and the first line (by file, then offset) of one of them: the
  // same line whatever thread or slice read which hang.
  struct CulpritTally {
    uint64_t count = 0;
    TopLineRef line;
    void Add(uint64_t n, TopLineRef where) {
      line = count == 0 ? where : std::min(line, where);
      count += n;
    }
  };
  struct Acc {
    std::string key, role;  // TopGroup's
    uint64_t count = 0, total = 0, max = 0, cpu = 0, fatal = 0;
    uint64_t classes[4] = {};
    int64_t first = INT64_MAX, last = INT64_MIN;
    std::vector<uint64_t> durations;
    StringMap<uint32_t> hosts;                                    // host -> index
    std::unordered_set<uint64_t> processes;                       // host index << 32 | pid
    StringMap<uint64_t> names, signatures, fingerprints, causes;  // value -> hangs
    StringMap<CulpritTally> culprits;                             // culprit key -> hangs
    std::vector<TopExample> examples;
  };
  static void Count(StringMap<uint64_t>* m, std::string_view key, uint64_t n);
  bool Filtered(const TopHang& h) const;
  void GroupKey(const TopHang& h);  // into key_ (TopGroup::key) and group_key_ (groups_' key)
  void Touch(std::string_view host, int64_t pid);  // a lag record's host and process
  static void AddExample(std::vector<TopExample>* examples, TopExample e);

  TopQuery query_;
  StringMap<Acc> groups_;
  uint64_t hangs_ = 0, filtered_ = 0;
  uint64_t watched_ms_ = 0;
  double delay_max_ms_ = 0;
  uint64_t queued_passes_ = 0;
  StringMap<uint64_t> watched_by_key_;          // --by label:NAME: group key -> watched ms
  StringMap<uint64_t> watched_by_role_;         // role -> watched ms
  StringMap<uint32_t> all_hosts_;               // of the lag records: host -> index
  std::unordered_set<uint64_t> all_processes_;  // of the lag records: host index << 32 | pid
  std::string key_, group_key_, culprit_key_;   // reused buffers
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TOP_GROUP_H_
