// PythonLayout: where the fields python/ reads sit in CPython's structures, for one minor
// version (x86_64 and aarch64: both LP64, same layouts).
//
// 3.13 describes its own layout (debug_offsets.h).
// 3.10, 3.11 and 3.12 come from a table written from each version's headers
// (Include/internal/pycore_runtime.h, pycore_interp.h, cpython/pystate.h, pycore_frame.h or
// cpython/frameobject.h, cpython/code.h, cpython/unicodeobject.h) and checked with offsetof
// against the installed headers (python_layout.cc says which). A layout is never trusted on its
// own: FrameChainReader::CheckLayout tests it against the live interpreter first.
#ifndef HANGWATCH_PYTHON_PYTHON_LAYOUT_H_
#define HANGWATCH_PYTHON_PYTHON_LAYOUT_H_

#include <cstdint>

namespace hangwatch::python {

inline constexpr uint32_t kNoField = 0xffffffff;

struct PythonLayout {
  int minor = 0;  // 3.<minor>

  // _PyRuntimeState
  uint32_t runtime_interpreters_head = 0;
  // PyInterpreterState
  uint32_t interp_next = 0;  // first before 3.13
  uint32_t interp_threads_head = 0;
  // PyThreadState
  uint32_t tstate_next = 0;
  uint32_t tstate_interp = 0;
  uint32_t tstate_thread_id = 0;         // pthread_t
  uint32_t tstate_native_thread_id = 0;  // the kernel's tid; kNoField before 3.11
  // The innermost frame: tstate->cframe->current_frame (3.11, 3.12) or tstate->frame (3.10).
  uint32_t tstate_cframe = kNoField;
  uint32_t cframe_current_frame = 0;
  uint32_t tstate_frame = kNoField;
  // 3.11+: the thread's data stack, where its frames live (pycore_frame.h's _PyStackChunk):
  // the current chunk and the first free word in it. In process, a capture copies the used part
  // of the chunk in one read (capture_hook.h).
  uint32_t tstate_datastack_chunk = kNoField;
  uint32_t tstate_datastack_top = kNoField;

  // Frames: PyFrameObject (3.10) or _PyInterpreterFrame (3.11+).
  bool frame_objects = false;  // 3.10: f_lasti is an int index; else a code-unit pointer
  uint32_t frame_previous = 0;
  uint32_t frame_code = 0;
  uint32_t frame_instr = 0;            // f_lasti (int, code units) or prev_instr (pointer)
  uint32_t frame_is_entry = kNoField;  // 3.11: a C call of the eval loop began here
  uint32_t frame_owner = kNoField;     // uint8: thread, generator, frame object, C stack
  uint8_t owner_cstack = 0xff;         // 3.12: the eval loop's entry shim frame (skipped)
  uint32_t frame_size = 0;             // bytes to read to cover every frame field above

  // PyCodeObject
  uint32_t code_filename = 0;
  uint32_t code_name = 0;
  uint32_t code_qualname = kNoField;  // 3.11+
  uint32_t code_firstlineno = 0;      // int
  uint32_t code_linetable = 0;        // bytes object
  uint32_t code_adaptive = kNoField;  // 3.11+: co_code_adaptive, the instructions' start

  // PyObject, PyTypeObject, PyUnicodeObject (compact ASCII), PyBytesObject
  uint32_t object_type = 8;
  uint32_t type_name = 24;
  uint32_t unicode_length = 16;
  uint32_t unicode_state = 32;
  uint32_t unicode_ascii_data = 48;    // sizeof(PyASCIIObject)
  uint32_t unicode_compact_data = 72;  // sizeof(PyCompactUnicodeObject): non-ASCII text
  uint32_t bytes_size = 16;
  uint32_t bytes_data = 32;
};

// The table's layout of 3.<minor>, or nullptr for a version it does not know.
const PythonLayout* TableLayout(int minor);

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_PYTHON_LAYOUT_H_
