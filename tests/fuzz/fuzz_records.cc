// Fuzz target: the parsers of COLL_NET_ENCRYPT's sealed records, fed what a peer that knows no
// key (or a network in the middle) could send. The first input byte picks which:
//   even: the socket transport's receiving side (NetRecvConnection with an opening cipher), the
//         rest of the input arriving on its socket; frames that open are taken and released;
//   odd:  the store's records (checkFrame with the tag's allowance, then openRecord, then the
//         frame's op and sequence number), cut as the server and the client cut them.
// Every input must end in a refusal or in frames that opened, never in a crash, an out-of-bounds
// access or a frame handed over that did not authenticate. The seeds (corpus/fuzz_records/) are
// records sealed under the keys of fuzz_records.h, so that mutations start past the tag check.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bootstrap/store_protocol.h"
#include "common/error.h"
#include "fuzz_records.h"
#include "transport/net/net_connection.h"

using namespace coll;

namespace {

struct QuietOwner : transport::NetConnectionOwner {
  void wakeProgress() override {}
  void channelFailed(int, const std::string&) override {}
};

void socketFrames(const uint8_t* data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) return;
  QuietOwner owner;
  transport::NetRecvConnection recv(3, {-1}, fuzzrecords::kDepth, fuzzrecords::kSlotBytes, owner);
  std::vector<std::unique_ptr<RecordCipher>> open;
  open.push_back(std::move(makeRecordCiphers(fuzzrecords::keys(), RecordSide::kAccepter).open));
  recv.attach({fds[1]}, std::move(open));
  size_t written = 0;
  for (int round = 0; round < 10000; ++round) {
    if (written < size) {
      const ssize_t n = write(fds[0], data + written, size - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (written == size) shutdown(fds[0], SHUT_WR);
    }
    transport::PumpResult result;
    {
      std::lock_guard<std::mutex> lock(recv.mutex());
      result = recv.pump();
    }
    size_t bytes = 0;
    uint64_t tag = 0;
    bool took = false;
    while (const void* frame = recv.tryPeek(&bytes, &tag)) {
      volatile uint8_t sink = bytes > 0 ? static_cast<const uint8_t*>(frame)[bytes - 1] : 0;
      (void)sink;
      recv.release();
      took = true;
    }
    if (!result.error.empty() || recv.departed() || (written == size && !result.moved && !took)) break;
  }
  close(fds[0]);
  close(fds[1]);
}

void storeRecords(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  RecordCiphers ciphers = makeRecordCiphers(fuzzrecords::keys(), RecordSide::kAccepter);
  size_t offset = 0;
  for (;;) {
    size_t recordBytes = 0;
    const auto check = bootstrap::wire::checkFrame(bytes.data() + offset, bytes.size() - offset,
                                                   bootstrap::wire::kMaxBodyBytes + kRecordTagBytes, &recordBytes);
    if (check != bootstrap::wire::FrameCheck::kComplete) return;
    if (!bootstrap::wire::openRecord(*ciphers.open, bytes.data() + offset, recordBytes)) return;
    bootstrap::wire::FrameReader r(bytes.data() + offset + bootstrap::wire::kHeaderBytes,
                                   recordBytes - bootstrap::wire::kHeaderBytes - kRecordTagBytes);
    (void)bootstrap::wire::opName(r.u8());
    (void)r.u32();
    offset += recordBytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    if (data[0] % 2 == 0)
      socketFrames(data + 1, size - 1);
    else
      storeRecords(data + 1, size - 1);
  } catch (const CollError&) {
    // libcrypto missing or refusing: a refusal too.
  }
  return 0;
}
