// FormatPprof in-process on a hand-made report: the profile decoded again with the same generated
// classes (profile.proto): sample types and values, labels, mappings with build-ids, inlined
// frames as one location, recursion as several, unnamed frames left to a symbolizer.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "profile.pb.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

namespace pp = perftools::profiles;

std::string Gunzip(const std::string& in) {
  z_stream z = {};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(in.size() * 20 + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

Frame F(uint64_t addr, const std::string& symbol, const std::string& file = "", int line = 0,
        const std::string& module = "/srv/app") {
  Frame f;
  f.addr = addr;
  f.module = module;
  f.build_id = module.empty() ? "" : "abcdef0123";
  f.offset = module.empty() ? addr : addr - 0x10000;
  f.symbol = symbol;
  f.file = file;
  f.line = line;
  return f;
}

TEST(FormatPprof, ProfileProtoWithLabelsMappingsAndInlines) {
  Report report;
  HangRecord h;
  h.pid = 77;
  h.host = "web-3";
  h.process = "/srv/app";
  h.hang_class = HangClass::kBlocked;
  h.signature = "0123456789abcdef";
  h.sample_interval_ms = 10;
  h.start_unix_ms = 1763700000000;
  h.duration_ms = 500;
  h.cause.kind = CauseKind::kLock;
  Stack s;
  s.count = 30;
  s.cpu_us = 1500;
  s.frames = {
      F(0x11000, "Inner()", "a.h", 3),   // inlined into Outer() at the same address
      F(0x11000, "Outer()", "a.cc", 9),  //
      F(0x12000, "Recurse()", "r.cc", 5),
      F(0x12000, "Recurse()", "r.cc", 5),  // recursion: the same return address twice
      F(0x13000, ""),                      // no name: for a symbolizer
      F(0x7000, "JS:*tick", "", 0, ""),    // JIT code, outside every module
  };
  h.stacks = {s};
  Stack empty;  // no samples: not a sample of the profile
  h.stacks.push_back(empty);
  report.hangs.push_back(h);

  std::string gz, error;
  ASSERT_TRUE(FormatPprof(report, &gz, &error)) << error;
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  pp::Profile p;
  ASSERT_TRUE(p.ParseFromString(Gunzip(gz)));
  auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  EXPECT_EQ(str(0), "");
  ASSERT_EQ(p.sample_type_size(), 3);
  EXPECT_EQ(str(p.sample_type(0).type()) + "/" + str(p.sample_type(0).unit()), "samples/count");
  EXPECT_EQ(str(p.sample_type(1).type()) + "/" + str(p.sample_type(1).unit()), "wall/nanoseconds");
  EXPECT_EQ(str(p.sample_type(2).type()) + "/" + str(p.sample_type(2).unit()), "cpu/nanoseconds");
  EXPECT_EQ(p.period(), 10'000'000);
  EXPECT_EQ(p.time_nanos(), 1763700000000LL * 1'000'000);

  ASSERT_EQ(p.sample_size(), 1);
  const pp::Sample& sample = p.sample(0);
  ASSERT_EQ(sample.value_size(), 3);
  EXPECT_EQ(sample.value(0), 30);
  EXPECT_EQ(sample.value(1), 30 * 10'000'000LL);
  EXPECT_EQ(sample.value(2), 1'500'000);
  std::map<std::string, std::string> labels;
  int64_t pid = -1;
  for (const pp::Label& l : sample.label()) {
    if (str(l.key()) == "pid") {
      pid = l.num();
    } else {
      labels[str(l.key())] = str(l.str());
    }
  }
  EXPECT_EQ(pid, 77);
  EXPECT_EQ(labels["class"], "blocked");
  EXPECT_EQ(labels["signature"], "0123456789abcdef");
  EXPECT_EQ(labels["host"], "web-3");
  EXPECT_EQ(labels["process"], "app");
  EXPECT_EQ(labels["cause"], "lock");

  // Locations: [Inner+Outer], Recurse, Recurse, unnamed, JIT.
  ASSERT_EQ(sample.location_id_size(), 5);
  auto loc = [&](int i) -> const pp::Location& {
    return p.location(static_cast<int>(sample.location_id(i) - 1));
  };
  auto fn = [&](const pp::Line& l) {
    return str(p.function(static_cast<int>(l.function_id() - 1)).name());
  };
  ASSERT_EQ(loc(0).line_size(), 2);
  EXPECT_EQ(fn(loc(0).line(0)), "Inner()");
  EXPECT_EQ(loc(0).line(0).line(), 3);
  EXPECT_EQ(fn(loc(0).line(1)), "Outer()");
  EXPECT_EQ(loc(0).address(), 0x11000u);
  EXPECT_EQ(sample.location_id(1), sample.location_id(2)) << "one location, twice";
  ASSERT_EQ(loc(1).line_size(), 1);
  EXPECT_EQ(fn(loc(1).line(0)), "Recurse()");
  EXPECT_EQ(loc(3).line_size(), 0);
  EXPECT_EQ(loc(4).mapping_id(), 0u);
  EXPECT_EQ(fn(loc(4).line(0)), "JS:*tick");

  ASSERT_EQ(p.mapping_size(), 1);
  const pp::Mapping& m = p.mapping(0);
  EXPECT_EQ(str(m.filename()), "/srv/app");
  EXPECT_EQ(str(m.build_id()), "abcdef0123");
  EXPECT_EQ(m.memory_start(), 0x10000u);
  EXPECT_GT(m.memory_limit(), 0x13000u);
  EXPECT_FALSE(m.has_functions()) << "one frame has no name";
  EXPECT_EQ(loc(0).mapping_id(), m.id());
}

}  // namespace
}  // namespace hangwatch::tools
