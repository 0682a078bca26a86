# The CPU backend's addon. Sources come from scripts/list-sources.mjs (gyp has no glob), so a new
# kernel file in native/cpu/ is built without editing this file; it finds them in the package's
# native/cpu (an installed package ships them) or the repository's ../../native/cpu. Per-ISA files (*_avx2.cpp,
# *_avx512.cpp, *_neon.cpp) are compiled in static libraries with their own flags and linked
# into the addon; everything else is baseline. Never -march=native.
# The Release configuration is the shipped build; Debug is the sanitizer build
# (MINFER_SANITIZE=address, see README.md).
{
  "target_defaults": {
    "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "<!(node scripts/list-sources.mjs include)"],
    "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-std=gnu++1y", "-std=gnu++20"],
    "cflags": ["-fPIC", "-Wall", "-Wextra", "-fexceptions"],
    "cflags_cc": ["-std=c++17", "-fexceptions"],
    "xcode_settings": {
      "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
      "GCC_ENABLE_CPP_RTTI": "YES",
      "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
      "GCC_OPTIMIZATION_LEVEL": "3",
      "OTHER_CFLAGS": ["-Wall", "-Wextra"]
    },
    # On arm64, where FMA is baseline, GCC and clang fuse a*b+c into one rounding by default:
    # contraction off keeps every baseline kernel's float results those of the x86-64 build's
    # baseline (scalar) code, which the NEON kernels are checked against (run-arm64.sh compares
    # whole runs with x86 scalar's token ids). (x86-64 baseline has no FMA to fuse into.)
    "conditions": [
      ["target_arch=='arm64'", {
        "cflags": ["-ffp-contract=off"],
        "xcode_settings": {"OTHER_CFLAGS": ["-ffp-contract=off"]}
      }]
    ],
    "configurations": {
      "Release": {
        "cflags": ["-O3"]
      },
      "Debug": {
        "cflags": ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined"],
        "ldflags": ["-fsanitize=address,undefined"]
      }
    }
  },
  "targets": [
    {
      "target_name": "minfer_cpu",
      "sources": ["<!@(node scripts/list-sources.mjs base)"],
      "conditions": [
        ["target_arch=='x64'", {"dependencies": ["minfer_cpu_avx2", "minfer_cpu_avx512"]}],
        ["target_arch=='arm64'", {"dependencies": ["minfer_cpu_neon"]}],
        ["OS=='linux'", {"libraries": ["-lpthread"]}]
      ]
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "minfer_cpu_avx2",
          "type": "static_library",
          "sources": ["<!@(node scripts/list-sources.mjs avx2)"],
          "cflags": ["-mavx2", "-mfma", "-mf16c"],
          "xcode_settings": {"OTHER_CFLAGS": ["-mavx2", "-mfma", "-mf16c"]}
        },
        {
          "target_name": "minfer_cpu_avx512",
          "type": "static_library",
          "sources": ["<!@(node scripts/list-sources.mjs avx512)"],
          "cflags": [
            "-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
            "-mavx512vnni",
            # GCC 12's own AVX-512 intrinsic headers trip this warning (false positives).
            "-Wno-maybe-uninitialized", "-Wno-uninitialized"
          ],
          "xcode_settings": {
            "OTHER_CFLAGS": [
              "-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
              "-mavx512vnni"
            ]
          }
        }
      ]
    }],
    ["target_arch=='arm64'", {
      "targets": [
        {
          "target_name": "minfer_cpu_neon",
          "type": "static_library",
          "sources": ["<!@(node scripts/list-sources.mjs neon)"]
        }
      ]
    }]
  ]
}
