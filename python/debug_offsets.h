// The layout of CPython 3.13, read from the interpreter itself: `_Py_DebugOffsets`, the first
// member of `_PyRuntime` (cookie "xdebugpy", the version, then for each structure a debugger
// needs its size and the offsets of its fields). The struct's own layout is 3.13's
// (Include/internal/pycore_runtime.h; 3.14 changed it), so only 3.13 is read here.
//
// Not every word of it is an offset: each group starts with its structure's size, and
// unicode_object.asciiobject_size is a size too. Offsets are checked against their own
// structure's size (PyInterpreterState is ~190 KiB in 3.13: threads.head sits at ~7 KiB), and
// sizes against a ceiling, so a garbage block gives "no layout", never a wild read.
#ifndef HANGWATCH_PYTHON_DEBUG_OFFSETS_H_
#define HANGWATCH_PYTHON_DEBUG_OFFSETS_H_

#include <cstdint>
#include <string>

#include "python/interpreter_locator.h"
#include "python/memory_reader.h"
#include "python/python_layout.h"

namespace hangwatch::python {

// 3.13's _Py_DebugOffsets, as laid out in memory (every member 8 bytes).
struct DebugOffsets313 {
  char cookie[8];
  uint64_t version;  // PY_VERSION_HEX
  uint64_t free_threaded;
  struct {
    uint64_t size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
        gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
        status;
  } thread_state;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
  } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct {
    uint64_t size, ob_type;
  } pyobject;
  struct {
    uint64_t size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } tuple_object, list_object;
  struct {
    uint64_t size, ma_keys, ma_values;
  } dict_object;
  struct {
    uint64_t size, ob_fval;
  } float_object;
  struct {
    uint64_t size, lv_tag, ob_digit;
  } long_object;
  struct {
    uint64_t size, ob_size, ob_sval;
  } bytes_object;
  struct {
    uint64_t size, state, length, asciiobject_size;
  } unicode_object;
  struct {
    uint64_t size, collecting;
  } gc;
};
static_assert(sizeof(DebugOffsets313) == 73 * 8, "3.13's _Py_DebugOffsets is 73 words");

// Fills *out from `d`, the _Py_DebugOffsets of a 3.`minor` interpreter. "" on success, else
// one line saying why not (not 3.13, no cookie, a version that disagrees, a free-threaded
// build, a size or an offset out of bounds: which one).
std::string LayoutFromDebugOffsets(const DebugOffsets313& d, int minor, PythonLayout* out);

// The same, read from `runtime` (&_PyRuntime) through `memory`.
std::string ReadDebugOffsetsLayout(const MemoryReader& memory, uint64_t runtime, int minor,
                                   PythonLayout* out);

// The layout of the interpreter at `addresses`: the table's for 3.10-3.12, its own
// _Py_DebugOffsets for 3.13. "" on success, else one line saying why there is none.
std::string LayoutForInterpreter(const MemoryReader& memory, const InterpreterAddresses& addresses,
                                 PythonLayout* out);

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_DEBUG_OFFSETS_H_
