// Finding the Ruby VM (CRuby, "MRI") in a process: the module that holds it (libruby-X.Y.so,
// or a ruby executable linked statically), and from its dynamic symbols the address of
// `ruby_current_vm_ptr` (the VM, rb_vm_t *), the version it declares (`ruby_api_version`,
// three ints: {3, 1, 0} for every 3.1.x; `ruby_version`, "3.1.2") and the range of
// `rb_vm_exec`, the native function of one VM run (vm_exec), whose frames the Ruby frames
// replace in a native stack.
//
// Only dynamic symbols are used: Debian strips libruby-3.1.so but keeps them.
#ifndef HANGWATCH_RUBY_VM_LOCATOR_H_
#define HANGWATCH_RUBY_VM_LOCATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "python/memory_reader.h"
#include "symbols/process_modules.h"

namespace hangwatch::ruby {

struct VmAddresses {
  std::string module_path;  // the module exporting ruby_current_vm_ptr
  int api_major = 0;        // ruby_api_version
  int api_minor = 0;
  int api_teeny = 0;
  std::string version;   // ruby_version ("3.1.2"); "" when unreadable
  uint64_t vm_ptr = 0;   // &ruby_current_vm_ptr
  uint64_t exec_lo = 0;  // rb_vm_exec, [exec_lo, exec_hi); 0 when unknown
  uint64_t exec_hi = 0;
};

// Finds the VM among `modules`, reading the version through `memory`. NotFound when the
// process has no Ruby VM; other errors when its symbols or version cannot be read.
absl::StatusOr<VmAddresses> LocateVm(const symbols::ProcessModules& modules,
                                     const python::MemoryReader& memory);

}  // namespace hangwatch::ruby

#endif  // HANGWATCH_RUBY_VM_LOCATOR_H_
