#!/usr/bin/env python3
"""Writes the sources of a large C++ program for the offline symbolization benchmarks.

Usage: gen_big_binary.py OUT_DIR UNITS FUNCS_PER_UNIT
Every unit instantiates class and function templates over several types, with inlined helpers,
lambdas, std::function, STL containers and anonymous namespaces, so that -O2 -g produces deep
inline chains and plenty of DWARF (roughly 1.5-2 MB per unit with 40 functions).
"""
import os
import sys

out, units, funcs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
types = ["int", "long", "double", "unsigned", "short", "float"]

head = """#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
"""

for u in range(units):
    src = [head, f"namespace unit{u} {{", "namespace {",
           "int g_sink;",
           "__attribute__((noinline)) void Sink(long v) { g_sink += static_cast<int>(v); asm volatile(\"\" ::: \"memory\"); }",
           "}  // namespace",
           """template <typename T, int K>
struct Widget {
  std::vector<T> items;
  std::map<std::string, T> index;
  inline void Add(const T& v) {
    items.push_back(v * static_cast<T>(K));
    index[std::to_string(items.size())] = v;
    Sink(static_cast<long>(v));
  }
  inline T Sum() const { return std::accumulate(items.begin(), items.end(), T{}); }
  template <typename F>
  inline void Each(F f) { for (auto& x : items) f(x); }
};
template <typename T>
inline T Twice(T v) { Sink(1); return v + v; }
template <typename T, typename F>
__attribute__((noinline)) T Reduce(const std::vector<T>& v, F f) {
  T acc{};
  for (const T& x : v) acc = f(acc, x);
  Sink(static_cast<long>(acc));
  return acc;
}"""]
    for f in range(funcs):
        t = types[(u + f) % len(types)]
        k = (f % 7) + 2
        src.append(f"""
__attribute__((noinline)) long Func{f}(int n) {{
  Widget<{t}, {k}> w;
  for (int i = 0; i < n + {f}; ++i) w.Add(Twice(static_cast<{t}>(i)));
  std::vector<{t}> v(w.items);
  std::sort(v.begin(), v.end(), [](const {t}& a, const {t}& b) {{ return a > b; }});
  std::function<{t}({t}, {t})> op = [n]({t} a, {t} b) {{ return a + b * static_cast<{t}>(n); }};
  {t} r = Reduce(v, op);
  std::ostringstream os;
  os << r << ' ' << w.Sum();
  std::unordered_map<int, std::string> m;
  w.Each([&](const {t}& x) {{ m[static_cast<int>(x) % 13] += os.str(); }});
  Sink(static_cast<long>(m.size()));
  return static_cast<long>(r) + static_cast<long>(os.str().size());
}}""")
    src.append(f"long Entry(int n) {{\n  long s = 0;")
    for f in range(funcs):
        src.append(f"  s += Func{f}(n);")
    src.append("  return s;\n}")
    src.append(f"}}  // namespace unit{u}")
    with open(os.path.join(out, f"unit{u}.cc"), "w") as fh:
        fh.write("\n".join(src) + "\n")

with open(os.path.join(out, "main.cc"), "w") as fh:
    fh.write("#include <cstdio>\n")
    for u in range(units):
        fh.write(f"namespace unit{u} {{ long Entry(int n); }}\n")
    fh.write("int main(int argc, char**) {\n  long s = 0;\n")
    for u in range(units):
        fh.write(f"  s += unit{u}::Entry(argc);\n")
    fh.write("  std::printf(\"%ld\\n\", s);\n  return 0;\n}\n")
