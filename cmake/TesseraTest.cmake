# tessera_add_test(NAME <name> SOURCES <files...> [DEPS <targets...>])
# One GoogleTest binary registered with ctest. Tests find the repo and ../shared through
# compile definitions so they run from any working directory.
include(GoogleTest)
function(tessera_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${T_NAME} PRIVATE
    TESSERA_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    TESSERA_SHARED_DIR="${TESSERA_SHARED_DIR}"
    TESSERA_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
endfunction()
