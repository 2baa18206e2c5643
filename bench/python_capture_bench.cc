// The capture's pause with and without the Python frames, in one run.
//
// An embedded CPython (libpython3.X, python3-embed) runs, on a thread of its own, a function
// 50 Python frames deep that spins; the benchmark thread captures that thread with the
// agent's SignalSampler over and over, with the Python capture hook (python/capture_hook.h)
// installed (python_on) or not (python_off). Counter pause_p50_ns is the median of the
// handler's own measure of the pause (CaptureBuffer::pause_ns: registers, frame-pointer walk,
// stack copy, and with the hook the Python chain); rtt_p50_ns the median round trip seen by the
// sampling thread; py_frames the frames the hook recorded at the last capture.
#include <Python.h>
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "python/capture_hook.h"
#include "python/frame_chain.h"
#include "python/interpreter_locator.h"
#include "python/process_memory_reader.h"
#include "python/python_layout.h"
#include "symbols/process_modules.h"
#include "unwind/capture_hook.h"
#include "unwind/signal_sampler.h"

namespace hangwatch {
namespace {

constexpr int kDepth = 50;
constexpr int kCaptures = 2000;

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The interpreter and its spinning thread, 50 Python frames deep; set up once.
struct PythonTarget {
  unwind::ThreadInfo info;
  std::atomic<bool> ready{false};
  std::unique_ptr<python::PythonCaptureHook> hook;
  std::unique_ptr<unwind::SignalSampler> sampler;
  std::string error;

  PythonTarget() {
    Py_InitializeEx(0);
    PyThreadState* main_state = PyEval_SaveThread();  // the GIL is for the spinning thread
    (void)main_state;
    std::thread([this] {
      unwind::RegisterCurrentThread(&info);
      PyGILState_STATE g = PyGILState_Ensure();
      const std::string code =
          "import sys\n"
          "def deep(n):\n"
          "    if n <= 1:\n"
          "        x = 0\n"
          "        while True:\n"
          "            x += 1\n"
          "    return deep(n - 1)\n"
          "ready()\n"
          "deep(" +
          std::to_string(kDepth) + ")\n";
      // ready(): a builtin that tells the benchmark the thread is about to recurse.
      PyObject* main = PyImport_AddModule("__main__");
      static PyMethodDef def = {"ready", &PythonTarget::Ready, METH_NOARGS, nullptr};
      PyObject* fn = PyCFunction_New(&def, PyLong_FromVoidPtr(this));
      PyObject_SetAttrString(main, "ready", fn);
      PyRun_SimpleString(code.c_str());
      PyGILState_Release(g);
    }).detach();
    while (!ready.load()) usleep(1000);
    usleep(20000);  // into the recursion's innermost loop (the chain is checked below)

    const python::ProcessMemoryReader self(getpid());
    auto modules = symbols::ReadProcessModules(getpid());
    if (!modules.ok()) {
      error = "modules: " + std::string(modules.status().message());
      return;
    }
    auto addresses = python::LocateInterpreter(*modules, self);
    if (!addresses.ok()) {
      error = "interpreter: " + std::string(addresses.status().message());
      return;
    }
    const python::PythonLayout* layout = python::TableLayout(addresses->minor);
    if (layout == nullptr) {
      error = "no layout for this version";
      return;
    }
    const python::FrameChainReader chain(self, *layout, *addresses);
    const uint64_t tstate = chain.FindThreadState(info.tid, 0);
    if (tstate == 0) {
      error = "no thread state for the spinning thread";
      return;
    }
    hook = std::make_unique<python::PythonCaptureHook>(*layout, 1024, 64 * 1024);
    hook->Watch(info.tid, tstate);
    unwind::SignalSamplerOptions so;
    so.max_extra_words = python::CaptureWords(1024);
    sampler = unwind::SignalSampler::Create(so, &error);
  }

  static PyObject* Ready(PyObject* self, PyObject*) {
    static_cast<PythonTarget*>(PyLong_AsVoidPtr(self))->ready.store(true);
    Py_RETURN_NONE;
  }
};

PythonTarget& Target() {
  static PythonTarget* t = new PythonTarget();
  return *t;
}

void BM_Capture50PythonFramesDeep(benchmark::State& state) {
  PythonTarget& t = Target();
  if (!t.error.empty() || t.sampler == nullptr) {
    state.SkipWithError(t.error.c_str());
    return;
  }
  const bool python_on = state.range(0) != 0;
  unwind::SetCaptureHook(python_on ? t.hook.get() : nullptr);
  unwind::CaptureBuffer buf(256, 64 * 1024, python::CaptureWords(1024));
  std::vector<uint64_t> pauses, rtts;
  pauses.reserve(kCaptures);
  rtts.reserve(kCaptures);
  size_t frames = 0;
  python::ChainEnd end = python::ChainEnd::kComplete;
  for (auto _ : state) {
    const uint64_t start = NowNs();
    const unwind::CaptureStatus status = t.sampler->Capture(t.info, &buf);
    const uint64_t rtt = NowNs() - start;
    if (status != unwind::CaptureStatus::kOk) {
      state.SkipWithError(unwind::CaptureStatusName(status));
      break;
    }
    if (pauses.size() < kCaptures) {
      pauses.push_back(buf.pause_ns);
      rtts.push_back(rtt);
    }
    if (python_on) {
      python::PythonFrame decoded[1024];
      frames = python::DecodeCaptureWords(buf.extra(), buf.num_extra, decoded, 1024, &end);
    }
  }
  unwind::SetCaptureHook(nullptr);
  state.counters["pause_p50_ns"] = static_cast<double>(Median(pauses));
  state.counters["rtt_p50_ns"] = static_cast<double>(Median(rtts));
  state.counters["py_frames"] = static_cast<double>(frames);
  if (python_on) {
    state.counters["from_copy"] = t.hook->last_used_copy() ? 1 : 0;
    if (frames < kDepth) state.SkipWithError("fewer Python frames than the recursion's depth");
  }
}
BENCHMARK(BM_Capture50PythonFramesDeep)
    ->ArgName("python_on")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(kCaptures)
    ->UseRealTime();

}  // namespace
}  // namespace hangwatch

BENCHMARK_MAIN();
