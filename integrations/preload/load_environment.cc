#include "integrations/preload/load_environment.h"

#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

extern "C" char** environ;

namespace hangwatch::preload {
namespace {

// Room for every setting `hangwatch run` passes (paths included) many times over; a variable
// that does not fit is left out (it is then read only from the environment, as before).
constexpr size_t kBytes = 16384;
constexpr int kMaxVariables = 64;
char g_bytes[kBytes];
const char* g_variables[kMaxVariables];  // "NAME=value", in g_bytes
int g_count = 0;

bool Copied(const char* entry) {
  return strncmp(entry, "HANGWATCH_", 10) == 0 || strncmp(entry, "JOURNAL_STREAM=", 15) == 0;
}

__attribute__((constructor)) void CopyEnvironmentAtLoad() {
  if (getauxval(AT_SECURE) != 0 || environ == nullptr) return;
  size_t used = 0;
  for (char** e = environ; *e != nullptr && g_count < kMaxVariables; ++e) {
    if (!Copied(*e) || strchr(*e, '=') == nullptr) continue;
    const size_t n = strlen(*e) + 1;
    if (n > kBytes - used) continue;
    memcpy(g_bytes + used, *e, n);
    g_variables[g_count++] = g_bytes + used;
    used += n;
  }
}

}  // namespace

const char* ShimSetting(const char* name) {
  if (const char* now = secure_getenv(name)) return now;
  const size_t n = strlen(name);
  for (int i = 0; i < g_count; ++i) {
    if (strncmp(g_variables[i], name, n) == 0 && g_variables[i][n] == '=') {
      return g_variables[i] + n + 1;
    }
  }
  return nullptr;
}

}  // namespace hangwatch::preload
