# wasm.cmake — the WebAssembly targets, built when CMake runs under emcmake
# (Emscripten 3.1.6; scripts/build-wasm.sh is the one command that does it).
# Included by CMakeLists.txt; does nothing for a native build. Owns:
#   tinytrain          the CLI as a Node program: SIMD128 + pthreads, main() on
#                      a pthread (PROXY_TO_PTHREAD, so the pool's threads can be
#                      started on demand), NODERAWFS (real files), EXIT_RUNTIME.
#                      Run: node --no-experimental-fetch tinytrain.js train ...
#   tinytrain_web      the web app's CPU module: MODULARIZE + EXPORT_ES6,
#                      SIMD128 + pthreads (the thread pool runs on nested
#                      Workers), the C API of src/web/web_api.c. The Worker pool
#                      is started before any C code runs (Module.ttPoolSize,
#                      set by web/worker.js), so creating the CPU thread pool
#                      never waits on the event loop.
#   tinytrain_web_st   the same, single-threaded (SIMD128, no SharedArrayBuffer):
#                      used when the page is not cross-origin isolated.
#   tinytrain_web_gpu  the WebGPU module: single-threaded SIMD core + the
#                      browser device layer (src/web/device_web.c + .js over
#                      navigator.gpu). The device layer's two waits (buffer
#                      mapping, error scopes) suspend the C caller through
#                      JSPI (WebAssembly.Suspending / promising, set up by
#                      web/worker.js at instantiation), not Asyncify: no code
#                      transformation, and 3.1.6's Asyncify mis-rewound this
#                      code.
#   tinytrain_web64    (option TT_WASM64, experimental) Memory64 CPU module for
#                      presets beyond the 32-bit heap: single-threaded scalar
#                      code (3.1.6 cannot build threads or SIMD for wasm64),
#                      a writable Emscripten cache (scripts/build-wasm.sh
#                      --memory64) and a fixed heap (growth is broken under
#                      Memory64 in 3.1.6). Not used by the app yet.
# Web outputs go to <build>/web/; build-wasm.sh copies them to web/dist/.
if(NOT EMSCRIPTEN)
  return()
endif()

option(TT_WASM64 "Also build the Memory64 web module (needs a writable EM_CACHE)" OFF)
set(TT_WASM64_MEMORY "8589934592" CACHE STRING "Fixed heap of the Memory64 module, bytes")

set(TT_WEB_DIR ${CMAKE_SOURCE_DIR}/src/web)
set(TT_WEB_API_SRC ${TT_WEB_DIR}/web_api.c ${TT_WEB_DIR}/web_sample.c)
set(TT_WEB_DEVICE ${TT_WEB_DIR}/device_web.c)
set(TT_WEB_JSLIB ${TT_WEB_DIR}/device_web.js)
set(TT_WEB_OUT ${CMAKE_BINARY_DIR}/web)
file(MAKE_DIRECTORY ${TT_WEB_OUT})

# --- cores -------------------------------------------------------------------
# ttcore (CMakeLists.txt): threaded; serves the CLI and tinytrain_web. Its GPU
# device layer is device_web.c without TT_WEB_GPU: "no WebGPU here".
target_compile_options(ttcore PUBLIC -pthread)
target_link_options(ttcore INTERFACE -pthread)
target_sources(ttcore PRIVATE ${TT_WEB_DEVICE})

# ttweb_st: single-threaded (objects built with atomics cannot link into a
# module without threads); no device layer, each module adds its own.
add_library(ttweb_st STATIC ${TT_CORE_SRC} ${TT_WGSL_C})  # + the embedded WGSL kernels (embed_wgsl.cmake)
target_include_directories(ttweb_st PUBLIC src src/cpu src/gpu)
target_link_libraries(ttweb_st PUBLIC m)

set(TT_WEB_COMMON_LINK
  -O2
  -sMODULARIZE=1
  -sEXPORT_ES6=1
  -sEXPORT_NAME=createTinytrain
  -sENVIRONMENT=web,worker
  -sALLOW_MEMORY_GROWTH=1
  -sMAXIMUM_MEMORY=4GB
  -sINITIAL_MEMORY=64MB
  -sEXPORTED_FUNCTIONS=_malloc,_free
  -sEXPORTED_RUNTIME_METHODS=ccall,UTF8ToString,stringToUTF8,lengthBytesUTF8
  -Wno-pthreads-mem-growth
)

function(tt_web_module name core)
  add_executable(${name} ${TT_WEB_API_SRC} ${ARGN})
  target_include_directories(${name} PRIVATE ${TT_WEB_DIR})
  target_link_libraries(${name} ${core})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${TT_WEB_OUT} SUFFIX ".js")
  target_link_options(${name} PRIVATE ${TT_WEB_COMMON_LINK})
endfunction()

tt_web_module(tinytrain_web ttcore)
target_link_options(tinytrain_web PRIVATE -sPTHREAD_POOL_SIZE=Module.ttPoolSize -sPTHREAD_POOL_SIZE_STRICT=2)

tt_web_module(tinytrain_web_st ttweb_st ${TT_WEB_DEVICE})

tt_web_module(tinytrain_web_gpu ttweb_st ${TT_WEB_DEVICE} ${TT_WEB_DIR}/web_gpu_selftest.c)
target_compile_definitions(tinytrain_web_gpu PRIVATE TT_WEB_GPU)
target_link_options(tinytrain_web_gpu PRIVATE --js-library ${TT_WEB_JSLIB})
set_property(TARGET tinytrain_web_gpu APPEND PROPERTY LINK_DEPENDS ${TT_WEB_JSLIB})

if(TT_WASM64)
  # Emscripten 3.1.6 + clang 14 limits for wasm64: its threaded libc does not
  # compile (pthread_create.c), and SIMD128 lane extracts crash the backend —
  # so this module is single-threaded scalar code (experimental).
  add_library(ttcore64 STATIC ${TT_CORE_SRC} ${TT_WGSL_C} ${TT_WEB_DEVICE})
  target_include_directories(ttcore64 PUBLIC src src/cpu src/gpu)
  target_compile_options(ttcore64 PUBLIC -sMEMORY64=1 -mno-simd128)
  target_link_libraries(ttcore64 PUBLIC m)
  add_executable(tinytrain_web64 ${TT_WEB_API_SRC})
  target_include_directories(tinytrain_web64 PRIVATE ${TT_WEB_DIR})
  target_compile_options(tinytrain_web64 PRIVATE -sMEMORY64=1 -mno-simd128)
  target_link_libraries(tinytrain_web64 ttcore64)
  set_target_properties(tinytrain_web64 PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${TT_WEB_OUT} SUFFIX ".js")
  set(TT_WEB64_LINK ${TT_WEB_COMMON_LINK})
  list(REMOVE_ITEM TT_WEB64_LINK -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sINITIAL_MEMORY=64MB)
  target_link_options(tinytrain_web64 PRIVATE ${TT_WEB64_LINK} -sMEMORY64=1
    -sINITIAL_MEMORY=${TT_WASM64_MEMORY} -sALLOW_MEMORY_GROWTH=0)
endif()

# --- the CLI under Node: tinytrain is defined after this file is included ----
function(tt_wasm_cli_setup)
  if(TARGET tinytrain)
    target_link_options(tinytrain PRIVATE
      -O2
      -sNODERAWFS=1
      -sEXIT_RUNTIME=1
      -sPROXY_TO_PTHREAD=1
      -sENVIRONMENT=node,worker
      -sALLOW_MEMORY_GROWTH=1
      -sMAXIMUM_MEMORY=4GB
      -sINITIAL_MEMORY=64MB
      -sDEFAULT_PTHREAD_STACK_SIZE=4MB
      -Wno-pthreads-mem-growth)
  endif()
endfunction()
cmake_language(DEFER CALL tt_wasm_cli_setup)
