// logLocalTopology, the call the communicator makes at init: a summary line at INFO, and
// nothing at all (no discovery either) below it. Registered twice: as is, and with COLL_DEBUG=INFO.
#include <gtest/gtest.h>

#include "common/logging.h"
#include "topo/topology_log.h"

namespace coll {
namespace topo {
namespace {

TEST(TopologyLog, SummaryAtInfoAndSilenceBelow) {
  ::testing::internal::CaptureStderr();
  logLocalTopology();
  std::string logged = ::testing::internal::GetCapturedStderr();
  if (logEnabled(LogLevel::kInfo, LogSubsys::kInit)) {
    EXPECT_NE(logged.find("[coll INFO] topology: host "), std::string::npos) << logged;
    EXPECT_NE(logged.find(" core"), std::string::npos) << logged;
  } else {
    EXPECT_EQ(logged, "");
  }
}

}  // namespace
}  // namespace topo
}  // namespace coll
