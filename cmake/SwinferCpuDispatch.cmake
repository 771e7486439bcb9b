# The cpu backend's models compiled once per x86-64 level and chosen at run time (SWINFER_CPU_DISPATCH;
# runtime/src/cpu_dispatch.cpp holds the matching names and the cpuid requirements of each level).
#
# Each level compiles runtime/src/cpu_level.cpp with its own flags. Inline functions and template instances (ours,
# Eigen's, the standard library's) then exist once per level under the same names, and a plain link keeps any one of
# them for every caller: code compiled for AVX-512 could run on an SSE4.2 CPU. So each level's object is first linked
# alone (ld -r, section groups dissolved) and every symbol but its factory made local: each level calls only its own
# copies.
#
# name | flags | the precisions whose models the level compiles. A level above x86-64-v4 adds instructions only some
# precisions' kernels use (the bf16 pair dot product, VNNI's int8 dot product, AMX's tiles), so it compiles only
# those models; the others would be the x86-64-v4 code again (a third of the static tool's kernel bytes and build
# time), and the dispatch takes them from the highest level below that has them (runtime/src/cpu_dispatch.cpp).
set(SWINFER_CPU_LEVELS
  "x86-64-v2|-march=x86-64-v2|all"
  "x86-64-v3|-march=x86-64-v3|all"
  "x86-64-v4|-march=x86-64-v4|all"
  "avx512-bf16|-march=x86-64-v4 -mavx512bf16 -mavx512vnni|bf16,int8"
  "amx|-march=x86-64-v4 -mavx512bf16 -mavx512vnni -mamx-tile -mamx-bf16 -mamx-int8|bf16,int8")

# swinfer_add_cpu_levels(target sources): `sources` is the folder holding cpu_dispatch.cpp and cpu_level.cpp.
function(swinfer_add_cpu_levels target sources)
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    message(FATAL_ERROR "SWINFER_CPU_DISPATCH chooses among x86-64 levels; on ${CMAKE_SYSTEM_PROCESSOR} leave it off")
  endif()
  target_sources(${target} PRIVATE ${sources}/cpu_dispatch.cpp)
  foreach(entry IN LISTS SWINFER_CPU_LEVELS)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 name)
    list(GET parts 1 flags)
    list(GET parts 2 precisions)
    separate_arguments(flags UNIX_COMMAND "${flags}")
    string(REPLACE "-" "_" id "${name}")
    set(factory swinfer_cpu_level_${id})
    add_library(${factory} OBJECT ${sources}/cpu_level.cpp)
    # -fno-gnu-unique: statics of inline functions and inline variables become weak symbols, which objcopy can make
    # local, instead of GNU-unique ones, which it leaves global.
    target_compile_options(${factory} PRIVATE -O3 -mtune=generic -fno-gnu-unique ${flags})
    target_compile_definitions(${factory} PRIVATE SWINFER_CPU_LEVEL_FACTORY=${factory}
                                                  SWINFER_CPU_KERNEL_LEVEL="${name}"
                                                  SWINFER_CPU_LEVEL_PRECISIONS="${precisions}")
    target_link_libraries(${factory} PRIVATE swinfer::swinfer swinfer_warnings)
    # Position-independent as the target is (the Python module links the runtime into a shared object).
    get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
    if(pic)
      set_target_properties(${factory} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    endif()
    # The target's public headers (cpu_levels.hpp), without linking the target itself.
    target_include_directories(${factory} PRIVATE $<TARGET_PROPERTY:${target},INTERFACE_INCLUDE_DIRECTORIES>)
    # The dispatch (cpu_dispatch.cpp) reads each level's precision list from here, its one place.
    set_property(SOURCE ${sources}/cpu_dispatch.cpp APPEND PROPERTY COMPILE_DEFINITIONS
                 SWINFER_CPU_LEVEL_PRECISIONS_${id}="${precisions}")
    set(isolated ${CMAKE_CURRENT_BINARY_DIR}/${factory}.o)
    add_custom_command(OUTPUT ${isolated}
      COMMAND ${CMAKE_CXX_COMPILER} -r -nostdlib -Wl,--force-group-allocation -o ${isolated}
              $<TARGET_OBJECTS:${factory}>
      COMMAND ${CMAKE_OBJCOPY} --keep-global-symbol=${factory} ${isolated}
      DEPENDS $<TARGET_OBJECTS:${factory}>
      COMMENT "Isolating the ${name} cpu kernels (only ${factory} stays global)"
      COMMAND_EXPAND_LISTS VERBATIM)
    set_source_files_properties(${isolated} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${target} PRIVATE ${isolated})
  endforeach()
endfunction()
