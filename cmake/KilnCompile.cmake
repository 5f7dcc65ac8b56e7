# kiln_compile_model(): compiles an ONNX model into a Kiln artifact at build time.
#
#   kiln_compile_model(TARGET name MODEL file.onnx
#                      [TARGET_DESC host|native|cpu:znver4|cuda:sm_90]
#                      [SERVER host:port] [INPUT_SHAPES name=d0,d1,... ...]
#                      [OUTPUT path.kiln] [OPTIONS extra kiln compile flags ...])
#
# Adds a custom command whose output is the artifact (default ${CMAKE_CURRENT_BINARY_DIR}/
# name.kiln) and a target `name` that builds it (part of ALL). The command runs
# `kiln compile` locally, or through kilnd when SERVER is given (then `kiln` sends the model and
# fetches the artifact; kilnd's cache answers repeated builds). `kiln compile --depfile` writes
# a depfile naming the model and every file it reads (external data), so the build re-runs the
# compile only when the model, the options (the command line) or the compiler (the kiln
# executable) change. The target's KILN_ARTIFACT property holds the artifact's path:
#   $<TARGET_PROPERTY:name,KILN_ARTIFACT>
#
# The compiler is KILN_EXECUTABLE: set by find_package(KilnRuntime) to the package's bin/kiln,
# or inside Kiln's own build the `kiln` target; else `kiln` found on PATH. TARGET_DESC defaults
# to KILN_TARGET from the environment at configure time, else "host" (the build machine's CPU:
# use an explicit cpu:NAME when the artifact runs elsewhere).
include_guard(GLOBAL)

function(kiln_compile_model)
  cmake_parse_arguments(K "" "TARGET;MODEL;TARGET_DESC;SERVER;OUTPUT" "INPUT_SHAPES;OPTIONS"
                        ${ARGN})
  if(NOT K_TARGET OR NOT K_MODEL)
    message(FATAL_ERROR "kiln_compile_model: TARGET and MODEL are required")
  endif()
  if(K_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
            "kiln_compile_model(${K_TARGET}): unknown arguments: ${K_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(model "${K_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "kiln_compile_model(${K_TARGET}): MODEL ${model} does not exist")
  endif()
  if(NOT K_OUTPUT)
    set(K_OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${K_TARGET}.kiln")
  endif()
  get_filename_component(output "${K_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  if(NOT K_TARGET_DESC)
    if(DEFINED ENV{KILN_TARGET} AND NOT "$ENV{KILN_TARGET}" STREQUAL "")
      set(K_TARGET_DESC "$ENV{KILN_TARGET}")
    else()
      set(K_TARGET_DESC host)
    endif()
  endif()

  set(kiln_depends "")
  if(KILN_EXECUTABLE)
    set(kiln "${KILN_EXECUTABLE}")
    set(kiln_depends "${KILN_EXECUTABLE}")
  elseif(TARGET kiln)
    set(kiln $<TARGET_FILE:kiln>)
    set(kiln_depends kiln)
  else()
    find_program(KILN_EXECUTABLE kiln REQUIRED)
    set(kiln "${KILN_EXECUTABLE}")
    set(kiln_depends "${KILN_EXECUTABLE}")
  endif()

  set(args compile "${model}" -o "${output}" --target "${K_TARGET_DESC}"
      --depfile "${output}.d")
  if(K_SERVER)
    list(APPEND args --server "${K_SERVER}")
  else()
    list(APPEND args --local)
  endif()
  foreach(shape IN LISTS K_INPUT_SHAPES)
    list(APPEND args --input-shape "${shape}")
  endforeach()
  list(APPEND args ${K_OPTIONS})

  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${kiln}" ${args}
    DEPENDS "${model}" ${kiln_depends}
    DEPFILE "${output}.d"
    COMMENT "Compiling ${K_MODEL} with Kiln for ${K_TARGET_DESC}"
    VERBATIM)
  add_custom_target(${K_TARGET} ALL DEPENDS "${output}")
  set_target_properties(${K_TARGET} PROPERTIES KILN_ARTIFACT "${output}")
endfunction()
