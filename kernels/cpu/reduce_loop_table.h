// The loop table of one instruction-set variant: every (type, op) loop, instantiated with the -m
// flags of the file that includes this. Only kernels/cpu/isa/*.cc include it, each after naming
// its variant (COLL_KERNEL_ISA), so everything here lands in that variant's namespace.
#pragma once

#include <cstdint>

#include "kernels/cpu/isa_namespace.h"
#include "kernels/cpu/reduce_loops.h"
#include "kernels/cpu/reduce_ops.h"
#include "kernels/cpu/reduce_variant.h"

namespace coll {
namespace kernels {
inline namespace COLL_ISA_NAMESPACE {
namespace detail {

template <class Codec>
struct LoopsFor {
  static constexpr ReduceLoop fns[kLoopsPerType] = {
      &ReduceLoops<Codec, OpSum, false>::run, &ReduceLoops<Codec, OpProd, false>::run,
      &ReduceLoops<Codec, OpMax, false>::run, &ReduceLoops<Codec, OpMin, false>::run,
      &ReduceLoops<Codec, OpSum, true>::run};
};

template <class... Codecs>
constexpr ReduceLoopTable makeLoopTable() {
  return ReduceLoopTable{{LoopsFor<Codecs>::fns...}, kVectorBytes};
}

static_assert(collInt8 == 0 && collUint8 == 1 && collInt32 == 2 && collUint32 == 3 && collInt64 == 4 &&
                  collUint64 == 5 && collFloat16 == 6 && collFloat32 == 7 && collFloat64 == 8 && collBfloat16 == 9 &&
                  collNumTypes == 10,
              "the loop table rows follow collDataType_t");
static_assert(collSum == 0 && collProd == 1 && collMax == 2 && collMin == 3 && collAvg == kDividingSum,
              "the loop table columns follow collRedOp_t");

}  // namespace detail

// Rows in collDataType_t order (the static_asserts above keep the two in step).
constexpr ReduceLoopTable kReduceLoops =
    detail::makeLoopTable<detail::NativeCodec<int8_t>, detail::NativeCodec<uint8_t>, detail::NativeCodec<int32_t>,
                          detail::NativeCodec<uint32_t>, detail::NativeCodec<int64_t>, detail::NativeCodec<uint64_t>,
                          detail::HalfCodec, detail::NativeCodec<float>, detail::NativeCodec<double>,
                          detail::Bfloat16Codec>();

}  // namespace COLL_ISA_NAMESPACE
}  // namespace kernels
}  // namespace coll
