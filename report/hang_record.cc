// The out-of-line functions of include/hangwatch/hang_record.h. Standard library only, so that
// readers (and their fuzzer) can be built with this file alone.
#include "hangwatch/hang_record.h"

namespace hangwatch {

const char* HangClassName(HangClass c) {
  switch (c) {
    case HangClass::kBusy:
      return "busy";
    case HangClass::kBlocked:
      return "blocked";
    case HangClass::kMixed:
      return "mixed";
    case HangClass::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace hangwatch
