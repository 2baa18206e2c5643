// RubyLayout: where the fields python/'s counterpart for Ruby reads sit in the VM's structures,
// per Ruby version. Only Ruby 3.1 (x86_64 and aarch64 LP64, the release build Debian ships:
// no VM_DEBUG_BP_CHECK, no USE_RVARGC) has a table; every offset was derived from Ruby 3.1's
// own headers (vm_core.h, iseq.h, internal/string.h, ruby/internal/core/rstring.h and
// rarray.h, ractor_core.h at v3_1_2), summing the field sizes by the C layout rules, and
// matched against offsetof() compiled from the preprocessed rb_mjit_min_header-3.1.2.h that
// Debian's ruby3.1-dev installs. A layout is checked against the live VM before use
// (control_frames.h, RubyThreads::CheckLayout).
#ifndef HANGWATCH_RUBY_RUBY_LAYOUT_H_
#define HANGWATCH_RUBY_RUBY_LAYOUT_H_

#include <cstdint>
#include <string>

namespace hangwatch::ruby {

struct RubyLayout {
  // rb_vm_t: ractor.main_ractor, ractor.main_thread.
  uint32_t vm_main_ractor = 0;
  uint32_t vm_main_thread = 0;
  // rb_ractor_t: threads.set (a ccan list_head whose nodes are rb_thread_t.lt_node), threads.cnt.
  uint32_t ractor_threads_head = 0;
  uint32_t ractor_threads_count = 0;
  // rb_thread_t: lt_node (the list node), ractor, vm, ec (the running fiber's context), tid
  // (the kernel's thread id, RB_THREAD_T_HAS_NATIVE_ID), thread_id (the pthread_t).
  uint32_t thread_lt_node = 0;
  uint32_t thread_ractor = 0;
  uint32_t thread_vm = 0;
  uint32_t thread_ec = 0;
  uint32_t thread_tid = 0;
  uint32_t thread_pthread = 0;
  // rb_execution_context_t: vm_stack, vm_stack_size (in VALUEs), cfp, thread_ptr.
  uint32_t ec_vm_stack = 0;
  uint32_t ec_vm_stack_size = 0;
  uint32_t ec_cfp = 0;
  uint32_t ec_thread = 0;
  // rb_control_frame_t: pc, iseq, ep; its size. Frames are pushed downward from the end of the
  // VM stack (vm_stack + vm_stack_size): ec->cfp is the innermost, cfp + 1 its caller.
  uint32_t cfp_pc = 0;
  uint32_t cfp_iseq = 0;
  uint32_t cfp_ep = 0;
  uint32_t cfp_size = 0;
  // rb_iseq_t: body (struct rb_iseq_constant_body *).
  uint32_t iseq_body = 0;
  // rb_iseq_constant_body: type (enum iseq_type), iseq_size, iseq_encoded, location.{pathobj,
  // base_label, label, first_lineno}, insns_info.{body, positions, size, succ_index_table}.
  uint32_t body_type = 0;
  uint32_t body_iseq_size = 0;
  uint32_t body_iseq_encoded = 0;
  uint32_t body_pathobj = 0;
  uint32_t body_base_label = 0;
  uint32_t body_label = 0;
  uint32_t body_first_lineno = 0;
  uint32_t body_insns_info = 0;
  uint32_t body_insns_positions = 0;
  uint32_t body_insns_size = 0;
  uint32_t body_succ_index_table = 0;
  uint32_t insn_info_entry_size = 0;  // struct iseq_insn_info_entry; line_no at 0
  // RString: heap len and ptr, the embedded bytes; RArray: heap len and ptr, embedded elements.
  uint32_t string_heap_len = 0;
  uint32_t string_heap_ptr = 0;
  uint32_t string_embed = 0;
  uint32_t array_heap_len = 0;
  uint32_t array_heap_ptr = 0;
  uint32_t array_embed = 0;
};

// Object flags (RBasic.flags, the first word of every heap object) and the VM's frame flags
// (ep[0] of a control frame), the same from Ruby 2.6 to 3.3.
inline constexpr uint64_t kTypeMask = 0x1f;
inline constexpr uint64_t kTypeString = 0x05;
inline constexpr uint64_t kTypeArray = 0x07;
inline constexpr uint64_t kTypeImemo = 0x1a;
inline constexpr int kUserFlagShift = 12;         // RUBY_FL_USHIFT
inline constexpr uint64_t kImemoIseq = 7;         // imemo_iseq: (flags >> 12) & 0xf
inline constexpr uint64_t kEmbedFlag = 1u << 13;  // RUBY_FL_USER1: RSTRING_NOEMBED, RARRAY_EMBED
inline constexpr int kStringEmbedLenShift = 14;   // RSTRING_EMBED_LEN_SHIFT (FL_USER2..6)
inline constexpr uint64_t kStringEmbedLenMask = 0x1f;
inline constexpr int kArrayEmbedLenShift = 15;  // RARRAY_EMBED_LEN_SHIFT (FL_USER3..4)
inline constexpr uint64_t kArrayEmbedLenMask = 0x3;
inline constexpr uint32_t kIseqTypeTop = 0;         // ISEQ_TYPE_TOP ("<top (required)>", Init_VM's)
inline constexpr uint64_t kFrameFlagFinish = 0x20;  // VM_FRAME_FLAG_FINISH: a vm_exec began here
inline constexpr uint64_t kFrameFlagCFrame = 0x80;  // VM_FRAME_FLAG_CFRAME: not a Ruby frame

// Whether `flags` (an object's first word) are an instruction sequence's.
inline bool IsIseqFlags(uint64_t flags) {
  return (flags & kTypeMask) == kTypeImemo && ((flags >> kUserFlagShift) & 0xf) == kImemoIseq;
}

// Whether an iseq of `type` whose location.first_lineno is `first_lineno` (a Fixnum VALUE) is
// the VM's own placeholder at the bottom of the main thread's stack (Init_VM's "<main>", of
// type TOP and line 0, which never runs; files loaded by require are TOP from line 1).
inline bool IsVmPlaceholder(uint32_t type, uint64_t first_lineno) {
  return type == kIseqTypeTop && first_lineno == 1;  // INT2FIX(0)
}

// The layout of Ruby `major`.`minor` (ruby_api_version); "" and *out set, else why there is
// none ("Ruby 3.2 has no layout table (3.1 only)").
std::string LayoutForVersion(int major, int minor, RubyLayout* out);

}  // namespace hangwatch::ruby

#endif  // HANGWATCH_RUBY_RUBY_LAYOUT_H_
