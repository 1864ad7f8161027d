// What a rank publishes for the P2P transport: its GPU (ordinal for messages, PCI bus id to compare,
// same_gpu.h), a digest of the channel layout (equal on
// every rank, or nothing fits), an identity of its process (equal means "a thread of the same
// process", which maps the allocation by pointer), the allocation's address and CUDA IPC handle,
// how many blocks of the schedule kernel its GPU holds at once, and whether it is an MPS client. Fixed size; a peer's
// card of any other size, magic, rank or layout is refused.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace coll {
namespace transport {

constexpr uint32_t kP2pCardMagic = 0x70327031;  // "p2p1"

struct P2pCard {
  uint32_t magic;
  int32_t rank;
  int32_t nranks;
  int32_t device;
  uint64_t layoutDigest;  // the channel layout of this build
  uint64_t process;       // random per process
  uint64_t base;          // the allocation's address, valid in that process only
  uint64_t regionBytes;
  int32_t residentBlocks;  // blocks of the schedule kernels the rank's GPU holds at once
  int32_t mpsClient;       // 1: the rank's context is shared through MPS (kernels of processes overlap)
  cudaIpcMemHandle_t handle;
  char busId[32];  // the GPU's PCI bus id, NUL-terminated; empty when CUDA did not give it
};

// Whether two cards name one GPU (same_gpu.h), and the key for it.
bool sameGpu(const P2pCard& a, const P2pCard& b);
std::string gpuKey(const P2pCard& card);

// This build's channel layout, as a digest.
uint64_t p2pLayoutDigest();
// A random identity of this process, the same for every call.
uint64_t p2pProcessIdentity();

std::string encodeP2pCard(const P2pCard& card);
// Throws collInvalidUsage naming expectedRank when the card is malformed or from another build.
P2pCard parseP2pCard(const std::string& bytes, int expectedRank, int nranks);

}  // namespace transport
}  // namespace coll
