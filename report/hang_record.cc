// The out-of-line functions of include/hangwatch/hang_record.h. Standard library only, so that
// readers (and their fuzzer) can be built with this file alone.
#include "hangwatch/hang_record.h"

#include "report/record_types.h"

namespace hangwatch {

const char* HangClassName(HangClass c) {
  switch (c) {
    case HangClass::kBusy:
      return report::kClassBusy.data();
    case HangClass::kBlocked:
      return report::kClassBlocked.data();
    case HangClass::kMixed:
      return report::kClassMixed.data();
    case HangClass::kUnknown:
      break;
  }
  return report::kClassUnknown.data();
}

}  // namespace hangwatch
