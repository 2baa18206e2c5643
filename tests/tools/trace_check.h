// Structural check of Chrome trace-event JSON (the "JSON Object Format" that Perfetto UI and
// chrome://tracing load): the fields every event needs for its phase, and complete ("X")
// events properly nested on each thread track, as a flame chart must be.
#ifndef HANGWATCH_TESTS_TOOLS_TRACE_CHECK_H_
#define HANGWATCH_TESTS_TOOLS_TRACE_CHECK_H_

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace hangwatch::testing {

// "" when `text` is a valid trace, else the first problem found.
inline std::string CheckTraceEvents(const std::string& text) {
  using nlohmann::json;
  const json trace = json::parse(text, nullptr, false);
  if (!trace.is_object()) return "not a JSON object";
  auto events = trace.find("traceEvents");
  if (events == trace.end() || !events->is_array()) return "no traceEvents array";
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> slices;
  for (const json& e : *events) {
    if (!e.is_object()) return "an event is not an object";
    if (!e.contains("ph") || !e["ph"].is_string()) return "an event without ph";
    if (!e.contains("name") || !e["name"].is_string()) return "an event without name";
    if (!e.contains("pid") || !e["pid"].is_number_integer()) return "an event without pid";
    if (!e.contains("tid") || !e["tid"].is_number_integer()) return "an event without tid";
    const std::string ph = e["ph"];
    if (ph == "M") {
      if (!e.contains("args") || !e["args"].contains("name")) return "metadata without args.name";
    } else if (ph == "X") {
      if (!e.contains("ts") || !e["ts"].is_number()) return "X event without ts";
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
        return "X event without a duration";
      }
      slices[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].emplace_back(
          e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    } else {
      return "unexpected phase " + ph;
    }
  }
  for (auto& [track, list] : slices) {
    // Parents first: earlier start, then longer.
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open_ends;
    for (const auto& [begin, end] : list) {
      while (!open_ends.empty() && open_ends.back() <= begin) open_ends.pop_back();
      if (!open_ends.empty() && end > open_ends.back()) {
        return "slices overlap without nesting on tid " + std::to_string(track.second);
      }
      open_ends.push_back(end);
    }
  }
  return "";
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_TOOLS_TRACE_CHECK_H_
