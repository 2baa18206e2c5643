#include "ruby/ruby_layout.h"

namespace hangwatch::ruby {
namespace {

// Ruby 3.1.x. The sums (LP64: pointers, VALUE, long and size_t 8 bytes; int 4):
//  rb_vm_t: self 8; ractor { set (list_head, 16) @8, cnt @24, blocking_cnt @28,
//    main_ractor @32, main_thread @40 }.
//  rb_ractor_t: pub { self, id, hooks (24) } 40; sync { lock 40, cond 48, incoming_queue 32,
//    taking_ractors 16, two bools, wait { two enums, two baskets of 24 } } ends at 240;
//    receiving_mutex @240, yield_atexit @248, barrier_wait_cond (48) @256; threads.set @304,
//    threads.cnt @320.
//  rb_thread_t: lt_node (16) @0, self @16, ractor @24, vm @32, ec @40, last_status @48,
//    calling @56, top_self @64, top_wrapper @72, thread_id (pthread_t) @80, tid (int) @88.
//  rb_execution_context_t: vm_stack @0, vm_stack_size @8, cfp @16, tag @24, interrupt_flag
//    and interrupt_mask @32 and @36, fiber_ptr @40, thread_ptr @48.
//  rb_control_frame_t: pc, sp, iseq, self, ep, block_code, __bp__, jit_return: 64 bytes.
//  rb_iseq_t: flags, wrapper, body @16.
//  rb_iseq_constant_body: type @0, iseq_size @4, iseq_encoded @8, param (flags, seven ints,
//    opt_table, keyword) @16..64, location { pathobj @64, base_label @72, label @80,
//    first_lineno @88, node_id, code_location } to 120, insns_info { body @120,
//    positions @128, size @136, succ_index_table @144 }. iseq_insn_info_entry: line_no,
//    node_id, events: 12 bytes.
//  RString: RBasic (flags, klass) 16, then as.heap { len @16, ptr @24 } or as.embed.ary @16.
//  RArray: as.heap { len @16, aux @24, ptr @32 } or as.ary @16.
RubyLayout Ruby31() {
  RubyLayout l;
  l.vm_main_ractor = 32;
  l.vm_main_thread = 40;
  l.ractor_threads_head = 304;
  l.ractor_threads_count = 320;
  l.thread_lt_node = 0;
  l.thread_ractor = 24;
  l.thread_vm = 32;
  l.thread_ec = 40;
  l.thread_pthread = 80;
  l.thread_tid = 88;
  l.ec_vm_stack = 0;
  l.ec_vm_stack_size = 8;
  l.ec_cfp = 16;
  l.ec_thread = 48;
  l.cfp_pc = 0;
  l.cfp_iseq = 16;
  l.cfp_ep = 32;
  l.cfp_size = 64;
  l.iseq_body = 16;
  l.body_type = 0;
  l.body_iseq_size = 4;
  l.body_iseq_encoded = 8;
  l.body_pathobj = 64;
  l.body_base_label = 72;
  l.body_label = 80;
  l.body_first_lineno = 88;
  l.body_insns_info = 120;
  l.body_insns_positions = 128;
  l.body_insns_size = 136;
  l.body_succ_index_table = 144;
  l.insn_info_entry_size = 12;
  l.string_heap_len = 16;
  l.string_heap_ptr = 24;
  l.string_embed = 16;
  l.array_heap_len = 16;
  l.array_heap_ptr = 32;
  l.array_embed = 16;
  return l;
}

}  // namespace

std::string LayoutForVersion(int major, int minor, RubyLayout* out) {
  if (major == 3 && minor == 1) {
    *out = Ruby31();
    return "";
  }
  return "Ruby " + std::to_string(major) + "." + std::to_string(minor) +
         " has no layout table (3.1 only)";
}

}  // namespace hangwatch::ruby
