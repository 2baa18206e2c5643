// RubyProcess: everything needed to read the Ruby frames of another process, set up once
// before its threads are stopped: the VM located, its layout chosen (ruby_api_version) and
// checked against the live VM, a frame reader and an iseq resolver over its memory.
#ifndef HANGWATCH_RUBY_RUBY_PROCESS_H_
#define HANGWATCH_RUBY_RUBY_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "python/process_memory_reader.h"
#include "ruby/control_frames.h"
#include "ruby/iseq_resolver.h"
#include "ruby/ruby_layout.h"
#include "ruby/vm_locator.h"
#include "symbols/process_modules.h"

namespace hangwatch::ruby {

// "" and *layout set when `addresses`' version has a layout, else why not.
std::string LayoutForVm(const VmAddresses& addresses, RubyLayout* layout);

class RubyProcess {
 public:
  // NotFound: `pid` runs no Ruby VM. FailedPrecondition: it does, but its frames cannot be
  // read (a version without a layout, a failed check); the message is one line saying which.
  static absl::StatusOr<std::unique_ptr<RubyProcess>> Open(pid_t pid,
                                                           const symbols::ProcessModules& modules);

  const VmAddresses& vm() const { return addresses_; }
  const VmReader& reader() const { return reader_; }
  IseqResolver& resolver() { return resolver_; }
  // "ruby 3.1.2 (/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2)"
  std::string Describe() const;

 private:
  RubyProcess(pid_t pid, const VmAddresses& addresses, const RubyLayout& layout);

  python::ProcessMemoryReader memory_;
  VmAddresses addresses_;
  RubyLayout layout_;
  VmReader reader_;
  IseqResolver resolver_;
};

}  // namespace hangwatch::ruby

#endif  // HANGWATCH_RUBY_RUBY_PROCESS_H_
