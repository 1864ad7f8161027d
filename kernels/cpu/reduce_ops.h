// Building blocks of the host reduce kernels, on one vector register of elements at a time:
// element codecs (how stored elements become the values arithmetic happens on, and back) and the
// reduction operators.
//
// They use the GCC/Clang vector extensions rather than arrays: GCC keeps a chunk held in an array
// on the stack (one extra L1 round trip per element), and turns arrays mixed with F16C intrinsics
// into scalar code, while a vector-typed value stays in a register.
//
// The vector width and the conversions follow the flags this file is compiled with: only the
// instruction-set variants in kernels/cpu/isa/ (and the ZeRO optimizer loops, zero/isa/) include it,
// each in its own namespace.
#pragma once

#if !defined(COLL_KERNEL_ISA)
#error "reduce_ops.h belongs to the instruction-set variants: include it only from kernels/cpu/isa/ or zero/isa/"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kernels/cpu/half.h"
#include "kernels/cpu/isa_namespace.h"

#if defined(__AVX512F__)
#define COLL_KERNEL_VECTOR_BYTES 64
#elif defined(__AVX__)
#define COLL_KERNEL_VECTOR_BYTES 32
#else
#define COLL_KERNEL_VECTOR_BYTES 16
#endif

namespace coll {
namespace kernels {
inline namespace COLL_ISA_NAMESPACE {
namespace detail {

constexpr size_t kVectorBytes = COLL_KERNEL_VECTOR_BYTES;

template <typename T, size_t Bytes>
struct VecOf {
  typedef T type __attribute__((vector_size(Bytes)));
};
template <typename T, size_t Bytes = kVectorBytes>
using Vec = typename VecOf<T, Bytes>::type;

// Lane-wise choice; the mask lanes are all ones or all zeros (a vector comparison result).
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

// IEEE binary16, computed in float, converted with AVX-512 or F16C. The AVX-512 conversions are
// the zero-masking forms with a full mask (the same instruction) because the plain intrinsics
// make GCC 12 raise a false -Wmaybe-uninitialized.
struct HalfCodec {
  using Storage = uint16_t;
  using Compute = float;
  static constexpr size_t kLanes = kVectorBytes / sizeof(float);
  static Vec<float> load(const unsigned char* src) {
#if COLL_KERNEL_VECTOR_BYTES == 64
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
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
#if COLL_KERNEL_VECTOR_BYTES == 64
    const __m256i h = _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), h);
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

// bfloat16, computed in float. Widening puts the 16 bits on top of a zero half; narrowing is the
// integer rounding of bfloat16FromBits, lane-wise. (AVX512-BF16's vcvtneps2bf16 is not used: it
// flushes subnormals to zero, which is not round-to-nearest-even.)
struct Bfloat16Codec {
  using Storage = uint16_t;
  using Compute = float;
  static constexpr size_t kLanes = kVectorBytes / sizeof(float);
  using Bits16 = Vec<uint16_t, kVectorBytes / 2>;
  using Bits32 = Vec<uint32_t>;

#if COLL_KERNEL_VECTOR_BYTES == 64 && defined(__AVX512BW__)
  // On AVX-512 the generic code below is integer-ALU bound (Zen 4 runs 512-bit integer operations
  // at half rate), so the word moves are single vpermw shuffles, the rounding leaves its result in
  // the high words instead of shifting it down, and the NaN test is a float compare. (Only
  // intrinsics without an "undefined" operand are used: the others make GCC 12 raise false
  // -Wmaybe-uninitialized warnings.)
  static Vec<float> load(const unsigned char* src) {
    // Word 2k+1 of the result takes word k of the input; even words are zeroed.
    alignas(64) static constexpr uint16_t kSpread[32] = {0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7,
                                                         0, 8, 0, 9, 0, 10, 0, 11, 0, 12, 0, 13, 0, 14, 0, 15};
    // Both halves hold the input; the shuffle reads only the lower one.
    const __m512i raw = _mm512_maskz_broadcast_i64x4(0xff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
    return (Vec<float>)_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, _mm512_load_si512(kSpread), raw);
  }
  static void store(Vec<float> v, unsigned char* dst) {
    // Word k of the result takes word 2k+1 (the high half of float k).
    alignas(64) static constexpr uint16_t kGather[32] = {1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21,
                                                         23, 25, 27, 29, 31, 1,  3,  5,  7,  9,  11,
                                                         13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
    const Bits32 bits = (Bits32)v;
    const Bits32 rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    // NaN: set the quiet bit and keep the high half as it is.
    const __m512i narrowed = _mm512_mask_or_epi32((__m512i)rounded, nan, (__m512i)bits, _mm512_set1_epi32(0x400000));
    const __m512i packed = _mm512_permutexvar_epi16(_mm512_load_si512(kGather), narrowed);
    std::memcpy(dst, &packed, kLanes * sizeof(uint16_t));
  }
#else
  static Vec<float> load(const unsigned char* src) {
    Bits16 h;
    std::memcpy(&h, src, sizeof h);
    return (Vec<float>)(__builtin_convertvector(h, Bits32) << 16);
  }
  static void store(Vec<float> v, unsigned char* dst) {
    const Bits32 bits = (Bits32)v;
    const Bits32 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const Bits32 quietNan = (bits >> 16) | 0x40u;
    const Bits32 narrowed = select((bits & 0x7fffffffu) > 0x7f800000u, quietNan, rounded);
    const Bits16 h = __builtin_convertvector(narrowed, Bits16);
    std::memcpy(dst, &h, sizeof h);
  }
#endif
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
}  // namespace COLL_ISA_NAMESPACE
}  // namespace kernels
}  // namespace coll
