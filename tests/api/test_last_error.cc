// collGetLastError(comm): a thread that drives two communicators asks about each and gets that
// one's message, never the other's; NULL asks for the thread's latest; another thread's errors
// are not this thread's.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "bootstrap/memory_store.h"
#include "collective.h"
#include "src/api_internal.h"

namespace {

collComm_t soloCommunicator() {
  collComm_t comm = nullptr;
  auto store = std::make_shared<coll::bootstrap::MemoryStore>();
  EXPECT_EQ(coll::commInitWithStore(&comm, store, 1, 0, nullptr), collSuccess) << collGetLastError(nullptr);
  return comm;
}

TEST(LastError, EachCommunicatorGetsItsOwnMessage) {
  collComm_t a = soloCommunicator(), b = soloCommunicator();
  float x = 1;
  // A bad root on a, then a bad datatype on b.
  EXPECT_EQ(collBroadcast(&x, &x, 1, collFloat, 5, a, nullptr), collInvalidArgument);
  EXPECT_EQ(collAllReduce(&x, &x, 1, static_cast<collDataType_t>(77), collSum, b, nullptr), collInvalidArgument);
  std::string aboutA = collGetLastError(a), aboutB = collGetLastError(b), latest = collGetLastError(nullptr);
  EXPECT_NE(aboutA.find("collBroadcast: root 5"), std::string::npos) << aboutA;
  EXPECT_NE(aboutB.find("collAllReduce: datatype 77"), std::string::npos) << aboutB;
  EXPECT_EQ(latest, aboutB);
  // A failure that concerns no communicator is everyone's latest.
  EXPECT_EQ(collCommCount(nullptr, nullptr), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError(a)).find("collCommCount"), std::string::npos) << collGetLastError(a);
  EXPECT_EQ(collCommDestroy(a), collSuccess);
  EXPECT_EQ(collCommDestroy(b), collSuccess);
}

TEST(LastError, ACommunicatorWithoutFailuresHasNone) {
  collComm_t a = soloCommunicator(), b = soloCommunicator();
  float x = 1;
  EXPECT_EQ(collBroadcast(&x, &x, 1, collFloat, 9, a, nullptr), collInvalidArgument);
  EXPECT_EQ(std::string(collGetLastError(b)), "");
  EXPECT_NE(std::string(collGetLastError(a)).find("root 9"), std::string::npos);
  EXPECT_EQ(collCommDestroy(a), collSuccess);
  EXPECT_EQ(collCommDestroy(b), collSuccess);
}

TEST(LastError, IsPerThread) {
  collComm_t a = soloCommunicator();
  float x = 1;
  EXPECT_EQ(collBroadcast(&x, &x, 1, collFloat, 3, a, nullptr), collInvalidArgument);
  std::string fromOtherThread = "unset";
  std::thread([&] { fromOtherThread = collGetLastError(a); }).join();
  EXPECT_EQ(fromOtherThread, "");
  EXPECT_NE(std::string(collGetLastError(a)).find("root 3"), std::string::npos);
  EXPECT_EQ(collCommDestroy(a), collSuccess);
}

}  // namespace
