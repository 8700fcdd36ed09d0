# Per-file SIMD flags: the avx2_*.cpp kernels are compiled for AVX2+FMA+F16C and only called
# through the dispatch table when cpu_features() reports them (the binary stays portable).
file(GLOB GGUFD_AVX2_KERNELS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/avx2_*.cpp)
set_source_files_properties(${GGUFD_AVX2_KERNELS} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")

# AVX-VNNI kernels (VEX vpdpbusd, no AVX-512): used only when cpu_features() reports avx_vnni.
file(GLOB GGUFD_AVXVNNI_KERNELS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/avxvnni_*.cpp)
set_source_files_properties(${GGUFD_AVXVNNI_KERNELS} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")

# AVX-512 kernels: the dispatch table uses them only when cpu_features() reports F/BW/VL/VNNI.
file(GLOB GGUFD_AVX512_KERNELS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/avx512_*.cpp)
set_source_files_properties(${GGUFD_AVX512_KERNELS} PROPERTIES COMPILE_OPTIONS
  "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni")
