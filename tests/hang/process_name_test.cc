// hang/model/process_name: the process_name of a report, from argv[0] as programs rewrite it.
#include "hang/model/process_name.h"

#include <gtest/gtest.h>

namespace hangwatch::agent {
namespace {

TEST(ProcessNameTest, ProcessNameIsArgv0sFileName) {
  EXPECT_EQ(ProcessNameFromArgv0("/usr/bin/redis-server"), "redis-server");
  EXPECT_EQ(ProcessNameFromArgv0("/usr/bin/redis-server 127.0.0.1:6379"), "redis-server");
  EXPECT_EQ(ProcessNameFromArgv0("postgres: checkpointer "), "postgres");
  EXPECT_EQ(ProcessNameFromArgv0("nginx: worker process"), "nginx");
  EXPECT_EQ(ProcessNameFromArgv0("python3"), "python3");
  EXPECT_EQ(ProcessNameFromArgv0("/opt/app/"), "app");
  EXPECT_EQ(ProcessNameFromArgv0(""), "");
  EXPECT_EQ(ThisProcessName(), "process_name_test");
}

}  // namespace
}  // namespace hangwatch::agent
