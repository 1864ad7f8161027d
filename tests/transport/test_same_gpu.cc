// Which P2P ranks share a GPU (transport/p2p/same_gpu.h): by PCI bus id, whatever ordinal each
// process gives it, so that one GPU per process (every rank's GPU is its ordinal 0) is not taken
// for one shared GPU, and one GPU under two ordinals is.
#include <gtest/gtest.h>

#include "transport/p2p/same_gpu.h"

namespace coll {
namespace transport {
namespace {

TEST(SameGpu, OneGpuPerProcessIsNotOneGpuAlthoughEveryOrdinalIsZero) {
  EXPECT_FALSE(sameGpu("0000:18:00.0", 0, "0000:3B:00.0", 0));
  EXPECT_NE(gpuKey("0000:18:00.0", 0), gpuKey("0000:3B:00.0", 0));
}

TEST(SameGpu, OneGpuUnderTwoOrdinalsIsOneGpu) {
  EXPECT_TRUE(sameGpu("0000:3B:00.0", 3, "0000:3b:00.0", 0));  // case differs: still one bus id
  EXPECT_EQ(gpuKey("0000:3B:00.0", 3), gpuKey("0000:3b:00.0", 0));
}

TEST(SameGpu, OrdinalsDecideOnlyWhereNoBusIdIsKnown) {
  EXPECT_TRUE(sameGpu("", 1, "", 1));
  EXPECT_FALSE(sameGpu("", 1, "", 2));
  // One side known, the other not: nothing says they are one GPU.
  EXPECT_FALSE(sameGpu("0000:18:00.0", 0, "", 0));
  EXPECT_FALSE(sameGpu("", 0, "0000:18:00.0", 0));
  EXPECT_NE(gpuKey("", 0), gpuKey("0000:18:00.0", 0));
}

}  // namespace
}  // namespace transport
}  // namespace coll
