#include "tools/exporter/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "unwind/proc_files.h"

namespace hangwatch::tools {
namespace {

prometheus::MetricFamily One(const char* name, const char* help, prometheus::MetricType type,
                             double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(metric);
  return family;
}

size_t OpenFds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
    closedir(d);
  }
  return n > 0 ? n - 1 : 0;  // less the directory's own descriptor
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces), from field 3 (state) on.
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream fields(text.substr(paren + 2));
  std::string f[23];
  for (auto& s : f) fields >> s;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double cpu = (std::stod("0" + f[11]) + std::stod("0" + f[12])) / ticks;  // utime stime
  const double start = static_cast<double>(unwind::ProcessStartUnixMs(0)) / 1000.0;
  const double vsize = std::stod("0" + f[20]);
  const double rss = std::stod("0" + f[21]) * page;
  rlimit limit = {};
  getrlimit(RLIMIT_NOFILE, &limit);
  using prometheus::MetricType;
  return {
      One("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
          MetricType::Counter, cpu),
      One("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
          rss),
      One("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
          vsize),
      One("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
          MetricType::Gauge, start),
      One("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
          static_cast<double>(OpenFds())),
      One("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
          static_cast<double>(limit.rlim_cur)),
  };
}

}  // namespace hangwatch::tools
