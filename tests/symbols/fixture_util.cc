// Helpers for the symbols tests (see fixture_util.h).
#include "fixture_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hangwatch::symbols::symtest {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base ? base : "/tmp") + "/hw-symbols-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (std::getenv("HANGWATCH_KEEP_TEMP") == nullptr) RunCommand("rm -rf '" + path_ + "'");
}

CommandResult RunCommand(const std::string& cmd, const std::string& input, bool merge_stderr) {
  std::string full = cmd;
  std::string in_path;
  if (!input.empty()) {
    char tmpl[] = "/tmp/hw-input-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) return {};
    in_path = tmpl;
    if (write(fd, input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
      close(fd);
      return {};
    }
    close(fd);
    full = "(" + cmd + ") < '" + in_path + "'";
  }
  if (merge_stderr) full = "(" + full + ") 2>&1";
  CommandResult result;
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return result;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) result.out.append(buf, n);
  int status = pclose(p);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!in_path.empty()) unlink(in_path.c_str());
  return result;
}

bool HaveTool(const std::string& tool) {
  return RunCommand("command -v " + tool + " >/dev/null 2>&1").status == 0;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<unsigned long long> CallSiteAddresses(const std::string& binary, size_t limit) {
  // objdump prints "  401136:\te8 05 00 00 00       \tcall   401140 <f>"; the call's return
  // address is the next instruction's address, so remember the call and take the next line.
  CommandResult r = RunCommand("objdump -d --no-show-raw-insn -j .text '" + binary + "'");
  std::vector<unsigned long long> all;
  std::istringstream lines(r.out);
  std::string line;
  bool after_call = false;
  while (std::getline(lines, line)) {
    // "<spaces><hex>:<tab><mnemonic> ..."; anything else (labels, blanks) breaks the sequence.
    size_t start = line.find_first_not_of(' ');
    size_t colon = line.find(':');
    bool insn = start != std::string::npos && colon != std::string::npos && colon > start &&
                line.find_first_not_of("0123456789abcdef", start) == colon &&
                colon + 1 < line.size() && line[colon + 1] == '\t';
    if (!insn) {
      after_call = false;
      continue;
    }
    unsigned long long addr = std::stoull(line.substr(start, colon - start), nullptr, 16);
    if (after_call) all.push_back(addr - 1);
    size_t m = line.find_first_not_of(" \t", colon + 1);
    after_call = m != std::string::npos && line.compare(m, 4, "call") == 0;
  }
  if (all.size() <= limit) return all;
  std::vector<unsigned long long> picked;
  for (size_t i = 0; i < limit; ++i) picked.push_back(all[i * all.size() / limit]);
  return picked;
}

std::string FixtureSource() {
  return R"CPP(
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

    namespace {
    int g_sink;
    __attribute__((noinline)) void Sink(int v) {
      g_sink += v;
      asm volatile("" ::: "memory");
    }

    template <typename T>
    struct Accumulator {
      T total{};
      inline void Add(T v) {
        total += v;
        Sink(static_cast<int>(v));
      }
    };

    inline int Square(int x) {
      Sink(x);
      return x * x;
    }
    static inline int SquarePlusOne(int x) {
      Sink(1);
      return Square(x) + 1;
    }
    }  // namespace

    namespace shapes {
    struct Shape {
      virtual ~Shape() = default;
      virtual double Area() const = 0;
    };
    struct Circle : Shape {
      double r;
      explicit Circle(double r) : r(r) {}
      double Area() const override {
        Sink(1);
        return 3.14159 * r * r;
      }
    };
    struct Rect : Shape {
      double w, h;
      Rect(double w, double h) : w(w), h(h) {}
      double Area() const override {
        Sink(2);
        return w * h;
      }
    };
    }  // namespace shapes

    template <typename F>
    __attribute__((noinline)) int Apply(F f, int n) {
      int sum = 0;
      for (int i = 0; i < n; ++i) sum += f(i);
      Sink(sum);
      return sum;
    }

    template <typename T, int N>
    T Fold(const std::vector<T>& v) {
      Accumulator<T> acc;
      for (const T& x : v) acc.Add(x * N);
      return acc.total;
    }

    static int StaticHelper(int argc) {
      std::map<std::string, int> m;
      m["a"] = argc;
      m["b"] = SquarePlusOne(argc);
      int s = 0;
      for (auto& [k, v] : m) {
        Sink(v);
        s += v;
      }
      return s;
    }

    int main(int argc, char** argv) {
      std::vector<std::unique_ptr<shapes::Shape>> shapes;
      shapes.push_back(std::make_unique<shapes::Circle>(argc));
      shapes.push_back(std::make_unique<shapes::Rect>(argc, 2));
      double area = 0;
      for (auto& s : shapes) area += s->Area();
      int a = Apply(
          [argc](int i) {
            Sink(i);
            return i * argc;
          },
          argc + 3);
      std::function<int(int)> fn = [&](int i) { return SquarePlusOne(i + a); };
      int b = Apply(fn, 4);
      std::vector<long> v(argc + 5, 3);
      long f = Fold<long, 3>(v) + Fold<int, 2>(std::vector<int>(4, argc));
      int s = StaticHelper(argc);
      std::printf("%d %d %ld %d %f %s\n", a, b, f, s, area, argv[0]);
      return g_sink == 12345 ? 1 : 0;
    }
  )CPP";
}

}  // namespace hangwatch::symbols::symtest
