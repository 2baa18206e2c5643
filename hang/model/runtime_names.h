// PythonNames: what Materialize asks to name a Python frame of a hang (python_frame_word.h):
// the function, file and line resolved on the watchdog while the code object was alive
// (agent/samplers/python_stacks.h), by the frame's word. A hang read back from an open-hang file
// has those the process stored in it (open_hang_python_names.h; none before format 6: unnamed
// frames).
#ifndef HANGWATCH_HANG_MODEL_PYTHON_NAMES_H_
#define HANGWATCH_HANG_MODEL_PYTHON_NAMES_H_

#include <cstdint>
#include <string>

namespace hangwatch::agent {

struct PythonName {
  std::string symbol;  // co_qualname (3.11+) or co_name
  std::string file;    // co_filename
  int line = 0;        // 0: unknown
};

class PythonNames {
 public:
  virtual ~PythonNames() = default;
  // The name of the frame stored as `word`; false when it was never resolved.
  virtual bool Find(uintptr_t word, PythonName* out) const = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_PYTHON_NAMES_H_
