// JSON Lines of watched threads for the readers' tests (issue 39): a hang and a lag record of
// one thread role, written as the agent writes them (format_version 2 for a role other than
// main, "thread": {"tid", "name", "role"}), with the few fields each test varies.
#ifndef HANGWATCH_TESTS_TOOLS_THREAD_LINES_H_
#define HANGWATCH_TESTS_TOOLS_THREAD_LINES_H_

#include <cstdint>
#include <cstdio>
#include <string>

namespace hangwatch::testing {

// A hang of thread `role` of process 7 ("app") whose one stack is `symbol` in /srv/app. The
// main thread is tid 7 named "app", any other role tid 8 named "RenderThread".
inline std::string ThreadHangLine(const std::string& role, const std::string& signature,
                                  const std::string& symbol, uint64_t duration_ms,
                                  const std::string& host = "h") {
  const bool main = role == "main";
  const std::string tid = main ? "7" : "8";
  return std::string(R"({"type":"hang","format_version":)") + (main ? "1" : "2") +
         R"(,"pid":7,"tid":)" + tid + R"(,"thread":{"tid":)" + tid + R"(,"name":")" +
         (main ? "app" : "RenderThread") + R"(","role":")" + role +
         R"("},"process":"/srv/app","process_name":"app","host":")" + host +
         R"(","labels":{},"hang_id":0,"start_unix_ms":1000,"duration_ms":)" +
         std::to_string(duration_ms) +
         R"(,"cpu_ms":0,"class":"blocked","samples":1,"threshold_ms":50,"sample_interval_ms":10,)"
         R"("fingerprint":"00000000000000ff","signature":")" +
         signature + R"(","culprit":{"symbol":")" + symbol +
         R"(","module":"/srv/app","offset":"0x1080","file":"","line":0,"frame":0},)"
         R"("dominant_stack":0,"stacks":[{"id":0,"count":1,"first_seen_ms":0,"last_seen_ms":0,)"
         R"("cpu_ms":0,"frames":[{"addr":"0x560000001080","module":"/srv/app","build_id":"",)"
         R"("offset":"0x1080","symbol":")" +
         symbol +
         R"("}]}],"timeline":[{"t_ms":0,"stack":0,"cpu_us":0,"state":"S"}],)"
         R"("modules":[{"path":"/srv/app","base":"0x560000000000","build_id":""}]})" +
         "\n";
}

// A lag record of thread `role`: `n` passes of about `ms` milliseconds over one minute.
inline std::string ThreadLagLine(const std::string& role, uint64_t n, double ms,
                                 const std::string& host = "h") {
  const bool main = role == "main";
  char bucket[64];
  std::snprintf(bucket, sizeof bucket, "[[%.3f,%llu]]", ms * 1000 * 1.005,
                static_cast<unsigned long long>(n));
  const uint64_t over16 = ms > 16 ? n : 0;
  return std::string(R"({"type":"lag","format_version":)") + (main ? "1" : "2") +
         R"(,"pid":7,"process_name":"app","host":")" + host + R"(","labels":{},"thread":{"tid":)" +
         (main ? "7" : "8") + R"(,"role":")" + role +
         R"("},"start_unix_ms":0,"end_unix_ms":60000,"busy_ms":)" +
         std::to_string(static_cast<double>(n) * ms) + R"(,"slow_passes":{"16":)" +
         std::to_string(over16) + R"(,"33":0},"buckets":)" + bucket + "}\n";
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_TOOLS_THREAD_LINES_H_
