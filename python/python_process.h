// PythonProcess: everything needed to read the Python frames of another process, set up once
// before its threads are stopped: the interpreter located, its layout chosen and checked
// against the live interpreter, a frame-chain reader and a code resolver over its memory.
#ifndef HANGWATCH_PYTHON_PYTHON_PROCESS_H_
#define HANGWATCH_PYTHON_PYTHON_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "python/code_resolver.h"
#include "python/frame_chain.h"
#include "python/interpreter_locator.h"
#include "python/process_memory_reader.h"
#include "python/python_layout.h"
#include "symbols/process_modules.h"

namespace hangwatch::python {

class PythonProcess {
 public:
  // NotFound: `pid` runs no CPython. FailedPrecondition: it does, but its frames cannot be
  // read (a version without a layout, a layout that fails the check); the message is one line
  // saying which ("python3.11 at /usr/bin/python3.11: ...").
  static absl::StatusOr<std::unique_ptr<PythonProcess>> Open(
      pid_t pid, const symbols::ProcessModules& modules);

  const InterpreterAddresses& interpreter() const { return addresses_; }
  const PythonLayout& layout() const { return layout_; }
  const FrameChainReader& chain() const { return chain_; }
  CodeResolver& resolver() { return resolver_; }
  // "python3.11.2 (/usr/bin/python3.11)"
  std::string Describe() const;

 private:
  PythonProcess(pid_t pid, const InterpreterAddresses& addresses, const PythonLayout& layout);

  ProcessMemoryReader memory_;
  InterpreterAddresses addresses_;
  PythonLayout layout_;
  FrameChainReader chain_;
  CodeResolver resolver_;
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_PYTHON_PROCESS_H_
