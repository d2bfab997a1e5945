# Warning and sanitizer flags shared by every tawpipe target (style.md, habit 2 and 3).
add_library(tawpipe_flags INTERFACE)
target_compile_options(tawpipe_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
                            -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual>)
if(TAWPIPE_WERROR)
  target_compile_options(tawpipe_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
# GCC 12 at -O3 reports -Wrestrict inside libstdc++'s std::string code (char_traits.h) where no
# overlap is possible: GCC bug 105329, fixed in GCC 13. Keep it a warning there, not an error.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(tawpipe_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-error=restrict>)
endif()
if(TAWPIPE_SANITIZE)
  target_compile_options(tawpipe_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=all
                              -fno-omit-frame-pointer>)
  target_link_options(tawpipe_flags INTERFACE -fsanitize=address,undefined)
endif()
target_include_directories(tawpipe_flags INTERFACE "${PROJECT_SOURCE_DIR}")
