#include "python/python_process.h"

#include "absl/status/status.h"
#include "python/debug_offsets.h"

namespace hangwatch::python {

PythonProcess::PythonProcess(pid_t pid, const InterpreterAddresses& addresses,
                             const PythonLayout& layout)
    : memory_(pid),
      addresses_(addresses),
      layout_(layout),
      chain_(memory_, layout_, addresses_),
      resolver_(memory_, layout_, addresses_) {}

std::string PythonProcess::Describe() const {
  std::string v = "python3." + std::to_string(addresses_.minor);
  if (addresses_.micro >= 0) v += "." + std::to_string(addresses_.micro);
  return v + " (" + addresses_.module_path + ")";
}

absl::StatusOr<std::unique_ptr<PythonProcess>> PythonProcess::Open(
    pid_t pid, const symbols::ProcessModules& modules) {
  const ProcessMemoryReader memory(pid);
  absl::StatusOr<InterpreterAddresses> addresses = LocateInterpreter(modules, memory);
  if (!addresses.ok()) return addresses.status();
  PythonLayout layout;
  const std::string no_layout = LayoutForInterpreter(memory, *addresses, &layout);
  std::unique_ptr<PythonProcess> p(new PythonProcess(pid, *addresses, layout));
  if (!no_layout.empty()) return absl::FailedPreconditionError(p->Describe() + ": " + no_layout);
  if (const std::string failed = p->chain_.CheckLayout(); !failed.empty()) {
    return absl::FailedPreconditionError(p->Describe() + ": the frame layout check failed (" +
                                         failed + ")");
  }
  return p;
}

}  // namespace hangwatch::python
