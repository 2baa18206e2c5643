// jvm/thread_dump.h and jvm/java_waits.h on dump texts shaped as OpenJDK 17's (taken from real
// dumps of tests/jvm/data/SyncDeadlock.java and JucDeadlock.java, shortened), and on bad input.
#include "jvm/thread_dump.h"

#include <gtest/gtest.h>

#include <string>

#include "jvm/java_waits.h"

namespace hangwatch::jvm {
namespace {

constexpr char kSyncDump[] =
    "2026-12-06 12:00:18\n"
    "Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, "
    "sharing):\n"
    "\n"
    "Threads class SMR info:\n"
    "_java_thread_list=0x00007f39b8001f70, length=14, elements={\n"
    "0x00007f3a48017ed0, 0x00007f3a480f83c0\n"
    "}\n"
    "\n"
    "\"Finalizer\" #3 daemon prio=8 os_prio=0 cpu=0.14ms elapsed=73.16s tid=0x00007f3a480f97a0 "
    "nid=0x2b45 in Object.wait()  [0x00007f3a4c3de000]\n"
    "   java.lang.Thread.State: WAITING (on object monitor)\n"
    "\tat java.lang.Object.wait(java.base@17.0.15/Native Method)\n"
    "\t- waiting on <0x000000069ec02f40> (a java.lang.ref.ReferenceQueue$Lock)\n"
    "\tat java.lang.ref.ReferenceQueue.remove(java.base@17.0.15/ReferenceQueue.java:155)\n"
    "\t- locked <0x000000069ec02f40> (a java.lang.ref.ReferenceQueue$Lock)\n"
    "\n"
    "\"worker \"a\"\" #12 prio=5 os_prio=0 cpu=2.92ms elapsed=73.14s tid=0x00007f3a48118b20 "
    "nid=0x2b4f waiting for monitor entry  [0x00007f3a2519d000]\n"
    "   java.lang.Thread.State: BLOCKED (on object monitor)\n"
    "\tat SyncDeadlock.lockBoth(SyncDeadlock.java:8)\n"
    "\t- waiting to lock <0x000000069ec19210> (a java.lang.Object)\n"
    "\t- locked <0x000000069ec19200> (a java.lang.Object)\n"
    "\tat SyncDeadlock.lambda$main$0(SyncDeadlock.java:13)\n"
    "\tat SyncDeadlock$$Lambda$1/0x00007f39c8000a08.run(Unknown Source)\n"
    "\tat java.lang.Thread.run(java.base@17.0.15/Thread.java:840)\n"
    "\n"
    "\"worker-b\" #13 prio=5 os_prio=0 cpu=1.93ms elapsed=73.14s tid=0x00007f3a48119ad0 "
    "nid=0x2b50 waiting for monitor entry  [0x00007f3a2509d000]\n"
    "   java.lang.Thread.State: BLOCKED (on object monitor)\n"
    "\tat SyncDeadlock.lockBoth(SyncDeadlock.java:8)\n"
    "\t- waiting to lock <0x000000069ec19200> (a java.lang.Object)\n"
    "\t- locked <0x000000069ec19210> (a java.lang.Object)\n"
    "\tat SyncDeadlock.lambda$main$1(SyncDeadlock.java:14)\n"
    "\n"
    "\"VM Thread\" os_prio=0 cpu=3.64ms elapsed=73.16s tid=0x00007f3a480f4430 nid=0x2b43 "
    "runnable  \n"
    "\n"
    "JNI global refs: 6, weak refs: 0\n"
    "\n"
    "\n"
    "Found one Java-level deadlock:\n"
    "=============================\n"
    "\"worker \"a\"\":\n"
    "  waiting to lock monitor 0x00007f39a40667f0 (object 0x000000069ec19210, a "
    "java.lang.Object),\n"
    "  which is held by \"worker-b\"\n"
    "\n"
    "\"worker-b\":\n"
    "  waiting to lock monitor 0x00007f39b00015a0 (object 0x000000069ec19200, a "
    "java.lang.Object),\n"
    "  which is held by \"worker \"a\"\"\n"
    "\n"
    "Java stack information for the threads listed above:\n"
    "===================================================\n"
    "\"worker-b\":\n"
    "\tat SyncDeadlock.lockBoth(SyncDeadlock.java:8)\n"
    "\n"
    "Found 1 deadlock.\n";

TEST(ThreadDumpTest, ThreadsFramesAndLocks) {
  const ThreadDump d = ParseThreadDump(kSyncDump);
  EXPECT_EQ(d.vm, "OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing)");
  ASSERT_EQ(d.threads.size(), 4u);
  const JavaThread& fin = d.threads[0];
  EXPECT_EQ(fin.name, "Finalizer");
  EXPECT_EQ(fin.nid, 0x2b45u);
  EXPECT_EQ(fin.number, 3);
  EXPECT_TRUE(fin.daemon);
  EXPECT_EQ(fin.state, "WAITING (on object monitor)");
  ASSERT_EQ(fin.frames.size(), 2u);
  EXPECT_EQ(fin.frames[0].method, "java.lang.Object.wait");
  EXPECT_TRUE(fin.frames[0].native_method);
  EXPECT_EQ(fin.frames[1].file, "ReferenceQueue.java");
  EXPECT_EQ(fin.frames[1].line, 155);
  EXPECT_EQ(fin.frames[1].module, "java.base@17.0.15");

  const JavaThread& a = d.threads[1];
  EXPECT_EQ(a.name, "worker \"a\"");  // quotes inside a name
  EXPECT_EQ(a.nid, 0x2b4fu);
  EXPECT_FALSE(a.daemon);
  ASSERT_EQ(a.frames.size(), 4u);
  EXPECT_EQ(a.frames[0].method, "SyncDeadlock.lockBoth");
  EXPECT_EQ(a.frames[0].file, "SyncDeadlock.java");
  EXPECT_EQ(a.frames[0].line, 8);
  EXPECT_EQ(a.frames[0].module, "");
  EXPECT_EQ(a.frames[2].method, "SyncDeadlock$$Lambda$1/0x00007f39c8000a08.run");
  EXPECT_EQ(a.frames[2].file, "");
  EXPECT_EQ(a.frames[2].line, 0);
  ASSERT_EQ(a.locks.size(), 2u);
  EXPECT_EQ(a.locks[0].role, JavaLockRole::kWaitingToLock);
  EXPECT_EQ(a.locks[0].object, 0x69ec19210u);
  EXPECT_EQ(a.locks[0].klass, "java.lang.Object");
  EXPECT_EQ(a.locks[0].frame, 0u);
  EXPECT_EQ(a.locks[1].role, JavaLockRole::kLocked);

  const JavaThread& vm = d.threads[3];
  EXPECT_EQ(vm.name, "VM Thread");
  EXPECT_EQ(vm.nid, 0x2b43u);
  EXPECT_EQ(vm.number, -1);
  EXPECT_TRUE(vm.frames.empty());
  EXPECT_EQ(JavaFrameLabel(a.frames[0]), "SyncDeadlock.lockBoth (SyncDeadlock.java:8)");
  EXPECT_EQ(JavaFrameLabel(fin.frames[0]), "java.lang.Object.wait (Native Method)");
}

TEST(ThreadDumpTest, DeadlockSectionAndWaits) {
  const ThreadDump d = ParseThreadDump(kSyncDump);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  ASSERT_EQ(d.deadlocks[0].size(), 2u);
  EXPECT_EQ(d.deadlocks[0][0].thread, "worker \"a\"");
  EXPECT_TRUE(d.deadlocks[0][0].monitor);
  EXPECT_EQ(d.deadlocks[0][0].object, 0x69ec19210u);
  EXPECT_EQ(d.deadlocks[0][0].klass, "java.lang.Object");
  EXPECT_EQ(d.deadlocks[0][0].held_by, "worker-b");
  EXPECT_EQ(d.deadlocks[0][1].held_by, "worker \"a\"");
  // The repeated stacks after the section add no thread.
  EXPECT_EQ(d.threads.size(), 4u);

  const std::vector<JavaWait> waits = FindJavaWaits(d);
  ASSERT_EQ(waits.size(), 2u);  // the Finalizer waits on a monitor it released: no wait
  EXPECT_EQ(waits[0].thread, 1u);
  EXPECT_EQ(waits[0].owner, 2u);
  EXPECT_EQ(waits[1].thread, 2u);
  EXPECT_EQ(waits[1].owner, 1u);
  EXPECT_EQ(JavaLockWords(waits[0]), "Java monitor (a java.lang.Object)");
}

// A ReentrantLock deadlock: the holders are known only from the JVM's deadlock section (a dump
// without -l lists no ownable synchronizers); with -l, from them.
TEST(ThreadDumpTest, ParkedOnReentrantLock) {
  const std::string header_a =
      "\"juc-a\" #12 prio=5 os_prio=0 cpu=0.11ms elapsed=1.89s tid=0x00007fb220141940 "
      "nid=0x2e2a waiting on condition  [0x00007fb1f872b000]\n"
      "   java.lang.Thread.State: WAITING (parking)\n"
      "\tat jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)\n"
      "\t- parking to wait for  <0x000000069ec19398> (a "
      "java.util.concurrent.locks.ReentrantLock$NonfairSync)\n"
      "\tat JucDeadlock.lockBoth(JucDeadlock.java:8)\n";
  const std::string header_b =
      "\"juc-b\" #13 prio=5 os_prio=0 cpu=0.51ms elapsed=1.89s tid=0x00007fb220142ce0 "
      "nid=0x2e2b waiting on condition  [0x00007fb1f862b000]\n"
      "   java.lang.Thread.State: WAITING (parking)\n"
      "\tat jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)\n"
      "\t- parking to wait for  <0x000000069ec19368> (a "
      "java.util.concurrent.locks.ReentrantLock$NonfairSync)\n"
      "\tat JucDeadlock.lockBoth(JucDeadlock.java:8)\n";
  const std::string section =
      "Found one Java-level deadlock:\n"
      "=============================\n"
      "\"juc-a\":\n"
      "  waiting for ownable synchronizer 0x000000069ec19398, (a "
      "java.util.concurrent.locks.ReentrantLock$NonfairSync),\n"
      "  which is held by \"juc-b\"\n"
      "\n"
      "\"juc-b\":\n"
      "  waiting for ownable synchronizer 0x000000069ec19368, (a "
      "java.util.concurrent.locks.ReentrantLock$NonfairSync),\n"
      "  which is held by \"juc-a\"\n";
  {
    const ThreadDump d = ParseThreadDump(header_a + "\n" + header_b + "\n" + section);
    ASSERT_EQ(d.deadlocks.size(), 1u);
    EXPECT_FALSE(d.deadlocks[0][0].monitor);
    EXPECT_EQ(d.deadlocks[0][0].object, 0x69ec19398u);
    const std::vector<JavaWait> waits = FindJavaWaits(d);
    ASSERT_EQ(waits.size(), 2u);
    EXPECT_FALSE(waits[0].monitor);
    EXPECT_EQ(waits[0].owner, 1u);
    EXPECT_EQ(waits[1].owner, 0u);
    EXPECT_EQ(JavaLockWords(waits[0]),
              "Java lock (a java.util.concurrent.locks.ReentrantLock$NonfairSync)");
  }
  {
    // -l: the holders from the ownable synchronizers, no deadlock section.
    const std::string owns_a =
        "\n   Locked ownable synchronizers:\n\t- <0x000000069ec19368> (a "
        "java.util.concurrent.locks.ReentrantLock$NonfairSync)\n\n";
    const std::string owns_b =
        "\n   Locked ownable synchronizers:\n\t- <0x000000069ec19398> (a "
        "java.util.concurrent.locks.ReentrantLock$NonfairSync)\n\n";
    const ThreadDump d = ParseThreadDump(header_a + owns_a + header_b + owns_b);
    EXPECT_TRUE(d.deadlocks.empty());
    ASSERT_EQ(d.threads[0].locks.size(), 2u);
    EXPECT_EQ(d.threads[0].locks[1].role, JavaLockRole::kOwnable);
    const std::vector<JavaWait> waits = FindJavaWaits(d);
    ASSERT_EQ(waits.size(), 2u);
    EXPECT_EQ(waits[0].owner, 1u);
    EXPECT_EQ(waits[1].owner, 0u);
  }
}

TEST(ThreadDumpTest, BadInputIsSkipped) {
  for (const char* text :
       {"", "\"", "\"\"", "\"x\" nid=0xzz\n\tat (\n\tat a.b(F.java:-3)\n\t- locked <\n",
        "Found one Java-level deadlock:\n\"a\":\n  which is held by\n",
        "\tat a.b(F.java:1)\n\t- waiting to lock <0x1>\n",
        "\"a\" nid=0x1\n\tat m(:99999999999)\n"}) {
    const ThreadDump d = ParseThreadDump(text);
    for (const JavaThread& t : d.threads) {
      for (const JavaFrame& f : t.frames) EXPECT_GE(f.line, 0);
    }
    FindJavaWaits(d);
  }
  const ThreadDump d = ParseThreadDump("\"x\" nid=0x10\n\tat a.b(F.java:-3)\n");
  ASSERT_EQ(d.threads.size(), 1u);
  EXPECT_EQ(d.threads[0].nid, 0x10u);
  ASSERT_EQ(d.threads[0].frames.size(), 1u);
  EXPECT_EQ(d.threads[0].frames[0].line, 0);
  EXPECT_EQ(d.threads[0].frames[0].file, "F.java:-3");
  // Bounds: threads and frames past the limits are dropped.
  std::string many;
  for (int i = 0; i < 10; ++i) many += "\"t\" nid=0x1\n\tat a.b(F.java:1)\n\tat a.c(F.java:2)\n";
  const ThreadDump bounded = ParseThreadDump(many, 3, 1);
  ASSERT_EQ(bounded.threads.size(), 3u);
  EXPECT_EQ(bounded.threads[2].frames.size(), 1u);
}

// Every prefix of a real dump and every byte of it changed: parsed without a crash, bounded.
TEST(ThreadDumpTest, CutAndMutatedDumps) {
  const std::string dump = kSyncDump;
  for (size_t cut = 0; cut <= dump.size(); ++cut) {
    const ThreadDump d = ParseThreadDump(std::string_view(dump).substr(0, cut));
    EXPECT_LE(d.threads.size(), 4u);
    FindJavaWaits(d);
  }
  for (size_t at = 0; at < dump.size(); ++at) {
    for (const char c : {'\0', '\n', '"', '<', '(', ':', '/', '\xff'}) {
      std::string mutated = dump;
      mutated[at] = c;
      const ThreadDump d = ParseThreadDump(mutated);
      EXPECT_LE(d.threads.size(), 5u);
      FindJavaWaits(d);
    }
  }
}

}  // namespace
}  // namespace hangwatch::jvm
