// RuntimeNames: what Materialize asks to name an interpreter's frame of a hang (a Python, Ruby or
// JavaScript function; runtime_frame_word.h is the word every runtime's frame is stored as): the
// function, file and line resolved on the watchdog while the runtime's object was alive
// (agent/samplers/python_stacks.h and the other RuntimeFrames), by the frame's word. A hang read
// back from an open-hang file has those the process stored in it (open_hang_python_names.h; none
// before format 6: unnamed frames).
#ifndef HANGWATCH_HANG_MODEL_RUNTIME_NAMES_H_
#define HANGWATCH_HANG_MODEL_RUNTIME_NAMES_H_

#include <cstdint>
#include <string>

#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

struct RuntimeFrameName {
  // Which runtime ran the frame: kPython, kJs or kRuby (never kNative).
  FrameLanguage language = FrameLanguage::kPython;
  std::string symbol;  // the function: co_qualname, a Ruby method's label, a JS function's name
  std::string file;    // its source file (co_filename, the iseq's path, the script's name)
  int line = 0;        // 0: unknown
  // `line` is where the function begins, not the line it was running (a runtime that cannot say
  // which line ran). JSON: "line_is_definition": true.
  bool line_is_definition = false;
};

class RuntimeNames {
 public:
  virtual ~RuntimeNames() = default;
  // The name of the frame stored as `word`; false when it was never resolved.
  virtual bool Find(uintptr_t word, RuntimeFrameName* out) const = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_RUNTIME_NAMES_H_
