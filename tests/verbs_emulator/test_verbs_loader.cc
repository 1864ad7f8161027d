// The libibverbs loader: where verbs cannot be used it says why, in the words the INFO log shows;
// where it can (the emulator), the device and its port answer as a device would.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/verbs_emulator/verbs_test_support.h"
#include "transport/verbs/verbs_api.h"

namespace coll {
namespace transport {
namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

TEST(VerbsLoader, NamedLibraryMissingIsUnavailableWithReason) {
  setenv("COLL_VERBS_LIBRARY", "/nonexistent/libverbs-nothing.so", 1);
  EXPECT_EQ(verbsLibraryName(), "/nonexistent/libverbs-nothing.so");
  VerbsAvailability v = probeVerbs();
  unsetenv("COLL_VERBS_LIBRARY");
  EXPECT_FALSE(v.available());
  EXPECT_TRUE(startsWith(v.reason, "no /nonexistent/libverbs-nothing.so: ")) << v.reason;
  EXPECT_EQ(verbsLibraryName(), "libibverbs.so.1");
}

TEST(VerbsLoader, LibraryWithoutTheEntryPointsIsRefused) {
  std::string reason;
  EXPECT_EQ(loadVerbsApi("libc.so.6", &reason), nullptr);
  EXPECT_EQ(reason, "libc.so.6 loaded, but it lacks ibv_get_device_list");
}

// This machine has rdma-core but no RDMA device (and no kernel RDMA support); elsewhere the test
// says what it found and skips.
TEST(VerbsLoader, LibibverbsWithoutDeviceIsUnavailableWithReason) {
  VerbsAvailability v = probeVerbs("libibverbs.so.1");
  if (v.available()) GTEST_SKIP() << "this machine has an RDMA device: " << v.devices[0];
  EXPECT_TRUE(v.reason.find("libibverbs loaded, no RDMA device") == 0 || startsWith(v.reason, "no libibverbs.so.1: "))
      << v.reason;
}

TEST(VerbsLoader, EmulatorHasOneDeviceWithAnActivePort) {
  VerbsAvailability v = probeVerbs(COLL_VERBS_EMULATOR_PATH);
  ASSERT_TRUE(v.available()) << v.reason;
  ASSERT_EQ(v.devices, std::vector<std::string>{"emu0"});
  const VerbsApi& api = *v.api;
  int count = 0;
  ibv_device** list = api.getDeviceList(&count);
  ASSERT_EQ(count, 1);
  ibv_context* ctx = api.openDevice(list[0]);
  api.freeDeviceList(list);
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr dev{};
  EXPECT_EQ(api.queryDevice(ctx, &dev), 0);
  EXPECT_EQ(dev.phys_port_cnt, 1);
  ibv_port_attr port{};
  port.port_cap_flags2 = 0xffff;  // beyond the older struct: queryPort() clears it, the emulator leaves it
  EXPECT_EQ(api.queryPort(ctx, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.lid, 1);
  EXPECT_EQ(port.port_cap_flags2, 0);
  EXPECT_NE(api.queryPort(ctx, 2, &port), 0);
  ibv_gid gid{};
  EXPECT_EQ(api.queryGid(ctx, 1, 0, &gid), 0);
  EXPECT_EQ(gid.raw[0], 0xfe);
  EXPECT_EQ(api.closeDevice(ctx), 0);
}

}  // namespace
}  // namespace transport
}  // namespace coll
