// The verbs emulator behaves as reliable-connected QPs between processes do: a write with
// immediate lands in the peer's registered memory and completes on both sides; a wrong key or a
// range outside the region, a peer that is gone or whose QP never left INIT, end in the error
// completion a device gives, never in a hang; the QP state machine refuses steps out of order.
// Each two-process test forks a responder: it connects, posts a receive and reports what its CQ
// shows once the test has written (or the test kills it).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "tests/verbs_emulator/verbs_test_support.h"

namespace coll {
namespace verbs_test {
namespace {

constexpr size_t kBytes = 4096;
constexpr int kWaitMs = 10000;  // bounds every wait; far beyond what any step takes under load
const uint32_t kImm = htonl(0xC0FFEE01);

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 7 + 3); }

// What the responder is told after the write, and how it answers.
enum Expect : char { kExpectImmediate = 'i', kExpectNothing = 'n', kExpectUntouched = 'u' };

int respond(Channel* ch, int lastState, bool deregister) {
  ch->becomeChild();
  VerbsEndpoint ep(loadEmulator(), kBytes);
  ConnectionInfo mine = ep.info(), theirs;
  ch->send(&mine, sizeof(mine));
  ch->receive(&theirs, sizeof(theirs));
  ep.connect(theirs.qpn, lastState);
  if (lastState != IBV_QPS_INIT) ep.postRecv(7);
  // The writer keeps the key it was given, as a sender keeps a landing's after the receiver withdrew it.
  if (deregister) ep.deregister();
  char ready = 'r', expect = 0;
  ch->send(&ready, 1);
  ch->receive(&expect, 1, kWaitMs);
  ibv_wc wc{};
  if (expect == kExpectNothing) return ep.pollOne(&wc, 50) ? 10 : 0;
  if (expect == kExpectUntouched) {
    if (ep.pollOne(&wc, 50)) return 10;
    for (size_t i = 0; i < kBytes; i++)
      if (ep.buffer()[i] != 0) return 15;
    return 0;
  }
  if (!ep.pollOne(&wc, kWaitMs)) return 11;
  if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || wc.wr_id != 7) return 12;
  if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0 || wc.imm_data != kImm || wc.byte_len != kBytes) return 13;
  for (size_t i = 0; i < kBytes; i++)
    if (ep.buffer()[i] != pattern(i)) return 14;
  return 0;
}

// The test's side: a connected writer and a forked responder, ready for the write.
struct Pair {
  explicit Pair(int responderState = IBV_QPS_RTS, bool deregistered = false) : writer(loadEmulator(), kBytes) {
    for (size_t i = 0; i < kBytes; i++) writer.buffer()[i] = pattern(i);
    child = forkChild([this, responderState, deregistered] { return respond(&ch, responderState, deregistered); });
    ch.becomeParent();
    ConnectionInfo mine = writer.info();
    ch.receive(&peer, sizeof(peer));
    ch.send(&mine, sizeof(mine));
    writer.connect(peer.qpn);
    char ready = 0;
    ch.receive(&ready, 1);
  }
  ~Pair() {
    if (child > 0) waitChild(child, kWaitMs);
  }
  // Tells the responder what to expect and returns its verdict (0: as expected).
  int finish(Expect expect) {
    ch.send(&expect, 1);
    int status = waitChild(child, kWaitMs);
    child = -1;
    return status;
  }
  ibv_wc writerCompletion() {
    ibv_wc wc{};
    EXPECT_TRUE(writer.pollOne(&wc, kWaitMs)) << "no completion on the writer";
    return wc;
  }

  VerbsEndpoint writer;
  Channel ch;
  ConnectionInfo peer;
  pid_t child = -1;
};

TEST(VerbsEmulator, WriteWithImmediateBetweenProcesses) {
  Pair pair;
  ASSERT_EQ(pair.writer.postWrite(pair.peer, kBytes, &kImm), 0);
  ibv_wc wc = pair.writerCompletion();
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(pair.finish(kExpectImmediate), 0) << "the responder saw another completion or other bytes";
}

TEST(VerbsEmulator, InlineWriteNeedsNoKeyAndRespectsTheInlineLimit) {
  Pair pair;
  EXPECT_EQ(pair.writer.postWrite(pair.peer, 65, nullptr, /*inlineData=*/true), EINVAL);  // cap is 64
  ASSERT_EQ(pair.writer.postWrite(pair.peer, 64, nullptr, /*inlineData=*/true), 0);
  EXPECT_EQ(pair.writerCompletion().status, IBV_WC_SUCCESS);
  EXPECT_EQ(pair.finish(kExpectNothing), 0) << "a write without immediate consumed a receive";
}

TEST(VerbsEmulator, WrongRkeyGivesRemoteAccessError) {
  Pair pair;
  ConnectionInfo wrong = pair.peer;
  wrong.rkey ^= 0x5a5a0000;
  ASSERT_EQ(pair.writer.postWrite(wrong, kBytes, &kImm), 0);
  EXPECT_EQ(pair.writerCompletion().status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(pair.writer.qp()->state, IBV_QPS_ERR);
  EXPECT_EQ(pair.finish(kExpectNothing), 0);
}

TEST(VerbsEmulator, WriteUnderADeregisteredKeyGivesRemoteAccessError) {
  // What the verbs transport's zero-copy receives rely on (verbs_landing.h): once the receiver
  // deregistered its buffer, a write under the old key fails at the writer and lands nowhere.
  Pair pair(IBV_QPS_RTS, /*deregistered=*/true);
  ASSERT_EQ(pair.writer.postWrite(pair.peer, kBytes, &kImm), 0);
  EXPECT_EQ(pair.writerCompletion().status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(pair.writer.qp()->state, IBV_QPS_ERR);
  EXPECT_EQ(pair.finish(kExpectUntouched), 0) << "the write consumed a receive or changed the buffer";
}

TEST(VerbsEmulator, WriteBeyondTheRegionGivesRemoteAccessError) {
  Pair pair;
  ConnectionInfo shifted = pair.peer;
  shifted.addr += 1;  // the last byte falls outside the region
  ASSERT_EQ(pair.writer.postWrite(shifted, kBytes, &kImm), 0);
  EXPECT_EQ(pair.writerCompletion().status, IBV_WC_REM_ACCESS_ERR);
  // The QP is in error now: what follows is flushed.
  ASSERT_EQ(pair.writer.postWrite(pair.peer, kBytes, &kImm), 0);
  EXPECT_EQ(pair.writerCompletion().status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(pair.finish(kExpectNothing), 0);
}

TEST(VerbsEmulator, PeerQpNeverReadyGivesRetryExceeded) {
  Pair pair(/*responderState=*/IBV_QPS_INIT);
  ASSERT_EQ(pair.writer.postWrite(pair.peer, kBytes, &kImm), 0);
  EXPECT_EQ(pair.writerCompletion().status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(pair.finish(kExpectNothing), 0);
}

TEST(VerbsEmulator, KilledPeerGivesRetryExceeded) {
  Pair pair;
  kill(pair.child, SIGKILL);
  waitChild(pair.child, kWaitMs);
  pair.child = -1;
  ASSERT_EQ(pair.writer.postWrite(pair.peer, kBytes, &kImm), 0);
  EXPECT_EQ(pair.writerCompletion().status, IBV_WC_RETRY_EXC_ERR);
}

TEST(VerbsEmulator, QpTransitionsOutOfOrderFail) {
  VerbsEndpoint ep(loadEmulator(), kBytes);
  const transport::VerbsApi& api = ep.api();
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.dest_qp_num = ep.qp()->qp_num;
  int rtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  EXPECT_EQ(api.modifyQp(ep.qp(), &attr, rtrMask), EINVAL) << "RESET -> RTR";
  attr.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(api.modifyQp(ep.qp(), &attr, IBV_QP_STATE), EINVAL) << "RESET -> RTS";
  attr.qp_state = IBV_QPS_INIT;
  EXPECT_EQ(api.modifyQp(ep.qp(), &attr, IBV_QP_STATE), EINVAL) << "INIT without port, pkey and access";
  EXPECT_EQ(ep.qp()->state, IBV_QPS_RESET);
  ep.connect(ep.qp()->qp_num, IBV_QPS_INIT);
  EXPECT_EQ(ep.postWrite(ep.info(), 8), EINVAL) << "post_send before RTS";
  attr.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(api.modifyQp(ep.qp(), &attr, IBV_QP_STATE), EINVAL) << "INIT -> RTS";
  EXPECT_EQ(ep.qp()->state, IBV_QPS_INIT);
}

}  // namespace
}  // namespace verbs_test
}  // namespace coll
