// The socket transport's setup stops waiting for a peer as soon as the communicator's setup watch
// says a rank left the job (DomainArgs::setupWatch), on both sides of a connection: the listener
// waiting for a dialler that never comes, and the dialler retrying a listener that is gone.
// Before the watch, both waited for the whole init deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "transport/net/net_domain.h"

namespace coll {
namespace transport {
namespace {

using coll::Clock;

class NetSetupWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    peers_.resize(2);
    for (int r = 0; r < 2; ++r) peers_[r].rank = r;
    settings_.netFifoDepth = 4;
    settings_.slotBytes = 4096;
    settings_.timeoutMs = 30000;
    settings_.socketsPerPeer = 1;
    settings_.jobSecret.fill(0x17);
  }
  // Rank `rank` of 2 whose watch throws once `left_` is set (as the store's departure notice would).
  DomainArgs argsFor(int rank) {
    DomainArgs args;
    args.rank = rank;
    args.nranks = 2;
    args.peers = &peers_;
    args.members = {1 - rank};
    args.settings = &settings_;
    args.setupWatch = [this] {
      ++watched_;
      if (left_.load()) throwError(collRemoteError, "rank %d lost its connection to the rendezvous store", gone_);
    };
    return args;
  }
  // Runs connect() with a 30 s deadline while another thread sets `left_` after 300 ms; returns
  // the error connect() ended with and, in *seconds, how long it took.
  std::string connectUntilTheWatchFires(NetDomain& domain, const std::vector<std::string>& cards, double* seconds) {
    std::thread leaver([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      left_.store(true);
    });
    const auto start = Clock::now();
    std::string error;
    try {
      domain.connect(0, cards, coll::deadlineAfter(std::chrono::seconds(30)));
      error = "connect() returned";
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collRemoteError);
      error = e.what();
    }
    *seconds = std::chrono::duration<double>(Clock::now() - start).count();
    leaver.join();
    return error;
  }

  std::vector<PeerInfo> peers_;
  TransportSettings settings_;
  std::atomic<bool> left_{false};
  std::atomic<int> watched_{0};
  int gone_ = -1;
};

TEST_F(NetSetupWatchTest, AListenerStopsWaitingForADiallerThatLeft) {
  NetDomain listener(argsFor(0));
  gone_ = 1;
  const std::string card = listener.card(0);
  double seconds = 0;
  const std::string error = connectUntilTheWatchFires(listener, {card, ""}, &seconds);
  EXPECT_NE(error.find("rank 1 lost its connection to the rendezvous store"), std::string::npos) << error;
  EXPECT_LT(seconds, 2.0) << error;
  EXPECT_GE(watched_.load(), 1);
}

TEST_F(NetSetupWatchTest, ADiallerStopsRetryingAListenerThatLeft) {
  std::string card;
  {
    NetDomain gone(argsFor(0));
    card = gone.card(0);
  }  // its listener is closed: every connect to the card's port is refused, and retried
  NetDomain dialler(argsFor(1));
  gone_ = 0;
  double seconds = 0;
  const std::string error = connectUntilTheWatchFires(dialler, {card, dialler.card(0)}, &seconds);
  EXPECT_NE(error.find("rank 0 lost its connection to the rendezvous store"), std::string::npos) << error;
  EXPECT_LT(seconds, 2.0) << error;
}

}  // namespace
}  // namespace transport
}  // namespace coll
