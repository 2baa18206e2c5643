// jvm/jvm_process.h's parsers: SigCgt, NSpid, users, state, and where -XX:+DisableAttachMechanism
// may be (command line and the option variables, in HotSpot's order); jvm/attach_client.h's
// decision to send no signal.
#include "jvm/jvm_process.h"

#include <gtest/gtest.h>

#include <string>

#include "jvm/attach_client.h"

namespace hangwatch::jvm {
namespace {

using namespace std::string_literals;

std::string Status(const char* sigcgt, const char* state = "S (sleeping)",
                   const char* nspid = "NSpid:\t4242\t7\n") {
  return "Name:\tjava\nState:\t"s + state + "\nTgid:\t4242\n" + nspid +
         "Uid:\t1000\t1001\t1001\t1001\nGid:\t100\t101\t101\t101\nSigBlk:\t0000000000000000\n"
         "SigIgn:\t0000000000000000\nSigCgt:\t" +
         sigcgt + "\n";
}

TEST(JvmProcessTest, Status) {
  JvmProcessFacts f;
  // A JVM's usual set (SIGQUIT among them) and -Xrs's (no SIGQUIT, bit 2).
  ASSERT_TRUE(ParseJvmStatus(Status("0000000201005ccf"), &f));
  EXPECT_TRUE(f.catches_sigquit);
  EXPECT_EQ(f.ns_pid, 7);
  EXPECT_EQ(f.uid, 1001u);
  EXPECT_EQ(f.gid, 101u);
  EXPECT_EQ(f.state, 'S');
  ASSERT_TRUE(ParseJvmStatus(Status("0000000201005ccb", "T (stopped)", ""), &f));
  EXPECT_FALSE(f.catches_sigquit);
  EXPECT_EQ(f.state, 'T');
  EXPECT_EQ(f.ns_pid, 0);
  EXPECT_FALSE(ParseJvmStatus("Name:\tjava\n", &f));
  EXPECT_FALSE(ParseJvmStatus(Status("zz"), &f));
}

TEST(JvmProcessTest, AttachSetting) {
  EXPECT_EQ(AttachSettingIn("java\0-XX:+DisableAttachMechanism\0Main\0"s, '\0'), 1);
  EXPECT_EQ(
      AttachSettingIn("java\0-XX:+DisableAttachMechanism\0-XX:-DisableAttachMechanism\0"s, '\0'),
      -1);
  EXPECT_EQ(AttachSettingIn("java\0-XX:+DisableAttachMechanismX\0"s, '\0'), 0);
  EXPECT_EQ(AttachSettingIn("-Xmx1g\t-XX:+DisableAttachMechanism", ' '), 1);
  std::string v;
  const std::string env = "A=1\0JAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism\0B=\0"s;
  EXPECT_TRUE(EnvironValue(env, "JAVA_TOOL_OPTIONS", &v));
  EXPECT_EQ(v, "-XX:+DisableAttachMechanism");
  EXPECT_TRUE(EnvironValue(env, "B", &v));
  EXPECT_EQ(v, "");
  EXPECT_FALSE(EnvironValue(env, "JAVA", &v));

  JvmProcessFacts f;
  DecideAttachDisabled("java\0Main\0"s, env, &f);
  EXPECT_TRUE(f.attach_disabled);
  EXPECT_EQ(f.attach_disabled_in, "JAVA_TOOL_OPTIONS");
  // The command line overrides JAVA_TOOL_OPTIONS, _JAVA_OPTIONS overrides the command line.
  DecideAttachDisabled("java\0-XX:-DisableAttachMechanism\0Main\0"s, env, &f);
  EXPECT_FALSE(f.attach_disabled);
  DecideAttachDisabled("java\0-XX:-DisableAttachMechanism\0"s,
                       env + "_JAVA_OPTIONS=-XX:+DisableAttachMechanism"s, &f);
  EXPECT_TRUE(f.attach_disabled);
  EXPECT_EQ(f.attach_disabled_in, "_JAVA_OPTIONS");
  DecideAttachDisabled("java\0Main\0"s, "JDK_JAVA_OPTIONS=-XX:+DisableAttachMechanism\0"s, &f);
  EXPECT_EQ(f.attach_disabled_in, "JDK_JAVA_OPTIONS");
}

TEST(JvmProcessTest, WhyNoSignal) {
  JvmProcessFacts f;
  f.catches_sigquit = true;
  f.environ_readable = true;
  f.state = 'S';
  EXPECT_EQ(WhyNoSignal(f), "");
  f.state = 'T';
  EXPECT_NE(WhyNoSignal(f).find("stopped"), std::string::npos);
  f.state = 'S';
  f.attach_disabled = true;
  f.attach_disabled_in = "the command line";
  EXPECT_NE(WhyNoSignal(f).find("-XX:+DisableAttachMechanism in the command line"),
            std::string::npos);
  f.catches_sigquit = false;
  EXPECT_NE(WhyNoSignal(f).find("-Xrs"), std::string::npos);
}

}  // namespace
}  // namespace hangwatch::jvm
