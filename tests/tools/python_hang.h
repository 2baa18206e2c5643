// A hang of a Python program as the agent records it: Debian's python3.11 running a
// request handler asleep in time.sleep, its Python frames in place of the eval loop's native
// frames, between native frames of /usr/bin/python3.11 and libc. Built in the test, written with
// report::Encode: no checked-in file.
#ifndef HANGWATCH_TESTS_TOOLS_PYTHON_HANG_H_
#define HANGWATCH_TESTS_TOOLS_PYTHON_HANG_H_

#include <cstdint>
#include <string>

#include "hangwatch/hang_record.h"
#include "report/stack_identity.h"

namespace hangwatch::testing {

inline constexpr char kPythonExe[] = "/usr/bin/python3.11";
inline constexpr char kPythonLibc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
inline constexpr char kPythonApp[] = "/srv/app.py";

// `build`: the interpreter's build-id (libc's is fixed).
inline Frame PythonTestNative(const char* module, uint64_t offset, const char* symbol,
                              uint64_t function_start = 0, const char* build = "571d98e0aa") {
  Frame f;
  f.module = module;
  f.build_id = module == std::string(kPythonExe) ? build : "c0ffee";
  f.offset = offset;
  f.addr = (module == std::string(kPythonExe) ? 0x555555554000 : 0x7ffff7d80000) + offset;
  f.symbol = symbol;
  f.function_start = function_start;
  f.method = FrameMethod::kFramePointer;
  return f;
}

inline Frame PythonTestFrame(const char* qualname, const char* file, int line, uint64_t code) {
  Frame f;
  f.language = FrameLanguage::kPython;
  f.addr = code;
  f.offset = static_cast<uint64_t>(line) * 3;  // an instruction index
  f.symbol = qualname;
  f.file = file;
  f.line = line;
  return f;
}

// `code_shift`: added to every code object's address (another run of the same program puts
// them elsewhere); `build` and `moved`: the interpreter's build-id and how far its functions
// moved in that build (another python3.11 package). Two stacks: 6 samples asleep in time.sleep at
// app.py:42, 2 in the standard library's JSON encoder called from app.py:40; both under
// Handler.handle_request, the culprit.
inline HangRecord PythonHang(uint64_t code_shift = 0, uint64_t hang_id = 0,
                             const char* build = "571d98e0aa", uint64_t moved = 0) {
  const auto interp = [&](uint64_t offset, const char* symbol, uint64_t start) {
    return PythonTestNative(kPythonExe, offset + moved, symbol, start + moved, build);
  };
  HangRecord h;
  h.pid = 4242;
  h.tid = 4242;
  h.process = kPythonExe;
  h.process_name = "python3.11";
  h.host = "web-1";
  h.hang_id = hang_id;
  h.start_unix_ms = 1763700000000 + static_cast<int64_t>(hang_id) * 10000;
  h.duration_ms = 800;
  h.cpu_ms = 200;
  h.cpu_percent = 25;
  h.hang_class = HangClass::kBlocked;
  h.threshold_ms = 250;
  h.sample_interval_ms = 100;
  h.samples = 8;
  const uint64_t code = 0x7f3a10000000 + code_shift;
  const Frame handle = PythonTestFrame("Handler.handle_request", kPythonApp, 42, code + 0x100);
  Frame handle_json = handle;
  handle_json.line = 40;
  handle_json.offset = 120;
  const Frame serve = PythonTestFrame("Server.serve", kPythonApp, 80, code + 0x200);
  const Frame forever = PythonTestFrame("BaseServer.serve_forever",
                                        "/usr/lib/python3.11/socketserver.py", 233, code + 0x300);
  const Frame module = PythonTestFrame("<module>", kPythonApp, 99, code + 0x400);
  const Frame start[] = {interp(0x62f0a1, "", 0x62f000), interp(0x62d010, "Py_BytesMain", 0x62d000),
                         PythonTestNative(kPythonLibc, 0x2724a, "__libc_start_call_main")};
  Stack sleep;
  sleep.id = 0;
  sleep.count = 6;
  sleep.first_seen_ms = 250;
  sleep.last_seen_ms = 950;
  sleep.frames = {PythonTestNative(kPythonLibc, 0xea7fa, "clock_nanosleep", 0xea7a0),
                  interp(0x5d64b4, "", 0x5d6400),
                  interp(0x52b9e0, "", 0x52b900),
                  handle,
                  serve,
                  forever,
                  module};
  sleep.frames.insert(sleep.frames.end(), std::begin(start), std::end(start));
  sleep.frames[0].method = FrameMethod::kPc;
  Stack json;
  json.id = 1;
  json.count = 2;
  json.first_seen_ms = 550;
  json.last_seen_ms = 650;
  json.cpu_us = 200000;
  json.frames = {
      interp(0x4e1000, "", 0x4e0f00),
      PythonTestFrame("JSONEncoder.iterencode", "/usr/lib/python3.11/json/encoder.py", 258,
                      code + 0x500),
      PythonTestFrame("dumps", "/usr/lib/python3.11/json/__init__.py", 231, code + 0x600),
      handle_json,
      serve,
      forever,
      module};
  json.frames.insert(json.frames.end(), std::begin(start), std::end(start));
  json.frames[0].method = FrameMethod::kPc;
  h.stacks = {sleep, json};
  h.dominant_stack = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    TimelineEntry e;
    e.t_ms = 250 + 100 * i;
    e.stack = i == 3 || i == 4 ? 1 : 0;
    e.state = e.stack == 1 ? 'R' : 'S';
    e.method = e.stack == 1 ? SampleMethod::kSignal : SampleMethod::kProc;
    h.timeline.push_back(e);
  }
  h.modules = {{kPythonExe, 0x555555554000, build}, {kPythonLibc, 0x7ffff7d80000, "c0ffee"}};
  // What the agent computes when it materializes the hang.
  h.culprit = report::HangCulprit(h.stacks);
  h.signature = report::HangSignature(h.stacks, h.culprit);
  h.fingerprint = report::Fingerprint(h.stacks[0], h.stacks[0].frames[0].function_start);
  return h;
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_TOOLS_PYTHON_HANG_H_
