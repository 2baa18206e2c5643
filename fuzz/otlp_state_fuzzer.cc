// libFuzzer target: ExportState (tools/export/otlp_state.h), the state file `hangwatch export
// --state` reads back on every run (a file in a directory a CI job or another user may write). The
// input is the file. What loads must save, and what it saved must load again (less the entries
// whose file is gone).
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "tools/export/otlp_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hangwatch::tools::ExportState;
  const std::string path = hangwatch::fuzz::ScratchDir() + "/state.json";
  hangwatch::fuzz::WriteFile(path, std::string_view(reinterpret_cast<const char*>(data), size));
  ExportState state;
  if (!state.Load(path).ok()) return 0;
  // Each entry is looked up as a file with that identity would be.
  for (const auto& f : state.files()) {
    struct stat st {};
    st.st_dev = static_cast<dev_t>(f.dev);
    st.st_ino = static_cast<ino_t>(f.inode);
    st.st_size = static_cast<off_t>(f.size & 0x7fffffffffff);
    (void)state.ResumeOffset(f.path, -1, st);
  }
  if (!state.Save().ok()) __builtin_trap();
  ExportState again;
  if (!again.Load(path).ok() || again.files().size() > state.files().size()) __builtin_trap();
  return 0;
}
