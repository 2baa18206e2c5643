// The offsets below were written from the CPython headers and checked with offsetof against the
// headers of the interpreters installed while writing them: Debian's python3.11 3.11.2
// (libpython3.11-dev), and 3.10.13 and 3.12.1 built by pyenv. They hold for every patch
// release of a minor version: CPython keeps these structures stable within one.
#include "python/python_layout.h"

namespace hangwatch::python {
namespace {

PythonLayout Layout310() {
  PythonLayout l;
  l.minor = 10;
  l.runtime_interpreters_head = 32;
  l.interp_threads_head = 8;  // tstate_head
  l.tstate_next = 8;
  l.tstate_interp = 16;
  l.tstate_thread_id = 176;
  l.tstate_native_thread_id = kNoField;
  l.tstate_frame = 24;
  l.frame_objects = true;
  l.frame_previous = 24;  // f_back
  l.frame_code = 32;
  l.frame_instr = 96;  // f_lasti
  l.frame_size = 104;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;
  l.unicode_ascii_data = 48;
  return l;
}

PythonLayout Layout311() {
  PythonLayout l;
  l.minor = 11;
  l.runtime_interpreters_head = 40;
  l.interp_threads_head = 16;
  l.tstate_next = 8;
  l.tstate_interp = 16;
  l.tstate_thread_id = 152;
  l.tstate_native_thread_id = 160;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 8;
  l.tstate_datastack_chunk = 296;
  l.tstate_datastack_top = 304;
  l.frame_previous = 48;
  l.frame_code = 32;
  l.frame_instr = 56;  // prev_instr
  l.frame_is_entry = 68;
  l.frame_owner = 69;
  l.frame_size = 72;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_adaptive = 184;
  l.unicode_ascii_data = 48;
  return l;
}

PythonLayout Layout312() {
  PythonLayout l;
  l.minor = 12;
  l.runtime_interpreters_head = 40;
  l.interp_threads_head = 72;
  l.tstate_next = 8;
  l.tstate_interp = 16;
  l.tstate_thread_id = 136;
  l.tstate_native_thread_id = 144;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 0;
  l.tstate_datastack_chunk = 232;
  l.tstate_datastack_top = 240;
  l.frame_previous = 8;
  l.frame_code = 0;
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 70;
  l.owner_cstack = 3;  // FRAME_OWNED_BY_CSTACK
  l.frame_size = 72;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_adaptive = 192;
  l.unicode_ascii_data = 40;  // 3.12 dropped PyASCIIObject's wstr
  l.unicode_compact_data = 56;
  return l;
}

const PythonLayout kLayout310 = Layout310();
const PythonLayout kLayout311 = Layout311();
const PythonLayout kLayout312 = Layout312();

}  // namespace

const PythonLayout* TableLayout(int minor) {
  switch (minor) {
    case 10:
      return &kLayout310;
    case 11:
      return &kLayout311;
    case 12:
      return &kLayout312;
    default:
      return nullptr;
  }
}

}  // namespace hangwatch::python
