// Every rank's call buffers mapped in this process (transport/ipc_call_buffers.h), for the direct
// all-reduce between rank processes under MPS, against the fake IPC driver: three ranks, 0 and 2
// threads of one process, 1 another process whose buffer sits at an address this process also
// uses. Peers' buffers in other processes are mapped (once per allocation, then reused), those of
// this process used as they are; a record that is short, another rank's, of another call size or
// describing a buffer too small for the call is refused naming its rank; a buffer too small for
// the call is refused before anything is sent, yet its rank joins the exchange (the peers fail
// naming it); a full cache waits for the kernels first.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/common/expect_coll_error.h"
#include "tests/transport/fake_ipc_driver.h"
#include "transport/ipc_call_buffers.h"

namespace coll {
namespace transport {
namespace {

using testing_ipc::FakeDriver;

char* at(uint64_t address) { return reinterpret_cast<char*>(address); }

struct ThreeRanks {
  FakeDriver processA, processB;  // ranks 0 and 2; rank 1
  IpcCallBuffers rank0{processA, 0, {true, false, true}, 8};
  IpcCallBuffers rank1{processB, 1, {false, true, false}, 8};
  IpcCallBuffers rank2{processA, 2, {true, false, true}, 8};
  int quiesced = 0;
  std::function<void()> quiesce = [this] { ++quiesced; };
  ThreeRanks() {
    processA.allocate(0x10000, 4096);
    processA.allocate(0x20000, 4096);
    processB.allocate(0x10000, 8192);  // the same address, in another process
  }
  std::vector<std::vector<uint8_t>> records(uint64_t bytes) {
    return {rank0.describe(at(0x10040), at(0x10040), bytes), rank1.describe(at(0x10080), at(0x10800), bytes),
            rank2.describe(at(0x20000), at(0x20100), bytes)};
  }
};

TEST(IpcCallBuffers, PeersInOtherProcessesAreMappedThreadsUsedAsTheyAre) {
  ThreeRanks t;
  const char* sends[3] = {};
  char* recvs[3] = {};
  for (int call = 0; call < 3; ++call) {
    t.rank0.map(t.records(1024), at(0x10040), at(0x10040), 1024, sends, recvs, t.quiesce);
    EXPECT_EQ(sends[0], at(0x10040));
    EXPECT_EQ(recvs[0], at(0x10040));
    EXPECT_EQ(sends[2], at(0x20000));  // a thread of this process: its own address
    EXPECT_EQ(recvs[2], at(0x20100));
    // Rank 1's one allocation, mapped once (send and receive inside it), reused by later calls.
    ASSERT_EQ(t.processA.openMappings.size(), 1u);
    const uint64_t mapped = reinterpret_cast<uint64_t>(t.processA.openMappings.begin()->first);
    EXPECT_NE(mapped, 0x10000u) << "the peer's address is not this process's";
    EXPECT_EQ(sends[1], at(mapped + 0x80));
    EXPECT_EQ(recvs[1], at(mapped + 0x800));
  }
  EXPECT_EQ(t.processA.opens, 1);
  EXPECT_EQ(t.quiesced, 0);
}

// The call is refused with `code` and a message that holds `fragment`.
void expectRefusal(collResult_t code, const std::function<void()>& call, const std::string& fragment) {
  const std::string message = colltest::expectCollError(code, call);
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
}

void expectRemoteError(const std::function<void()>& call, const std::string& fragment) {
  expectRefusal(collRemoteError, call, fragment);
}

TEST(IpcCallBuffers, APeersBadRecordIsRefusedNamingIt) {
  ThreeRanks t;
  const char* sends[3] = {};
  char* recvs[3] = {};
  auto mapWith = [&](std::vector<std::vector<uint8_t>> records) {
    return [&t, &sends, &recvs, records] {
      t.rank0.map(records, at(0x10040), at(0x10040), 1024, sends, recvs, t.quiesce);
    };
  };
  auto records = t.records(1024);
  auto shortRecord = records;
  shortRecord[1].pop_back();
  expectRemoteError(mapWith(shortRecord), "rank 1 sent a call-buffers record of");
  auto swapped = records;
  std::swap(swapped[1], swapped[2]);
  expectRemoteError(mapWith(swapped), "for rank 2");
  auto otherSize = records;
  otherSize[1] = t.rank1.describe(at(0x10080), at(0x10800), 512);
  expectRemoteError(mapWith(otherSize), "rank 1's call moves 512 bytes");
  // The send buffer's allocation size (after the marker, the rank, the call's bytes, the
  // buffer's pointer and base) made too small for its offset and the call.
  auto tooSmall = records;
  const uint64_t bytes = 0x100;
  memcpy(tooSmall[1].data() + 4 + 4 + 8 + 8 + 8, &bytes, sizeof bytes);
  expectRemoteError(mapWith(tooSmall), "rank 1 described its send buffer");
  EXPECT_TRUE(t.processA.openMappings.empty()) << "nothing is mapped from a refused record";
}

TEST(IpcCallBuffers, ABufferTooSmallForTheCallIsRefusedBeforeItIsSent) {
  ThreeRanks t;
  // A send buffer 96 bytes from its allocation's end, for 1024 bytes.
  expectRefusal(
      collInvalidUsage, [&] { t.rank0.describe(at(0x10000 + 4000), at(0x10040), 1024); }, "the send buffer");
}

TEST(IpcCallBuffers, ARankThatRefusesItsBuffersStillJoinsTheExchange) {
  // Rank 0's send buffer is too small for the call. It must not leave ranks 1 and 2 waiting in the
  // exchange: it sends an empty record, and each rank fails with an error saying whose.
  ThreeRanks t;
  const uint64_t bytes = 1024;
  std::vector<std::vector<uint8_t>> records(3);
  records[0] = {};
  records[1] = t.rank1.describe(at(0x10080), at(0x10800), bytes);
  records[2] = t.rank2.describe(at(0x20000), at(0x20100), bytes);
  int joined = 0;
  ExchangeRecords exchange = [&](const std::vector<uint8_t>& mine) {
    ++joined;
    EXPECT_TRUE(mine.empty()) << "a refused call sends an empty record";
    return records;
  };
  const char* sends[3] = {};
  char* recvs[3] = {};
  expectRefusal(
      collInvalidUsage,
      [&] {
        t.rank0.describeExchangeAndMap(at(0x10000 + 4000), at(0x10040), bytes, exchange, sends, recvs, t.quiesce);
      },
      "the send buffer");
  EXPECT_EQ(joined, 1) << "rank 0 joined the exchange before it failed";
  ExchangeRecords peers = [&](const std::vector<uint8_t>&) { return records; };
  for (IpcCallBuffers* peer : {&t.rank1, &t.rank2}) {
    const void* send = peer == &t.rank1 ? at(0x10080) : at(0x20000);
    void* recv = peer == &t.rank1 ? at(0x10800) : at(0x20100);
    expectRemoteError([&] { peer->describeExchangeAndMap(send, recv, bytes, peers, sends, recvs, t.quiesce); },
                      "rank 0 refused its own buffers");
  }
  EXPECT_TRUE(t.processA.openMappings.empty() && t.processB.openMappings.empty())
      << "nothing is mapped for a refused call";
}

TEST(IpcCallBuffers, AFullCacheWaitsForTheKernelsBeforeItClosesAMapping) {
  FakeDriver processA, processB;
  processA.allocate(0x10000, 4096);
  for (uint64_t base : {0x40000u, 0x50000u, 0x60000u}) processB.allocate(base, 4096);
  IpcCallBuffers rank0(processA, 0, {true, false}, 2);
  IpcCallBuffers rank1(processB, 1, {false, true}, 2);
  int quiesced = 0;
  const char* sends[2] = {};
  char* recvs[2] = {};
  // Rank 1's send and receive in two allocations fill the cache; the third allocation waits first.
  const uint64_t calls[][2] = {{0x40000, 0x50000}, {0x60000, 0x50000}};
  for (const auto& c : calls) {
    std::vector<std::vector<uint8_t>> records = {rank0.describe(at(0x10000), at(0x10000), 64),
                                                 rank1.describe(at(c[0]), at(c[1]), 64)};
    rank0.map(records, at(0x10000), at(0x10000), 64, sends, recvs, [&] { ++quiesced; });
  }
  EXPECT_EQ(quiesced, 1);
  EXPECT_EQ(processA.opens, 3);
  EXPECT_EQ(processA.openMappings.size(), 2u);
}

}  // namespace
}  // namespace transport
}  // namespace coll
