# The instruction-set variants (kernels/README.md): loops compiled once per variant, in files named
# after it (<folder>/generic.cc, avx2.cc, avx512.cc), and one choice per process among them
# (kernels/cpu/host_kernels.cc). The host reduce loops (kernels/cpu/isa/) and the ZeRO optimizer
# loops (zero/isa/) are built this way; the flags live here only, so that a variant means the
# same CPU in every layer and matches host_kernels.cc's run-time checks, feature for feature.
#
# Every variant is also built with -ffp-contract=off: the variants differ in their instructions,
# never in their arithmetic. With FMA available the compiler would otherwise fuse a * b + c into
# one rounding where the generic build rounds twice, and the same call would give results that
# differ in the last bit from one CPU to another (zero/README.md says why that matters there).

# coll_isa_variant_sources(OUT_VAR ISA_FOLDER DISPATCH_FILE)
#   Sets OUT_VAR to the variant files this architecture builds (generic everywhere; avx2 and avx512
#   on x86-64), gives each its flags, and defines COLL_KERNEL_X86_VARIANTS for DISPATCH_FILE, the
#   file whose table lists the variants, when the x86-64 ones are built. Call it from the
#   CMakeLists.txt that adds the files to a target: source properties are seen in that folder only.
function(coll_isa_variant_sources out_var isa_folder dispatch_file)
  set(sources ${isa_folder}/generic.cc)
  set_property(SOURCE ${isa_folder}/generic.cc APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(avx2 -mavx2 -mfma -mf16c)
    set_property(SOURCE ${isa_folder}/avx2.cc APPEND PROPERTY COMPILE_OPTIONS ${avx2} -ffp-contract=off)
    set_property(SOURCE ${isa_folder}/avx512.cc APPEND PROPERTY COMPILE_OPTIONS ${avx2} -mavx512f -mavx512bw
                                                                                -mavx512vl -mavx512dq -ffp-contract=off)
    set_property(SOURCE ${dispatch_file} APPEND PROPERTY COMPILE_DEFINITIONS COLL_KERNEL_X86_VARIANTS)
    list(APPEND sources ${isa_folder}/avx2.cc ${isa_folder}/avx512.cc)
  endif()
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()
