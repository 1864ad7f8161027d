// Throughput of reduceCopy on the shapes the collectives use: a copy, a two-source reduce (the
// ring's recvReduceSend step), in place, into two destinations (recvReduceCopySend) and from
// eight sources (a direct reduce). Sizes are per buffer: with every buffer of a call together,
// 64 KiB stays in L2 (1 MiB per core), 1 MiB in L3, 16 MiB goes to memory. bytes_per_second
// counts every byte read and written, so it compares directly with memcpy's read+write rate.
// reduceCopy runs the instruction-set variant chosen for this CPU (the context line
// "host_kernels" names it); COLL_CPU_KERNELS=generic|avx2|avx512 measures another.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/cpu/reduce.h"

namespace {

using coll::kernels::reduceCopy;

// One element's bit pattern for 1.0 in each benchmarked type, so no run meets NaN or subnormals.
std::vector<unsigned char> filledBuffer(collDataType_t type, size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  const size_t esize = coll::kernels::dataTypeSize(type);
  for (size_t off = 0; off + esize <= bytes; off += esize) {
    if (type == collFloat16) {
      const uint16_t h = coll::kernels::floatToHalf(1.0f);
      std::memcpy(&buf[off], &h, 2);
    } else if (type == collBfloat16) {
      const uint16_t b = coll::kernels::floatToBfloat16(1.0f);
      std::memcpy(&buf[off], &b, 2);
    } else {
      const float f = 1.0f;
      std::memcpy(&buf[off], &f, 4);
    }
  }
  return buf;
}

// nsrcs sources into ndsts destinations; inPlace makes dsts[0] == srcs[0].
void runReduce(benchmark::State& state, collDataType_t type, int nsrcs, int ndsts, bool inPlace) {
  const size_t bytes = size_t(state.range(0));
  const size_t count = bytes / coll::kernels::dataTypeSize(type);
  std::vector<std::vector<unsigned char>> srcBufs, dstBufs;
  std::vector<const void*> srcs;
  std::vector<void*> dsts;
  for (int i = 0; i < nsrcs; ++i) srcBufs.push_back(filledBuffer(type, bytes));
  for (int j = 0; j < ndsts; ++j) dstBufs.push_back(filledBuffer(type, bytes));
  for (auto& b : srcBufs) srcs.push_back(b.data());
  for (auto& b : dstBufs) dsts.push_back(b.data());
  if (inPlace) dsts[0] = srcBufs[0].data();
  // In place, a sum would double the values every iteration; max keeps them and costs the same.
  const collRedOp_t op = inPlace ? collMax : collSum;
  for (auto _ : state) {
    reduceCopy(type, op, srcs.data(), nsrcs, dsts.data(), ndsts, count, 0);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes) * (nsrcs + ndsts));
}

void BM_Copy(benchmark::State& state) { runReduce(state, collFloat32, 1, 1, false); }
void BM_CopyTo2(benchmark::State& state) { runReduce(state, collFloat32, 1, 2, false); }
void BM_SumFloat2(benchmark::State& state) { runReduce(state, collFloat32, 2, 1, false); }
void BM_SumHalf2(benchmark::State& state) { runReduce(state, collFloat16, 2, 1, false); }
void BM_SumBfloat16_2(benchmark::State& state) { runReduce(state, collBfloat16, 2, 1, false); }
void BM_MaxFloat2InPlace(benchmark::State& state) { runReduce(state, collFloat32, 2, 1, true); }
void BM_SumFloat2To2(benchmark::State& state) { runReduce(state, collFloat32, 2, 2, false); }
void BM_SumFloat8(benchmark::State& state) { runReduce(state, collFloat32, 8, 1, false); }

// Small messages are latency-bound: this is the fixed cost of one call.
void BM_SumFloat2Small(benchmark::State& state) { runReduce(state, collFloat32, 2, 1, false); }
BENCHMARK(BM_SumFloat2Small)->Arg(8)->Arg(256)->Arg(4096);

#define COLL_SIZES ->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)
BENCHMARK(BM_Copy) COLL_SIZES;
BENCHMARK(BM_CopyTo2) COLL_SIZES;
BENCHMARK(BM_SumFloat2) COLL_SIZES;
BENCHMARK(BM_SumHalf2) COLL_SIZES;
BENCHMARK(BM_SumBfloat16_2) COLL_SIZES;
BENCHMARK(BM_MaxFloat2InPlace) COLL_SIZES;
BENCHMARK(BM_SumFloat2To2) COLL_SIZES;
BENCHMARK(BM_SumFloat8) COLL_SIZES;

}  // namespace
