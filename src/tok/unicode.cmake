# unicode.cmake — generates the Unicode class table of the tokenizer
# (src/tok/unicode.h) at build time: src/tok/gen_unicode.py reads Debian's
# Unicode Character Database (package unicode-data: UnicodeData.txt and
# PropList.txt; TT_UNICODE_DIR points elsewhere) and writes
# <build>/tok/tt_unicode_table.c, which joins the core library's sources
# (TT_CORE_SRC). Included from CMakeLists.txt after TT_CORE_SRC is collected.
set(TT_UNICODE_DIR "/usr/share/unicode" CACHE PATH "folder of UnicodeData.txt and PropList.txt (Debian: unicode-data)")
foreach(f UnicodeData.txt PropList.txt)
  if(NOT EXISTS "${TT_UNICODE_DIR}/${f}")
    message(FATAL_ERROR "${TT_UNICODE_DIR}/${f} not found: install the Unicode data files "
                        "(apt-get install unicode-data, or scripts/setup.sh) or set TT_UNICODE_DIR")
  endif()
endforeach()
find_program(TT_PYTHON3 NAMES python3 REQUIRED)
set(TT_UNICODE_C ${CMAKE_CURRENT_BINARY_DIR}/tok/tt_unicode_table.c)
set(TT_UNICODE_GEN ${CMAKE_CURRENT_SOURCE_DIR}/src/tok/gen_unicode.py)
add_custom_command(OUTPUT ${TT_UNICODE_C}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/tok
  COMMAND ${TT_PYTHON3} ${TT_UNICODE_GEN} ${TT_UNICODE_DIR}/UnicodeData.txt ${TT_UNICODE_DIR}/PropList.txt ${TT_UNICODE_C}
  DEPENDS ${TT_UNICODE_GEN} ${TT_UNICODE_DIR}/UnicodeData.txt ${TT_UNICODE_DIR}/PropList.txt
  COMMENT "Generating the Unicode class table (Unicode data in ${TT_UNICODE_DIR})")
# one owner of the rule; every library built from TT_CORE_SRC waits for it
add_custom_target(tt_unicode_table DEPENDS ${TT_UNICODE_C})
list(APPEND TT_CORE_SRC ${TT_UNICODE_C})
function(tt_unicode_table_deps)
  foreach(t ttcore_obj ttcore ttweb_st)
    if(TARGET ${t})
      add_dependencies(${t} tt_unicode_table)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER CALL tt_unicode_table_deps)
