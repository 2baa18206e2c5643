// FrameClassifier: tells the frames of the system's own libraries and of language runtimes from
// the application's, so that a hang is named after the application code that caused it (its
// culprit) and identified by the application frames it went through (its signature), not after
// clock_nanosleep or the interpreter's eval loop.
//
// The rule, by module file name and function name only (no file access):
//   kSystem   the C and C++ runtimes and the loader: libc, libm, libpthread, libdl, librt,
//             libresolv, ld-linux / ld.so, libstdc++, libgcc_s, libc++, libc++abi, libatomic,
//             musl, the vDSO, libuv (node's and other event loops' own I/O layer), the
//             sanitizers' runtimes (libtsan, libasan, libubsan, liblsan, libhwasan: their
//             interceptors wrap libc's calls), and hangwatch's own libraries (the preload shim
//             interposes poll and friends);
//   kRuntime  a language runtime's machinery: in an interpreter's module (libpython*, python3*,
//             libnode*, node, libjvm, libcoreclr, libruby), the functions that run code rather than
//             being it: CPython's eval loop, call dispatch and start-up (_PyEval_*,
//             PyObject_Call*, *Vectorcall*, cfunction_*, Py_RunMain, ...); V8's and node's
//             (v8::*, Builtins_*, node::*, uv_*); every frame of libjvm and the JDK's native
//             libraries (libjava, libnio, libnet, libzip, libawt, ...), libcoreclr and libruby
//             (the Ruby VM; a Ruby program's own C extensions are other modules). Also
//             _start and __libc_start_main wherever they are;
//   kApp      everything else, including code outside any module (JIT) and frames without a
//             name in an interpreter's module (a C builtin such as CPython's time.sleep).
//
// Python frames (Frame::language kPython), by co_filename (and, for one case, the function):
//   kRuntime  the standard library and the interpreter's own Python code: a file in a
//             `lib/pythonX.Y/` or `lib64/pythonX.Y/` directory of any prefix (/usr/lib/python3.11,
//             /usr/local/lib/python3.12, pyenv's ~/.pyenv/versions/3.12.1/lib/python3.12, the base
//             interpreter of a venv), outside its site-packages; an embedded distribution's
//             `pythonXY.zip`; a frozen module (`<frozen importlib._bootstrap>`, `<frozen runpy>`);
//   kLibrary  third-party packages: a file under a `site-packages/` or `dist-packages/` directory
//             (a venv's, Debian's /usr/lib/python3/dist-packages: gunicorn's worker loop, a web
//             framework's dispatch), and the `<module>` of a console script in a `bin/` directory
//             (/usr/bin/gunicorn, venv/bin/celery: the package's entry point). A hang's culprit is
//             the innermost application frame; a library frame only when the stacks have none;
//   kApp      everything else: the program's own files, code it compiled (`<string>`, `<stdin>`).
#ifndef HANGWATCH_REPORT_FRAME_CLASSIFIER_H_
#define HANGWATCH_REPORT_FRAME_CLASSIFIER_H_

#include <string_view>

#include "hangwatch/hang_record.h"
#include "report/names.h"  // ModuleFileName: classification is by file name

namespace hangwatch::report {

// kLibrary: only Python frames (above); readers that know three kinds show it as kApp.
enum class FrameKind : unsigned char { kApp, kSystem, kRuntime, kLibrary };

// `module`: the module's path or file name ("" when unknown); `symbol`: the function's name,
// demangled or not ("" when unknown).
FrameKind ClassifyFrame(std::string_view module, std::string_view symbol);

// A Python frame, by its file (co_filename) and qualified name (the rules above).
FrameKind ClassifyPythonFrame(std::string_view file, std::string_view qualname);

// A JavaScript or Ruby frame, by its file:
//   kRuntime  node's own modules ("node:internal/...", "node:events"); Ruby's "<internal:...>"
//             code and its standard library (a lib/ruby/X.Y.Z/ directory);
//   kLibrary  JavaScript under a node_modules/ directory; Ruby gems (a gems/, vendor_ruby/ or
//             rubygems-integration/ directory);
//   kApp      everything else.
FrameKind ClassifyScriptFrame(FrameLanguage language, std::string_view file);

// A Java frame, by its method's package: kRuntime for the JDK's own (java., javax., jdk., sun.,
// com.sun.), kApp for everything else (a dump does not say which jar a class came from).
FrameKind ClassifyJavaFrame(std::string_view method);

// A frame on its own: ClassifyPythonFrame for a Python frame, ClassifyScriptFrame for a
// JavaScript or Ruby one, ClassifyJavaFrame for a Java one, else ClassifyFrame(module, symbol).
// (In a stack, report/stack_identity.h also looks at the frames around it.)
FrameKind ClassifyFrame(const Frame& f);

// kSystem by module alone (the list above).
bool IsSystemModule(std::string_view module);

// The module hosts an interpreter or a managed runtime (python3.11, libpython3.12.so.1.0, node,
// libnode.so.108, libjvm.so, libcoreclr.so).
bool IsRuntimeModule(std::string_view module);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_FRAME_CLASSIFIER_H_
