// The socket transport fixes its sockets' buffers only where the kernel's maxima let the whole
// figure through (kernelAllowsSocketBuffers, transport/net/net_domain.h): checked against the
// maxima read here by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "transport/net/net_domain.h"

namespace coll {
namespace transport {
namespace {

long long procSysValue(const char* path) {
  FILE* file = fopen(path, "r");
  if (file == nullptr) return -1;
  long long value = -1;
  if (fscanf(file, "%lld", &value) != 1) value = -1;
  fclose(file);
  return value;
}

TEST(NetSocketBuffers, AllowedUpToTheKernelsMaxima) {
  const long long wmemMax = procSysValue("/proc/sys/net/core/wmem_max");
  const long long rmemMax = procSysValue("/proc/sys/net/core/rmem_max");
  ASSERT_GT(wmemMax, 0) << "cannot read /proc/sys/net/core/wmem_max";
  ASSERT_GT(rmemMax, 0) << "cannot read /proc/sys/net/core/rmem_max";
  const long long both = std::min(wmemMax, rmemMax);
  EXPECT_TRUE(kernelAllowsSocketBuffers(static_cast<size_t>(both)));
  EXPECT_TRUE(kernelAllowsSocketBuffers(static_cast<size_t>(both) / 2));
  EXPECT_FALSE(kernelAllowsSocketBuffers(static_cast<size_t>(both) + 1));
  EXPECT_FALSE(kernelAllowsSocketBuffers(static_cast<size_t>(std::max(wmemMax, rmemMax)) + 1));
}

}  // namespace
}  // namespace transport
}  // namespace coll
