// Finding CPython in another process: the module that holds the interpreter (the executable
// python3.X or libpython3.X.so), the addresses of its exported `_PyRuntime` (the root of every
// interpreter and thread state), `PyCode_Type` (the type every code object points to) and the
// eval loop `_PyEval_EvalFrameDefault` (whose native frames the Python frames replace), and
// the minor version: `Py_Version` where exported (3.11+), else the module's name; and from
// libc, the size of glibc's thread descriptor.
//
// Only dynamic symbols are used: Debian strips python3.11 but keeps them.
#ifndef HANGWATCH_PYTHON_INTERPRETER_LOCATOR_H_
#define HANGWATCH_PYTHON_INTERPRETER_LOCATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "python/memory_reader.h"
#include "symbols/process_modules.h"

namespace hangwatch::python {

struct InterpreterAddresses {
  std::string module_path;  // the module that exports _PyRuntime
  int major = 3;
  int minor = 0;
  int micro = -1;          // -1 when only the module's name gave the version
  uint64_t runtime = 0;    // &_PyRuntime
  uint64_t code_type = 0;  // &PyCode_Type
  uint64_t eval_lo = 0;    // _PyEval_EvalFrameDefault, [eval_lo, eval_hi); 0 when unknown
  uint64_t eval_hi = 0;
  // The target glibc's sizeof(struct pthread) (its `_thread_db_sizeof_pthread`; 0: unknown):
  // on aarch64 a thread's pthread_t is its thread pointer minus this (unwind/thread_pointer.h),
  // which 3.10's thread states are matched by.
  uint64_t pthread_size = 0;
};

// The minor version in a module's file name: "python3.11", "libpython3.12.so.1.0",
// "libpython3.10d.so" give 11, 12, 10; -1 when the name is not CPython's.
int MinorFromModuleName(const std::string& path);

// Finds the interpreter among `modules` (reading Py_Version through `memory`). NotFound when
// the process has no CPython module; other errors when its symbols cannot be read.
absl::StatusOr<InterpreterAddresses> LocateInterpreter(const symbols::ProcessModules& modules,
                                                       const MemoryReader& memory);

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_INTERPRETER_LOCATOR_H_
