#include "integrations/preload/glib_sources.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "glib_source_wrap.h"

namespace hangwatch::preload {
namespace {

std::atomic<bool> g_wrapped{false};

}  // namespace

bool WrapGLibSourcesIfLoaded() {
  if (g_wrapped.load(std::memory_order_acquire)) return true;
  // RTLD_NOLOAD: a handle only when GLib is loaded already. Kept open: the wrappers call into
  // it for the life of the process.
  void* glib = dlopen("libglib-2.0.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (glib == nullptr) return false;
  glib_sources::SourceTables tables{};
  for (int i = 0; i < glib_sources::kSourceTypeCount; ++i) {
    tables.funcs[i] = static_cast<glib_sources::SourceFuncsLayout*>(
        dlsym(glib, glib_sources::kSourceTypes[i].symbol));
  }
  tables.source_name =
      reinterpret_cast<glib_sources::SourceNameFunction>(dlsym(glib, "g_source_get_name"));
  tables.ready_time = reinterpret_cast<glib_sources::SourceReadyTimeFunction>(
      dlsym(glib, "g_source_get_ready_time"));
  // A GLib without it (none since 2.26) is left alone; looked at no more either way.
  if (tables.source_name != nullptr) glib_sources::WrapSourceDispatch(tables);
  g_wrapped.store(true, std::memory_order_release);
  return true;
}

bool GLibIsMapped() {
  static constexpr char kName[] = "/libglib-2.0.so";
  constexpr size_t kKeep = sizeof kName - 1;  // a name cut by a read is found in the next one
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16384 + 1];
  size_t kept = 0;
  bool found = false;
  for (ssize_t n; !found && (n = read(fd, buf + kept, sizeof buf - 1 - kept)) > 0;) {
    const size_t len = kept + static_cast<size_t>(n);
    buf[len] = '\0';
    found = strstr(buf, kName) != nullptr;
    kept = len < kKeep ? len : kKeep;
    memmove(buf, buf + len - kept, kept);
  }
  close(fd);
  return found;
}

}  // namespace hangwatch::preload
