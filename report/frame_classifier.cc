// FrameClassifier: fixed lists of file-name and function-name prefixes (frame_classifier.h).
#include "report/frame_classifier.h"

#include <initializer_list>

namespace hangwatch::report {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool StartsWithAny(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (StartsWith(s, p)) return true;
  }
  return false;
}

// "libc.so.6", "libc-2.31.so", "libc.so": the library `stem` in any of its usual file names.
bool IsLibrary(std::string_view file, std::string_view stem) {
  if (!StartsWith(file, stem)) return false;
  const std::string_view rest = file.substr(stem.size());
  return StartsWith(rest, ".so") || (StartsWith(rest, "-") && rest.find(".so") != rest.npos);
}

enum class Runtime { kNone, kPython, kNode, kWholeModule };

Runtime RuntimeOf(std::string_view file) {
  if (StartsWith(file, "libpython") || file == "python" || StartsWith(file, "python2") ||
      StartsWith(file, "python3")) {
    return Runtime::kPython;
  }
  if (StartsWith(file, "libnode.so") || file == "node" || file == "nodejs") return Runtime::kNode;
  if (IsLibrary(file, "libjvm") || IsLibrary(file, "libcoreclr") || IsLibrary(file, "libclrjit") ||
      IsLibrary(file, "libruby") || file == "ruby" || StartsWith(file, "ruby3")) {
    return Runtime::kWholeModule;
  }
  // The JDK's native libraries, under its Java classes' native methods (a socket read in
  // libnet's or libnio's, a file's in libjava's): the Java method that called one is the culprit.
  for (std::string_view jdk : {"libjava", "libnio", "libnet", "libzip", "libjimage", "libverify",
                               "libextnet", "libmanagement", "libawt", "libawt_xawt"}) {
    if (IsLibrary(file, jdk)) return Runtime::kWholeModule;
  }
  return Runtime::kNone;
}

// CPython's machinery between a Python call and the C function it reaches (3.8 .. 3.13), and
// its start-up frames. C builtins (time_sleep, select_epoll_poll, ...) are not in the list.
bool IsPythonMachinery(std::string_view s) {
  return StartsWithAny(s, {"_PyEval_",
                           "PyEval_",
                           "_PyObject_Call",
                           "PyObject_Call",
                           "_PyObject_Vectorcall",
                           "PyObject_Vectorcall",
                           "_PyObject_MakeTpCall",
                           "_PyObject_FastCall",
                           "_PyFunction_",
                           "PyVectorcall_",
                           "_PyVectorcall_",
                           "cfunction_",
                           "method_vectorcall",
                           "vectorcall_",
                           "slot_tp_call",
                           "PyCFunction_Call",
                           "_PyCFunction_",
                           "PyIter_Send",
                           "gen_send_ex",
                           "_PyGen_",
                           "gen_iternext",
                           "run_mod",
                           "run_eval_code_obj",
                           "pyrun_",
                           "_PyRun_",
                           "PyRun_",
                           "Py_RunMain",
                           "Py_BytesMain",
                           "Py_Main",
                           "pymain_",
                           "call_function",
                           "do_call_core",
                           "function_code_fastcall",
                           "object_vacall",
                           "context_run",
                           "builtin_exec",
                           "exec_code_in_module",
                           "method_vectorcall_"}) ||
         s == "main";
}

bool IsNodeMachinery(std::string_view s) {
  return StartsWithAny(s, {"v8::", "Builtins_", "node::", "uv_", "uv__", "Stub_"}) || s == "main";
}

// "python3.11", "python2.7", "python3.13t" (free-threaded): a versioned directory of the
// interpreter's library.
bool IsPythonVersionDir(std::string_view dir) {
  if (!StartsWith(dir, "python")) return false;
  dir.remove_prefix(6);
  const size_t dot = dir.find('.');
  if (dot == 0 || dot == dir.npos) return false;
  for (size_t i = 0; i < dir.size(); ++i) {
    const char c = dir[i];
    if (i == dot || (c >= '0' && c <= '9') || (i + 1 == dir.size() && c == 't' && i > dot + 1)) {
      continue;
    }
    return false;
  }
  return dot + 1 < dir.size();
}

// The path's directories, outermost first, on '/' or '\\' (a Windows co_filename).
template <typename F>
bool AnyDirectory(std::string_view path, F&& pred) {
  size_t begin = 0;
  while (true) {
    const size_t sep = path.find_first_of("/\\", begin);
    if (sep == path.npos) return false;  // the last component is the file
    if (pred(path.substr(begin, sep - begin), path.substr(0, begin))) return true;
    begin = sep + 1;
  }
}

bool IsThirdPartyPythonFile(std::string_view file) {
  return AnyDirectory(file, [](std::string_view dir, std::string_view) {
    return dir == "site-packages" || dir == "dist-packages";
  });
}

bool IsStandardPythonFile(std::string_view file) {
  if (StartsWith(file, "<frozen ")) return true;
  return AnyDirectory(file, [](std::string_view dir, std::string_view parent) {
    if (IsPythonVersionDir(dir)) {
      // lib/python3.11/..., lib64/python3.11/...: the interpreter's own library directory.
      const std::string_view p = parent.substr(0, parent.empty() ? 0 : parent.size() - 1);
      const std::string_view up = ModuleFileName(p);
      return up == "lib" || up == "lib64";
    }
    // python311.zip: an embedded distribution's standard library.
    return StartsWith(dir, "python") && dir.size() > 4 && dir.substr(dir.size() - 4) == ".zip";
  });
}

bool IsConsoleScriptModule(std::string_view file, std::string_view qualname) {
  if (qualname != "<module>") return false;
  const size_t slash = file.rfind('/');
  if (slash == file.npos) return false;
  return ModuleFileName(file.substr(0, slash)) == "bin";
}

}  // namespace

FrameKind ClassifyPythonFrame(std::string_view file, std::string_view qualname) {
  // site-packages inside lib/python3.11/ is a third party's, not the standard library.
  if (IsThirdPartyPythonFile(file)) return FrameKind::kLibrary;
  if (IsStandardPythonFile(file)) return FrameKind::kRuntime;
  if (IsConsoleScriptModule(file, qualname)) return FrameKind::kLibrary;
  return FrameKind::kApp;
}

FrameKind ClassifyScriptFrame(FrameLanguage language, std::string_view file) {
  if (language == FrameLanguage::kJs) {
    // node's own JavaScript ("node:internal/timers", "node:events"): its runtime.
    if (StartsWith(file, "node:") || StartsWith(file, "internal/")) return FrameKind::kRuntime;
    const bool package = AnyDirectory(
        file, [](std::string_view dir, std::string_view) { return dir == "node_modules"; });
    return package ? FrameKind::kLibrary : FrameKind::kApp;
  }
  // Ruby: the interpreter's own code ("<internal:kernel>") and standard library
  // (/usr/lib/ruby/3.1.0/...), then gems (Debian's /usr/lib/ruby/vendor_ruby and
  // /usr/share/rubygems-integration, gem install's .../gems/NAME-VERSION/).
  if (StartsWith(file, "<internal:")) return FrameKind::kRuntime;
  bool gem = false;
  bool standard = false;
  AnyDirectory(file, [&](std::string_view dir, std::string_view parent) {
    if (dir == "gems" || dir == "vendor_ruby" || dir == "rubygems-integration") gem = true;
    // lib/ruby/3.1.0/: a version directory right under a lib/ruby directory.
    const std::string_view lib_ruby = "lib/ruby/";
    if (!dir.empty() && dir[0] >= '0' && dir[0] <= '9' && parent.size() >= lib_ruby.size() &&
        parent.substr(parent.size() - lib_ruby.size()) == lib_ruby) {
      standard = true;
    }
    return false;
  });
  if (gem) return FrameKind::kLibrary;
  return standard ? FrameKind::kRuntime : FrameKind::kApp;
}

FrameKind ClassifyJavaFrame(std::string_view method) {
  return StartsWithAny(method, {"java.", "javax.", "jdk.", "sun.", "com.sun."})
             ? FrameKind::kRuntime
             : FrameKind::kApp;
}

FrameKind ClassifyFrame(const Frame& f) {
  if (f.language == FrameLanguage::kPython) return ClassifyPythonFrame(f.file, f.symbol);
  if (f.language == FrameLanguage::kJava) return ClassifyJavaFrame(f.symbol);
  if (IsInterpreted(f.language)) return ClassifyScriptFrame(f.language, f.file);
  return ClassifyFrame(f.module, f.symbol);
}

bool IsSystemModule(std::string_view module) {
  const std::string_view f = ModuleFileName(module);
  if (f.empty()) return false;
  for (std::string_view lib :
       {"libc", "libm", "libpthread", "libdl", "librt", "libresolv", "libstdc++", "libgcc_s",
        "libc++", "libc++abi", "libatomic", "libuv", "libhangwatch", "libhangwatch_preload",
        "libhangwatch_preload_agent",
        // The sanitizers' runtimes interpose libc (TSan's __interceptor_nanosleep): in a
        // sanitized build the culprit is the caller, as without them.
        "libtsan", "libasan", "libubsan", "liblsan", "libhwasan"}) {
    if (IsLibrary(f, lib)) return true;
  }
  return StartsWith(f, "ld-linux") || StartsWith(f, "ld64.so") || IsLibrary(f, "ld") ||
         StartsWith(f, "ld-musl") || StartsWith(f, "libc.musl") || StartsWith(f, "linux-vdso") ||
         StartsWith(f, "linux-gate") || f == "[vdso]";
}

bool IsRuntimeModule(std::string_view module) {
  return RuntimeOf(ModuleFileName(module)) != Runtime::kNone;
}

FrameKind ClassifyFrame(std::string_view module, std::string_view symbol) {
  if (IsSystemModule(module)) return FrameKind::kSystem;
  if (symbol == "_start" || symbol == "__libc_start_main" || symbol == "__libc_start_call_main") {
    return FrameKind::kRuntime;
  }
  switch (RuntimeOf(ModuleFileName(module))) {
    case Runtime::kPython:
      return IsPythonMachinery(symbol) ? FrameKind::kRuntime : FrameKind::kApp;
    case Runtime::kNode:
      return IsNodeMachinery(symbol) ? FrameKind::kRuntime : FrameKind::kApp;
    case Runtime::kWholeModule:
      return FrameKind::kRuntime;
    case Runtime::kNone:
      break;
  }
  return FrameKind::kApp;
}

}  // namespace hangwatch::report
