#include "ruby/ruby_process.h"

#include "absl/status/status.h"

namespace hangwatch::ruby {

std::string LayoutForVm(const VmAddresses& a, RubyLayout* layout) {
  std::string why = LayoutForVersion(a.api_major, a.api_minor, layout);
  // ruby_api_version is {3, 1, 0} for every 3.1.x; a teeny other than 0 is no release of ours.
  if (why.empty() && a.api_teeny != 0) {
    why = "ruby_api_version " + std::to_string(a.api_major) + "." + std::to_string(a.api_minor) +
          "." + std::to_string(a.api_teeny) + " is not a release's";
  }
  return why;
}

absl::StatusOr<std::unique_ptr<RubyProcess>> RubyProcess::Open(
    pid_t pid, const symbols::ProcessModules& modules) {
  const python::ProcessMemoryReader memory(pid);
  absl::StatusOr<VmAddresses> a = LocateVm(modules, memory);
  if (!a.ok()) return a.status();
  RubyLayout layout;
  if (std::string why = LayoutForVm(*a, &layout); !why.empty()) {
    return absl::FailedPreconditionError(a->module_path + ": " + why);
  }
  std::unique_ptr<RubyProcess> p(new RubyProcess(pid, *a, layout));
  bool not_yet = false;
  if (std::string failed = p->reader_.CheckLayout(&not_yet); !failed.empty()) {
    return absl::FailedPreconditionError("ruby " + a->version + " at " + a->module_path +
                                         ": the layout check failed (" + failed + ")");
  }
  return p;
}

RubyProcess::RubyProcess(pid_t pid, const VmAddresses& addresses, const RubyLayout& layout)
    : memory_(pid),
      addresses_(addresses),
      layout_(layout),
      reader_(memory_, layout_, addresses_),
      resolver_(memory_, layout_) {}

std::string RubyProcess::Describe() const {
  return "ruby " +
         (addresses_.version.empty()
              ? std::to_string(addresses_.api_major) + "." + std::to_string(addresses_.api_minor)
              : addresses_.version) +
         " (" + addresses_.module_path + ")";
}

}  // namespace hangwatch::ruby
