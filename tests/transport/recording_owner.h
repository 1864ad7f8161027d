// The owner a socket-connection test hands its connections: wakes nobody (the test pumps by
// hand) and keeps the last failure a connection reported, for the test to check.
#pragma once

#include <string>

#include "transport/net/net_connection.h"

namespace coll {
namespace transport {

struct RecordingOwner : NetConnectionOwner {
  void wakeProgress() override {}
  void channelFailed(int peer, const std::string& reason) override {
    failedPeer = peer;
    failure = reason;
  }
  std::string failure;
  int failedPeer = -1;
};

}  // namespace transport
}  // namespace coll
