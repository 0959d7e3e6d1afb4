# wasm.cmake — the WebAssembly targets, built when CMake runs under emcmake
# (Emscripten 3.1.6; scripts/build-wasm.sh is the one command that does it).
# Included by CMakeLists.txt; does nothing for a native build. Owns:
#   tinytrain          the CLI as a Node program: SIMD128 + pthreads, main() on
#                      a pthread (PROXY_TO_PTHREAD, so the pool's threads can be
#                      started on demand), NODERAWFS (real files), EXIT_RUNTIME.
#                      Run: node --no-experimental-fetch tinytrain.js train ...
#   tinytrain_web      the web app's CPU module: MODULARIZE + EXPORT_ES6,
#                      SIMD128 + pthreads (the thread pool runs on nested
#                      Workers), the C API of src/web/web_api.c + web_info.c. The Worker pool
#                      is started before any C code runs (Module.ttPoolSize,
#                      set by web/worker.js), so creating the CPU thread pool
#                      never waits on the event loop.
#   tinytrain_web_st   the same, single-threaded (SIMD128, no SharedArrayBuffer):
#                      used when the page is not cross-origin isolated.
#   tinytrain_web_gpu  the WebGPU module: single-threaded SIMD core + the
#                      browser device layer (src/webgpu/device_web.c + .js over
#                      navigator.gpu). The device layer's two waits (buffer
#                      mapping, error scopes) suspend the C caller through
#                      JSPI (WebAssembly.Suspending / promising, set up by
#                      web/worker.js at instantiation), not Asyncify: no code
#                      transformation (3.1.6's Asyncify trapped, unreachable,
#                      while rewinding the backend's creation).
# No Memory64 module: with Debian's Emscripten 3.1.6 + clang 14 under Node 20
# a wasm64 build fails three ways (measured 2026-11): the threaded libc does
# not compile for wasm64 (pthread_create.c, -Wint-to-void-pointer-cast),
# SIMD128 lane extracts crash the wasm64 backend ("Cannot select
# extract_vector_elt"), and generating wasm64 struct_info runs node with
# --experimental-wasm-bigint, which Node 20 rejects. Presets beyond the 4 GB
# heap (behemoth) train natively; the app says so.
# Web outputs go to <build>/web/; build-wasm.sh copies them to web/dist/.
if(NOT EMSCRIPTEN)
  return()
endif()


set(TT_WEB_DIR ${CMAKE_SOURCE_DIR}/src/web)
set(TT_WEB_API_SRC ${TT_WEB_DIR}/web_api.c ${TT_WEB_DIR}/web_info.c ${TT_WEB_DIR}/web_sample.c ${TT_WEB_DIR}/web_inspect.c)
set(TT_WEB_DEVICE ${CMAKE_SOURCE_DIR}/src/webgpu/device_web.c)
set(TT_WEB_JSLIB ${CMAKE_SOURCE_DIR}/src/webgpu/device_web.js)
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
target_include_directories(ttweb_st PUBLIC ${TT_INC_DIRS})
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
  -sEXPORTED_RUNTIME_METHODS=ccall,UTF8ToString,stringToUTF8,lengthBytesUTF8,FS
  -sFORCE_FILESYSTEM=1
  -Wno-pthreads-mem-growth
)

function(tt_web_module name core)
  add_executable(${name} ${TT_WEB_API_SRC} ${ARGN})
  target_link_libraries(${name} ${core})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${TT_WEB_OUT} SUFFIX ".js")
  target_link_options(${name} PRIVATE ${TT_WEB_COMMON_LINK})
endfunction()

tt_web_module(tinytrain_web ttcore)
target_link_options(tinytrain_web PRIVATE -sPTHREAD_POOL_SIZE=Module.ttPoolSize -sPTHREAD_POOL_SIZE_STRICT=2)

tt_web_module(tinytrain_web_st ttweb_st ${TT_WEB_DEVICE})

tt_web_module(tinytrain_web_gpu ttweb_st ${TT_WEB_DEVICE})
target_compile_definitions(tinytrain_web_gpu PRIVATE TT_WEB_GPU)
target_link_options(tinytrain_web_gpu PRIVATE --js-library ${TT_WEB_JSLIB})
set_property(TARGET tinytrain_web_gpu APPEND PROPERTY LINK_DEPENDS ${TT_WEB_JSLIB})

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
