# Every third-party dependency is found here, from Debian packages; nothing is downloaded.
# Static archives of Boost.ProgramOptions, yaml-cpp and protobuf where Debian ships them (the -dev
# packages do): a tawsim process then starts without the dynamic loader resolving their symbols,
# which took ~4 ms (12.5M cycles, LD_DEBUG=statistics) of a ~40 ms run on 3x8-a100. OFF, or
# without the archives: the shared libraries.
option(TAWPIPE_STATIC_DEPS "link Boost.ProgramOptions, yaml-cpp and protobuf statically" ON)
if(TAWPIPE_STATIC_DEPS)
  set(Boost_USE_STATIC_LIBS ON)
  set(Protobuf_USE_STATIC_LIBS ON)
  set(ZLIB_USE_STATIC_LIBS ON)  # protobuf's archive needs zlib; CMake >= 3.24
  # A build tree configured before TAWPIPE_STATIC_DEPS keeps FindProtobuf's cached shared
  # libraries (and with them the dynamic loader's work at every start): find them afresh where
  # the archive lies beside them.
  foreach(var Protobuf_LIBRARY_RELEASE Protobuf_LIBRARY_DEBUG Protobuf_LITE_LIBRARY_RELEASE
              Protobuf_LITE_LIBRARY_DEBUG Protobuf_PROTOC_LIBRARY_RELEASE
              Protobuf_PROTOC_LIBRARY_DEBUG ZLIB_LIBRARY_RELEASE ZLIB_LIBRARY_DEBUG)
    if(${var} MATCHES "\\.so$")
      string(REGEX REPLACE "\\.so$" ".a" archive "${${var}}")
      if(EXISTS "${archive}")
        unset(${var} CACHE)
      endif()
    endif()
  endforeach()
endif()
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)  # Boost.Graph is header-only
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(GTest REQUIRED)
find_package(Threads REQUIRED)
# Chakra trace export (common/chakra): libprotobuf-dev + protobuf-compiler, via CMake's FindProtobuf.
find_package(Protobuf 3.12 REQUIRED)
if(TAWPIPE_BENCH)
  find_package(benchmark REQUIRED)
endif()
# yaml-cpp's Debian config exports either yaml-cpp or yaml-cpp::yaml-cpp depending on version.
if(TARGET yaml-cpp::yaml-cpp)
  set(TAWPIPE_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(TAWPIPE_YAML_TARGET yaml-cpp)
endif()
if(TAWPIPE_STATIC_DEPS)
  # yaml-cpp's config exports the shared library only: the archive beside it, same headers.
  find_library(TAWPIPE_YAML_ARCHIVE NAMES libyaml-cpp.a)
  if(TAWPIPE_YAML_ARCHIVE)
    get_target_property(yaml_includes ${TAWPIPE_YAML_TARGET} INTERFACE_INCLUDE_DIRECTORIES)
    add_library(tawpipe_yaml_static STATIC IMPORTED)
    set_target_properties(tawpipe_yaml_static PROPERTIES IMPORTED_LOCATION ${TAWPIPE_YAML_ARCHIVE})
    if(yaml_includes)
      set_target_properties(tawpipe_yaml_static PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                           "${yaml_includes}")
    endif()
    set(TAWPIPE_YAML_TARGET tawpipe_yaml_static)
  endif()
  # The protobuf archive needs zlib (its gzip streams), which the shared library brings along.
  if(Protobuf_LIBRARY MATCHES "\\.a$")
    find_package(ZLIB REQUIRED)
    set_property(TARGET protobuf::libprotobuf APPEND PROPERTY INTERFACE_LINK_LIBRARIES ZLIB::ZLIB)
  endif()
endif()

# tawsim as a static executable (TAWPIPE_STATIC_TAWSIM, sim/CMakeLists.txt): with every
# dependency static (the archives above, glibc's libc.a and libstdc++.a) the dynamic loader does
# not run at all. It mapped and relocated libstdc++, libm, libgcc_s, libfmt and libprotobuf on
# every start: `tawsim --version` took 12.4 ms of CPU and 219 page faults dynamically linked,
# 6.9 ms / 146 with libstdc++ and protobuf static, 3.4 ms / 94 static (perf stat -r 40, 3x8-a100
# machine); the 24-GPU runs pay it once per process. Sanitizer runtimes need the dynamic loader.
option(TAWPIPE_STATIC_TAWSIM "link tawsim as a static executable (needs TAWPIPE_STATIC_DEPS)" ON)
set(TAWPIPE_LINK_TAWSIM_STATIC OFF)
if(TAWPIPE_STATIC_TAWSIM AND TAWPIPE_STATIC_DEPS AND NOT TAWPIPE_SANITIZE AND
   Protobuf_LIBRARY MATCHES "\\.a$" AND TAWPIPE_YAML_TARGET STREQUAL "tawpipe_yaml_static")
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_LINK_OPTIONS -static -pthread)
  check_cxx_source_compiles("#include <thread>
    int main() { std::thread t([] {}); t.join(); }" TAWPIPE_CAN_LINK_STATIC)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  set(TAWPIPE_LINK_TAWSIM_STATIC ${TAWPIPE_CAN_LINK_STATIC})
endif()

# Optional: the CUDA/NCCL backend (exec/cuda). Detected, never downloaded.
set(TAWPIPE_HAVE_CUDA OFF)
set(TAWPIPE_HAVE_CUDNN OFF)
if(NOT TAWPIPE_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib
               /usr/local/cuda/lib64)
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(TAWPIPE_HAVE_CUDA ON)
  elseif(TAWPIPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TAWPIPE_CUDA=ON but the CUDA Toolkit or NCCL was not found")
  endif()
endif()
# cuDNN 9 (optional inside the CUDA backend: fused attention through its graph API), found beside
# the toolkit like NCCL: header cudnn.h (which pulls cudnn_graph.h) and libcudnn. TAWPIPE_CUDNN=OFF
# builds the tiled attention kernel only (the code path of a machine without cuDNN); the
# compile definition TAWPIPE_HAVE_CUDNN=1 marks the other (exec/cuda/CMakeLists.txt).
if(TAWPIPE_HAVE_CUDA AND NOT TAWPIPE_CUDNN STREQUAL "OFF")
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib
               /usr/local/cuda/lib64)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    set(TAWPIPE_HAVE_CUDNN ON)
  elseif(TAWPIPE_CUDNN STREQUAL "ON")
    message(FATAL_ERROR "TAWPIPE_CUDNN=ON but cudnn.h or libcudnn was not found")
  endif()
endif()
