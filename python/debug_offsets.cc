#include "python/debug_offsets.h"

#include <algorithm>
#include <cstring>

namespace hangwatch::python {
namespace {

// Ceilings on the structures' sizes. 3.13.0 on x86_64: _PyRuntimeState 283320 bytes,
// PyInterpreterState 194968, PyThreadState 304, _PyInterpreterFrame 80, PyCodeObject 208.
constexpr uint64_t kMaxStateSize = 16u << 20;   // the runtime and interpreter states
constexpr uint64_t kMaxObjectSize = 64u << 10;  // thread state, frame, objects, types
// FrameChainReader reads a frame's fields in one read of at most this many bytes.
constexpr uint64_t kMaxFrameFields = 128;
// FRAME_OWNED_BY_CSTACK (3.13 Include/internal/pycore_frame.h): the eval loop's entry shim.
constexpr uint8_t kOwnedByCstack = 3;

// Checks of one _Py_DebugOffsets: the first failure, by name.
class Bounds {
 public:
  // A structure's size, against its ceiling.
  void Size(const char* what, uint64_t size, uint64_t ceiling) {
    if (failed_.empty() && (size == 0 || size > ceiling)) {
      failed_ = std::string("_Py_DebugOffsets gives ") + what + " an implausible size";
    }
  }
  // A field of `width` bytes at `offset`, inside a structure of `size` bytes.
  uint32_t Field(const char* what, uint64_t offset, uint64_t width, uint64_t size) {
    if (failed_.empty() && (offset > size || width > size - offset)) {
      failed_ = std::string("_Py_DebugOffsets puts ") + what + " outside its structure";
    }
    return static_cast<uint32_t>(std::min<uint64_t>(offset, kNoField - 1));
  }
  const std::string& failed() const { return failed_; }

 private:
  std::string failed_;
};

}  // namespace

std::string LayoutFromDebugOffsets(const DebugOffsets313& d, int minor, PythonLayout* out) {
  if (minor != 13) return "no reader for this version's _Py_DebugOffsets (3.13 only)";
  if (std::memcmp(d.cookie, "xdebugpy", 8) != 0) {
    return "_Py_DebugOffsets has no \"xdebugpy\" cookie";
  }
  if (((d.version >> 24) & 0xff) != 3 || ((d.version >> 16) & 0xff) != 13) {
    return "_Py_DebugOffsets' version is not 3.13";
  }
  // The free-threaded build (3.13t) changes the object header and how threads run; untested.
  if (d.free_threaded != 0) return "a free-threaded build (not read)";

  Bounds b;
  b.Size("_PyRuntimeState", d.runtime_state.size, kMaxStateSize);
  b.Size("PyInterpreterState", d.interpreter_state.size, kMaxStateSize);
  b.Size("PyThreadState", d.thread_state.size, kMaxObjectSize);
  b.Size("_PyInterpreterFrame", d.interpreter_frame.size, kMaxObjectSize);
  b.Size("PyCodeObject", d.code_object.size, kMaxObjectSize);
  b.Size("PyObject", d.pyobject.size, kMaxObjectSize);
  b.Size("PyTypeObject", d.type_object.size, kMaxObjectSize);
  b.Size("PyBytesObject", d.bytes_object.size, kMaxObjectSize);
  b.Size("PyUnicodeObject", d.unicode_object.size, kMaxObjectSize);

  PythonLayout l;
  l.minor = 13;
  const uint64_t runtime = d.runtime_state.size;
  l.runtime_interpreters_head =
      b.Field("interpreters.head", d.runtime_state.interpreters_head, 8, runtime);
  const uint64_t interp = d.interpreter_state.size;
  l.interp_threads_head = b.Field("threads.head", d.interpreter_state.threads_head, 8, interp);
  // Not first in 3.13: PyInterpreterState begins with its eval-loop state.
  l.interp_next = b.Field("PyInterpreterState.next", d.interpreter_state.next, 8, interp);
  const uint64_t tstate = d.thread_state.size;
  l.tstate_next = b.Field("PyThreadState.next", d.thread_state.next, 8, tstate);
  l.tstate_interp = b.Field("PyThreadState.interp", d.thread_state.interp, 8, tstate);
  l.tstate_thread_id = b.Field("PyThreadState.thread_id", d.thread_state.thread_id, 8, tstate);
  l.tstate_native_thread_id =
      b.Field("PyThreadState.native_thread_id", d.thread_state.native_thread_id, 8, tstate);
  // 3.13 has no cframe: the innermost frame hangs off the thread state.
  l.tstate_frame = b.Field("PyThreadState.current_frame", d.thread_state.current_frame, 8, tstate);
  // The data stack the capture hook copies in one read: _Py_DebugOffsets names its chunk;
  // datastack_top is the member declared right after it, as in 3.11 and 3.12.
  l.tstate_datastack_chunk =
      b.Field("PyThreadState.datastack_chunk", d.thread_state.datastack_chunk, 16, tstate);
  l.tstate_datastack_top = l.tstate_datastack_chunk + 8;

  const uint64_t frame = d.interpreter_frame.size;
  l.frame_previous = b.Field("frame previous", d.interpreter_frame.previous, 8, frame);
  // f_executable: a code object, or None in an entry shim.
  l.frame_code = b.Field("frame f_executable", d.interpreter_frame.executable, 8, frame);
  // instr_ptr: the instruction running (a call's own CALL in a caller), as 3.12's prev_instr.
  l.frame_instr = b.Field("frame instr_ptr", d.interpreter_frame.instr_ptr, 8, frame);
  l.frame_owner = b.Field("frame owner", d.interpreter_frame.owner, 1, frame);
  l.owner_cstack = kOwnedByCstack;
  l.frame_size =
      std::max({l.frame_previous + 8, l.frame_code + 8, l.frame_instr + 8, l.frame_owner + 1});
  if (b.failed().empty() && l.frame_size > kMaxFrameFields) {
    return "_Py_DebugOffsets puts the frame's fields beyond its first 128 bytes";
  }

  const uint64_t code = d.code_object.size;
  l.code_filename = b.Field("co_filename", d.code_object.filename, 8, code);
  l.code_name = b.Field("co_name", d.code_object.name, 8, code);
  l.code_qualname = b.Field("co_qualname", d.code_object.qualname, 8, code);
  l.code_firstlineno = b.Field("co_firstlineno", d.code_object.firstlineno, 4, code);
  l.code_linetable = b.Field("co_linetable", d.code_object.linetable, 8, code);
  // The instructions are a flexible array from here: only its start need be inside.
  l.code_adaptive = b.Field("co_code_adaptive", d.code_object.co_code_adaptive, 0, code);

  l.object_type = b.Field("ob_type", d.pyobject.ob_type, 8, d.pyobject.size);
  l.type_name = b.Field("tp_name", d.type_object.tp_name, 8, d.type_object.size);
  const uint64_t bytes = d.bytes_object.size;
  l.bytes_size = b.Field("PyBytesObject.ob_size", d.bytes_object.ob_size, 8, bytes);
  l.bytes_data = b.Field("ob_sval", d.bytes_object.ob_sval, 0, bytes);
  const uint64_t unicode = d.unicode_object.size;
  l.unicode_state = b.Field("PyASCIIObject.state", d.unicode_object.state, 4, unicode);
  l.unicode_length = b.Field("PyASCIIObject.length", d.unicode_object.length, 8, unicode);
  // A size, not an offset: compact ASCII text starts right after PyASCIIObject, and other
  // compact text after PyCompactUnicodeObject, which adds utf8_length and utf8 (16 bytes).
  l.unicode_ascii_data =
      b.Field("sizeof(PyASCIIObject)", d.unicode_object.asciiobject_size, 16, unicode);
  l.unicode_compact_data = l.unicode_ascii_data + 16;
  if (!b.failed().empty()) return b.failed();
  *out = l;
  return "";
}

std::string ReadDebugOffsetsLayout(const MemoryReader& memory, uint64_t runtime, int minor,
                                   PythonLayout* out) {
  if (minor != 13) return "no reader for this version's _Py_DebugOffsets (3.13 only)";
  DebugOffsets313 d;
  if (!memory.Read(runtime, &d, sizeof(d))) return "_Py_DebugOffsets is unreadable";
  return LayoutFromDebugOffsets(d, minor, out);
}

std::string LayoutForInterpreter(const MemoryReader& memory, const InterpreterAddresses& addresses,
                                 PythonLayout* out) {
  if (const PythonLayout* table = TableLayout(addresses.minor)) {
    *out = *table;
    return "";
  }
  if (addresses.minor == 13) {
    return ReadDebugOffsetsLayout(memory, addresses.runtime, addresses.minor, out);
  }
  return "no frame layout for this version (3.10-3.13 only)";
}

}  // namespace hangwatch::python
