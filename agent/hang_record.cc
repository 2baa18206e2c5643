// The functions of include/hangwatch/hang_record.h. Standard library only, so that the report
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

const char* FrameMethodName(FrameMethod m) {
  switch (m) {
    case FrameMethod::kPc:
      return "pc";
    case FrameMethod::kFramePointer:
      return "fp";
    case FrameMethod::kCfi:
      return "cfi";
    case FrameMethod::kLinkRegister:
      return "lr";
    case FrameMethod::kFramePointerScan:
      return "fp-scan";
    case FrameMethod::kUnknown:
      break;
  }
  return "unknown";
}

const char* SampleMethodName(SampleMethod m) {
  switch (m) {
    case SampleMethod::kSignal:
      return "signal";
    case SampleMethod::kProc:
      return "proc";
    case SampleMethod::kMach:
      return "mach";
    case SampleMethod::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace hangwatch
