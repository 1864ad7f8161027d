// The arithmetic of the device kernels for the 10 types and 5 ops, on small arrays ("packs") of
// elements. Everything is __host__ __device__: the kernels use it on the GPU, and the host tests
// compile the very same code with the host compiler and compare it with kernels/cpu on random
// inputs, which verifies the arithmetic on a machine without a GPU.
//
// The semantics are those of kernels/cpu/reduce.h: integers wrap (computed on unsigned values)
// and avg is C division of the wrapped sum; float and double combine in their own type from the
// first source to the last; half and bfloat16 combine in float and round to nearest even once per
// stored result; float max and min propagate NaN.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device_step.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif
#if !defined(__CUDA_ARCH__)
#include "kernels/cpu/half.h"
#endif

namespace coll {
namespace device {

// Storage types of the two 16-bit float formats (bit patterns, as the API defines them).
struct Half {
  uint16_t bits;
};
struct Bfloat16 {
  uint16_t bits;
};

// On the GPU the conversions are single cvt.rn instructions; on the host they are kernels/cpu's
// portable conversions. Both round to nearest even and keep NaN a NaN.
COLL_HOST_DEVICE float halfBitsToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return kernels::halfToFloat(h);
#endif
}
COLL_HOST_DEVICE uint16_t floatToHalfBits(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  return kernels::floatToHalf(f);
#endif
}
COLL_HOST_DEVICE float bfloat16BitsToFloat(uint16_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(uint32_t(b) << 16);
#else
  return kernels::bfloat16ToFloat(b);
#endif
}
COLL_HOST_DEVICE uint16_t floatToBfloat16Bits(float f) {
#if defined(__CUDA_ARCH__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
  return kernels::floatToBfloat16(f);
#endif
}

// How a stored element becomes the value arithmetic happens on, and back.
template <typename T>
struct Codec {
  using Compute = T;
  static COLL_HOST_DEVICE Compute load(T v) { return v; }
  static COLL_HOST_DEVICE T store(Compute v) { return v; }
};
template <>
struct Codec<Half> {
  using Compute = float;
  static COLL_HOST_DEVICE Compute load(Half v) { return halfBitsToFloat(v.bits); }
  static COLL_HOST_DEVICE Half store(Compute v) { return Half{floatToHalfBits(v)}; }
};
template <>
struct Codec<Bfloat16> {
  using Compute = float;
  static COLL_HOST_DEVICE Compute load(Bfloat16 v) { return bfloat16BitsToFloat(v.bits); }
  static COLL_HOST_DEVICE Bfloat16 store(Compute v) { return Bfloat16{floatToBfloat16Bits(v)}; }
};

// Operators. kDivides: collAvg is this op followed by the division at the final store.
struct OpSum {
  static constexpr bool kDivides = true;
  template <typename C>
  static COLL_HOST_DEVICE C apply(C a, C b) {
    if constexpr (std::is_floating_point<C>::value) {
      return a + b;
    } else {
      using U = typename std::make_unsigned<C>::type;
      return C(U(U(a) + U(b)));
    }
  }
};
struct OpProd {
  static constexpr bool kDivides = false;
  template <typename C>
  static COLL_HOST_DEVICE C apply(C a, C b) {
    if constexpr (std::is_floating_point<C>::value) {
      return a * b;
    } else {
      using U = typename std::make_unsigned<C>::type;
      return C(U(U(a) * U(b)));
    }
  }
};
// NaN wins whatever its position (b != b is NaN's test); otherwise the larger, the earlier on ties.
struct OpMax {
  static constexpr bool kDivides = false;
  template <typename C>
  static COLL_HOST_DEVICE C apply(C a, C b) {
    return (b > a || b != b) ? b : a;
  }
};
struct OpMin {
  static constexpr bool kDivides = false;
  template <typename C>
  static COLL_HOST_DEVICE C apply(C a, C b) {
    return (b < a || b != b) ? b : a;
  }
};

// avg's division of the (wrapped) sum: C division for integers, in the compute type for floats.
template <typename C>
COLL_HOST_DEVICE C divideBy(C x, int divisor) {
  if constexpr (std::is_floating_point<C>::value) {
    return x / C(divisor);
  } else if constexpr (std::is_signed<C>::value) {
    return C(static_cast<long long>(x) / static_cast<long long>(divisor));
  } else {
    return C(static_cast<unsigned long long>(x) / static_cast<unsigned long long>(divisor));
  }
}

// Reduces packs of kElems elements of T: the first source initializes the accumulator, each
// further source folds into it in compute precision, and the result is rounded once at store.
template <typename T, typename Op, int kElems>
struct PackReducer {
  using Compute = typename Codec<T>::Compute;
  Compute acc[kElems];

  COLL_HOST_DEVICE void first(const T* e) {
    COLL_UNROLL
    for (int i = 0; i < kElems; ++i) acc[i] = Codec<T>::load(e[i]);
  }
  COLL_HOST_DEVICE void fold(const T* e) {
    COLL_UNROLL
    for (int i = 0; i < kElems; ++i) acc[i] = Op::apply(acc[i], Codec<T>::load(e[i]));
  }
  // divisor > 0 only on the final store of an avg (the caller guarantees Op is OpSum then).
  COLL_HOST_DEVICE void finish(int divisor) {
    if constexpr (Op::kDivides) {
      if (divisor > 0) {
        COLL_UNROLL
        for (int i = 0; i < kElems; ++i) acc[i] = divideBy(acc[i], divisor);
      }
    }
  }
  COLL_HOST_DEVICE void store(T* e) const {
    COLL_UNROLL
    for (int i = 0; i < kElems; ++i) e[i] = Codec<T>::store(acc[i]);
  }
};

}  // namespace device
}  // namespace coll
