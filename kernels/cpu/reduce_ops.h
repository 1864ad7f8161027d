// Building blocks of the host reduce kernels, on one vector register of elements at a time:
// element codecs (how stored elements become the values arithmetic happens on, and back) and the
// reduction operators.
//
// They use the GCC/Clang vector extensions rather than arrays: GCC keeps a chunk held in an array
// on the stack (one extra L1 round trip per element), and turns arrays mixed with F16C intrinsics
// into scalar code, while a vector-typed value stays in a register.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/cpu/half.h"

#if defined(__AVX512F__)
#define COLL_KERNEL_VECTOR_BYTES 64
#elif defined(__AVX__)
#define COLL_KERNEL_VECTOR_BYTES 32
#else
#define COLL_KERNEL_VECTOR_BYTES 16
#endif

namespace coll {
namespace kernels {
namespace detail {

constexpr size_t kVectorBytes = COLL_KERNEL_VECTOR_BYTES;

template <typename T, size_t Bytes>
struct VecOf {
  typedef T type __attribute__((vector_size(Bytes)));
};
template <typename T, size_t Bytes = kVectorBytes>
using Vec = typename VecOf<T, Bytes>::type;

// mask lanes are all ones or all zeros (the result of a vector comparison).
template <typename V, typename Mask>
inline V select(Mask mask, V ifSet, V ifClear) {
  return (V)(((Mask)ifSet & mask) | ((Mask)ifClear & ~mask));
}

// Elements are read and written with memcpy or unaligned vector loads on byte pointers: the
// contract allows any alignment, and a misaligned typed pointer would be undefined behaviour.

// Types whose arithmetic happens in the type itself.
template <typename T>
struct NativeCodec {
  using Storage = T;
  using Compute = T;
  static constexpr size_t kLanes = kVectorBytes / sizeof(T);
  static Vec<T> load(const unsigned char* src) {
    Vec<T> v;
    std::memcpy(&v, src, sizeof v);
    return v;
  }
  static void store(Vec<T> v, unsigned char* dst) { std::memcpy(dst, &v, sizeof v); }
};

// IEEE binary16, computed in float. F16C converts 8 lanes per instruction; the AVX-512 forms are
// avoided because GCC 12 raises a false -Wmaybe-uninitialized inside their intrinsics.
struct HalfCodec {
  using Storage = uint16_t;
  using Compute = float;
  static constexpr size_t kLanes = kVectorBytes / sizeof(float);
  static Vec<float> load(const unsigned char* src) {
#if defined(__F16C__) && COLL_KERNEL_VECTOR_BYTES == 64
    const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
    const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16)));
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#elif defined(__F16C__) && COLL_KERNEL_VECTOR_BYTES == 32
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
#elif defined(__F16C__)
    return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src)));
#else
    uint16_t h[kLanes];
    std::memcpy(h, src, sizeof h);
    Vec<float> v;
    for (size_t k = 0; k < kLanes; ++k) v[k] = halfToFloat(h[k]);
    return v;
#endif
  }
  static void store(Vec<float> v, unsigned char* dst) {
#if defined(__F16C__) && COLL_KERNEL_VECTOR_BYTES == 64
    const __m256 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 hi = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__) && COLL_KERNEL_VECTOR_BYTES == 32
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__)
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
#else
    uint16_t h[kLanes];
    for (size_t k = 0; k < kLanes; ++k) h[k] = floatToHalf(v[k]);
    std::memcpy(dst, h, sizeof h);
#endif
  }
};

// bfloat16, computed in float. Widening is a shift; narrowing is the integer rounding of
// bfloat16FromBits, lane-wise. (AVX512-BF16's vcvtneps2bf16 is not used: it flushes subnormals to
// zero, which is not round-to-nearest-even.)
struct Bfloat16Codec {
  using Storage = uint16_t;
  using Compute = float;
  static constexpr size_t kLanes = kVectorBytes / sizeof(float);
  using Bits16 = Vec<uint16_t, kVectorBytes / 2>;
  using Bits32 = Vec<uint32_t>;
  static Vec<float> load(const unsigned char* src) {
    Bits16 h;
    std::memcpy(&h, src, sizeof h);
    return (Vec<float>)(__builtin_convertvector(h, Bits32) << 16);
  }
  static void store(Vec<float> v, unsigned char* dst) {
    const Bits32 bits = (Bits32)v;
    const Bits32 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const Bits32 quietNan = (bits >> 16) | 0x40u;
    const Bits16 h = __builtin_convertvector(select((bits & 0x7fffffffu) > 0x7f800000u, quietNan, rounded), Bits16);
    std::memcpy(dst, &h, sizeof h);
  }
};

// Integer sums and products are done on unsigned lanes so that they wrap instead of overflowing
// (signed overflow is undefined).
struct OpSum {
  template <typename T>
  static Vec<T> apply(Vec<T> a, Vec<T> b) {
    if constexpr (std::is_floating_point_v<T>) {
      return a + b;
    } else {
      using U = Vec<std::make_unsigned_t<T>>;
      return (Vec<T>)((U)a + (U)b);
    }
  }
};

struct OpProd {
  template <typename T>
  static Vec<T> apply(Vec<T> a, Vec<T> b) {
    if constexpr (std::is_floating_point_v<T>) {
      return a * b;
    } else {
      using U = Vec<std::make_unsigned_t<T>>;
      return (Vec<T>)((U)a * (U)b);
    }
  }
};

// Float max and min propagate NaN: if either operand is NaN the result is NaN, whatever the order
// of the sources. (std::max would return its first argument when either is NaN, so a NaN on one
// rank would vanish or survive depending on where it sat in the reduction order.) Between +0 and
// -0 the earlier source wins.
struct OpMax {
  template <typename T>
  static Vec<T> apply(Vec<T> a, Vec<T> b) {
    if constexpr (std::is_floating_point_v<T>) {
      return select((b > a) | (b != b), b, a);
    } else {
      return select(b > a, b, a);
    }
  }
};

struct OpMin {
  template <typename T>
  static Vec<T> apply(Vec<T> a, Vec<T> b) {
    if constexpr (std::is_floating_point_v<T>) {
      return select((b < a) | (b != b), b, a);
    } else {
      return select(b < a, b, a);
    }
  }
};

// The avg division; divisor > 0.
template <typename T>
Vec<T> divideBy(Vec<T> x, int divisor) {
  if constexpr (std::is_floating_point_v<T>) {
    return x / T(divisor);
  } else if constexpr (sizeof(T) <= 4) {
    // Truncating a floating-point quotient equals C integer division when the format has enough
    // bits: x/d is either an exact integer or at a relative distance of at least 1/|x| from every
    // integer, which is beyond the rounding error of float for 8-bit x (2^-8 > 2^-24) and of
    // double for 32-bit x (2^-32 > 2^-53). (A divisor that float rounds is above 2^24, where the
    // quotient of an 8-bit value truncates to 0 either way.) Unlike integer division, this
    // vectorizes. (A lane loop, because GCC scalarizes __builtin_convertvector to a wider vector
    // type than the machine has, but SLP-vectorizes this loop.)
    using Real = std::conditional_t<sizeof(T) == 1, float, double>;
    const Real d = Real(divisor);
    for (size_t k = 0; k < kVectorBytes / sizeof(T); ++k) x[k] = T(Real(x[k]) / d);
    return x;
  } else {
    for (size_t k = 0; k < kVectorBytes / sizeof(T); ++k) x[k] = T(x[k] / T(divisor));
    return x;
  }
}

}  // namespace detail
}  // namespace kernels
}  // namespace coll
